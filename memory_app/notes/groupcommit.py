"""Group commit: one publish for the writes that queued up behind it (docs/runs.md, "Group commit").

Writes to one key (a user's notes file) are applied one batch at a time per process. A caller
queues its write; when no batch of that key is in progress, it becomes the leader and applies
every queued write (its own among them) in one call of ``apply_batch``, in queue order;
otherwise it waits. Each caller gets its own outcome back: a value, or the error of its write.
Nobody is answered before ``apply_batch`` has returned, i.e. before the publish that contains
their write is durable. When ``apply_batch`` itself fails, every write of the batch fails with
a copy of that error: nothing of the batch was published.

Across processes, ``apply_batch`` takes the per-user lock, so batches of different processes
serialize as single writes did.
"""

import copy
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any


@dataclass(eq=False)
class _Ticket:
    payload: object
    done: bool = False
    value: object = None
    error: BaseException | None = None


class _Queue:
    __slots__ = ("busy", "pending")

    def __init__(self) -> None:
        self.busy = False
        self.pending: list[_Ticket] = []


class GroupCommitter:
    """``apply_batch(key, payloads)`` returns one outcome per payload, in order: a value, or an
    exception instance for a write refused on its own."""

    def __init__(self, apply_batch: Callable[[Any, list[Any]], list[Any]], *, max_batch: int = 64) -> None:
        self._apply_batch = apply_batch
        self.max_batch = max_batch
        self._mutex = threading.Lock()
        self._changed = threading.Condition(self._mutex)
        self._queues: dict[Hashable, _Queue] = {}

    def submit(self, key: Hashable, payload: object) -> object:
        ticket = _Ticket(payload)
        with self._mutex:
            queue = self._queues.get(key)
            if queue is None:
                queue = self._queues[key] = _Queue()
            queue.pending.append(ticket)
        while True:
            with self._mutex:
                while queue.busy and not ticket.done:
                    self._changed.wait()
                if ticket.done:
                    break
                queue.busy = True
                batch = queue.pending[: self.max_batch]
                del queue.pending[: self.max_batch]
            self._lead(key, queue, batch)
        if ticket.error is not None:
            raise ticket.error
        return ticket.value

    def _lead(self, key: Hashable, queue: _Queue, batch: list[_Ticket]) -> None:
        failure: BaseException | None = None
        outcomes: list[Any] = []
        try:
            outcomes = list(self._apply_batch(key, [ticket.payload for ticket in batch]))
            if len(outcomes) != len(batch):
                raise RuntimeError("apply_batch returned a wrong number of outcomes")
        except BaseException as exc:  # handed to every waiter of the batch, then re-raised by them
            failure = exc
        finally:
            with self._mutex:
                for index, ticket in enumerate(batch):
                    if failure is not None:
                        # Each waiter raises its own copy: one exception object must not be
                        # raised (and get its traceback rewritten) in several threads at once.
                        ticket.error = failure if index == 0 else _copy_error(failure)
                    elif isinstance(outcomes[index], BaseException):
                        ticket.error = outcomes[index]
                    else:
                        ticket.value = outcomes[index]
                    ticket.done = True
                queue.busy = False
                if not queue.pending and self._queues.get(key) is queue:
                    del self._queues[key]
                self._changed.notify_all()


def _copy_error(error: BaseException) -> BaseException:
    """A copy of ``error`` for another waiter; one that cannot be copied becomes a plain error
    with its message (the queue must be released whatever happens)."""
    try:
        return copy.copy(error)
    except Exception:
        return RuntimeError(str(error))
