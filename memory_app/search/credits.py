"""Credits for starting a search's embedding before its request is authenticated.

Most of a search that ranks by meaning is the model embedding the question (about 20 ms on one
core). Authenticating the request, checking it and reading the words' postings come first and
take a few milliseconds more; a request whose token has had a search answered in this process
may hand its question to the model (on a helper thread) before any of that, so the two overlap
(``memory_app.runs.early``, ``memory_app.memories.early``).

Nothing is read or answered early: the request is authenticated, throttled and checked exactly
as before, and a refused request only leaves a vector in the process's query cache. What an
early start may cost is bounded by construction, not by a list of bad requests: each answered
search grants its token one early start (a credit, held by the SHA-256 of the token, as the
database holds the token), which the next request of that token spends whatever becomes of it,
and only an answered search grants the next one. So a process never embeds more questions early
than it answered searches: a forged token gets none, a revoked, replaced or expired one at most
the one its last answered search granted, and a flood over the throttle one per search the
throttle let through.
"""

import threading
from collections import OrderedDict
from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")

MAX_CREDITS = 4096  # tokens per process and kind of search; the least recently granted go first


class EarlyCredits(Generic[T]):
    """One kind of search's credits: the SHA-256 of a token → what its next early start needs
    to know (a user's id, or ``True``), at most ``limit`` tokens."""

    def __init__(self, limit: int = MAX_CREDITS) -> None:
        self.limit = limit
        self._held: OrderedDict[str, T] = OrderedDict()
        self._lock = threading.Lock()

    def grant(self, token_hash: str, value: T) -> None:
        """A search of this token was answered: its next request may start early."""
        with self._lock:
            self._held[token_hash] = value
            self._held.move_to_end(token_hash)
            while len(self._held) > self.limit:
                self._held.popitem(last=False)

    def spend(self, token_hash: str) -> T | None:
        """The token's credit, gone from now on; None when it has none."""
        with self._lock:
            return self._held.pop(token_hash, None)

    def clear(self) -> None:
        with self._lock:
            self._held.clear()

    def __contains__(self, token_hash: object) -> bool:
        return token_hash in self._held

    def __iter__(self) -> Iterator[str]:
        """The tokens' hashes, the least recently granted first (a copy)."""
        with self._lock:
            return iter(list(self._held))

    def __len__(self) -> int:
        return len(self._held)
