"""Recording reads without slowing the request that makes them (docs/home.md, "Who read this?").

``record`` only appends tuples to a per-process buffer under a lock (a few microseconds); the
rows are written by ``flush`` in one ``bulk_create``: at the end of each HTTP request
(``request_finished``, sent once the response has been handed to the server), after each MCP
call and at each round of the worker. The buffer is bounded
(``MEMORY_READS_BUFFER`` rows): when it is full, new rows are dropped and counted
(``memsvc_memory_reads_total{result="dropped_full"}``); a failed write drops its rows and
counts them (``dropped_error``). Neither ever fails nor blocks the request.

Who read: the adapters that know the caller's API token (the MCP session) say so with
``reading_as``; the services that send memory text pass the run, its lease generation and the
user whose memory it is.
"""

import contextlib
import contextvars
import logging
import threading
from collections import deque
from collections.abc import Iterable, Iterator

from django.conf import settings
from django.db import DatabaseError, transaction
from django.utils import timezone

from config.metrics import MEMORY_READS
from memory_app.reads.models import MemoryRead

logger = logging.getLogger(__name__)

FLUSH_BATCH = 1000
_FIELDS = ("at", "item_kind", "item_ref", "path", "user_id", "principal_id", "token_id", "run_ref", "run_generation")

_buffer: deque[tuple] = deque()
_lock = threading.Lock()
_reader: contextvars.ContextVar[tuple[int | None, int | None] | None] = contextvars.ContextVar(
    "memory_reader", default=None
)


@contextlib.contextmanager
def reading_as(*, principal_id: int | None, token_id: int | None) -> Iterator[None]:
    """Reads recorded inside the block are the ones of this principal and API token."""
    reset = _reader.set((principal_id, token_id))
    try:
        yield
    finally:
        _reader.reset(reset)


def record(
    *,
    item_kind: str,
    refs: Iterable[str],
    path: str,
    user_id: int | None,
    run_id: str = "",
    run_generation: int | None = None,
    principal_id: int | None = None,
    token_id: int | None = None,
) -> None:
    """Remember that the text of ``refs`` went out through ``path``. Never raises."""
    try:
        reader = _reader.get()
        if reader is not None:
            principal_id, token_id = reader
        at = timezone.now()
        rows = [
            (at, item_kind, str(ref)[:64], path, user_id, principal_id, token_id, (run_id or "")[:40], run_generation)
            for ref in dict.fromkeys(refs)
        ]
        if not rows:
            return
        with _lock:
            room = max(settings.MEMORY_READS_BUFFER - len(_buffer), 0)
            kept = rows[:room]
            _buffer.extend(kept)
        if len(kept) < len(rows):
            MEMORY_READS.labels(result="dropped_full").inc(len(rows) - len(kept))
    except Exception:  # recording must never fail the read it describes; counted and logged
        MEMORY_READS.labels(result="dropped_error").inc()
        logger.exception("memory read could not be buffered")


def pending() -> int:
    with _lock:
        return len(_buffer)


def flush(**_signal_kwargs) -> int:
    """Write every buffered row (in batches of ``FLUSH_BATCH``); returns how many were written.
    A failed write drops its rows (counted, logged): reads are an audit aid, not a ledger the
    request waits for. Inside a caller's transaction the write is a savepoint of its own."""
    with _lock:
        rows = list(_buffer)
        _buffer.clear()
    if not rows:
        return 0
    written = 0
    for start in range(0, len(rows), FLUSH_BATCH):
        batch = rows[start : start + FLUSH_BATCH]
        try:
            with transaction.atomic():
                MemoryRead.objects.bulk_create([MemoryRead(**dict(zip(_FIELDS, row, strict=True))) for row in batch])
        except DatabaseError as exc:
            MEMORY_READS.labels(result="dropped_error").inc(len(batch))
            logger.warning("memory reads not written", extra={"rows": len(batch), "error_class": type(exc).__name__})
            continue
        written += len(batch)
    if written:
        MEMORY_READS.labels(result="written").inc(written)
    return written


def discard() -> int:
    """Drop every buffered row unwritten (tests, and a process that forks)."""
    with _lock:
        count = len(_buffer)
        _buffer.clear()
    return count
