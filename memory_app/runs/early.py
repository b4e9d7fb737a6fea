"""A history search's question given to the model while its request is still authenticated.

Most of a ``search_thread_messages`` call is the model embedding the question (about 20 ms on
one core); checking the run token before it is one statement and ~3 ms of Python. For a token
that has had a search answered in this process, the next tool call's question is handed to the
model (on a helper thread) *before* the token is checked, so the two overlap; the search then
takes the vector under way (``history.history_search_early``).

Nothing is read or answered early: the request is authenticated, throttled and checked exactly
as before, and a refused request only leaves a vector in the process's query cache. What the
early start may cost is bounded by construction, not by a list of bad requests: each answered
search grants its token one early start (a credit, held by the SHA-256 of the token, as the
run row holds it), which the next request of that token spends whatever becomes of it, and
only a search that is answered grants the next one. So a process never embeds more questions
early than it answered searches: a forged token gets none, a replaced or expired one at most the
one its last answered search granted, and a flood over the throttle one per search the throttle
let through.
"""

import json
import threading
from collections import OrderedDict

from django.core.exceptions import SuspiciousOperation
from django.http import RawPostDataException
from rest_framework import authentication
from rest_framework.request import Request

from memory_app.runs.leases import hash_run_token
from memory_app.threads import history

MAX_CREDITS = 4096  # tokens per process; the least recently granted go first
_credits: OrderedDict[str, int] = OrderedDict()  # SHA-256 of a run token -> its run's user id
_lock = threading.Lock()


def grant(*, token_hash: str, user_id: int) -> None:
    """A search of this token was answered: its next request may start early."""
    with _lock:
        _credits[token_hash] = user_id
        _credits.move_to_end(token_hash)
        while len(_credits) > MAX_CREDITS:
            _credits.popitem(last=False)


def _spend(token_hash: str) -> int | None:
    with _lock:
        return _credits.pop(token_hash, None)


def start(request: Request) -> bool:
    """Hand the question of this not yet authenticated ``search_thread_messages`` request to the
    model if its token has a credit (spent now); never raises, never refuses: whatever is wrong
    with the request is found, and answered, by the normal checks after this."""
    header = authentication.get_authorization_header(request).split()
    if len(header) != 2 or header[0].lower() != b"run" or len(header[1]) > 300:
        return False
    user_id = _spend(hash_run_token(header[1].decode("ascii", "replace")))
    if user_id is None:
        return False
    try:
        arguments = json.loads(request.body)
    except (ValueError, RecursionError, OSError, SuspiciousOperation, RawPostDataException):
        return False  # not JSON, too deep, unreadable or too large: the normal path says which
    if not isinstance(arguments, dict):
        return False
    return history.history_search_early(user_id=user_id, query=arguments.get("query"))
