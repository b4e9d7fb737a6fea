"""Recording reads without slowing the request that makes them (docs/home.md, "Who read this?").

``record`` only appends tuples to a per-process buffer under a lock (a few microseconds); the
rows are written by ``flush`` in one ``bulk_create``: after each HTTP request by the process's
writer thread (``request_finished``, sent once the response has been handed to the server, wakes
it; ``MEMORY_READS_IN_BACKGROUND``), after each MCP call and at each round of the worker. The
request's thread never writes them: with keep-alive, the server reads the client's next request
on that thread only once this one is finished. The buffer is bounded
(``MEMORY_READS_BUFFER`` rows): when it is full, new rows are dropped and counted
(``memsvc_memory_reads_total{result="dropped_full"}``); a failed write drops its rows and
counts them (``dropped_error``). Neither ever fails nor blocks the request.

Who read: the adapters that know the caller's API token (the MCP session) say so with
``reading_as``; the services that send memory text pass the run, its lease generation and the
user whose memory it is.
"""

import atexit
import contextlib
import contextvars
import logging
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.utils import timezone

from config.metrics import MEMORY_READS
from config.threads import WokenThread
from memory_app.reads.models import MemoryRead

logger = logging.getLogger(__name__)

FLUSH_BATCH = 1000
WRITE_DELAY = 0.05  # seconds the writer waits once woken: the reads of requests close together go in one INSERT
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


def flush(**_signal_kwargs: Any) -> int:
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
        except Exception as exc:
            # Whatever failed (a lost connection is an InterfaceError, not a DatabaseError), the
            # rows are out of the buffer: counted as dropped here.
            MEMORY_READS.labels(result="dropped_error").inc(len(batch))
            logger.warning("memory reads not written", extra={"rows": len(batch), "error_class": type(exc).__name__})
            continue
        written += len(batch)
    if written:
        MEMORY_READS.labels(result="written").inc(written)
    return written


class _Writer(WokenThread):
    """One daemon thread per process that writes the buffer a moment after it is woken. Its
    database connection lives as a request thread's does (``CONN_MAX_AGE``) and is closed after
    ``IDLE_CLOSE`` seconds without a wake."""

    thread_name = "memory-reads-writer"
    IDLE_CLOSE = 5.0

    def __init__(self) -> None:
        super().__init__()
        self._idle = threading.Event()
        self._idle.set()
        self._release = threading.Event()

    def _woken(self) -> None:
        self._idle.clear()

    def wait_idle(self, timeout: float) -> bool:
        """True once everything the writer was woken for is written."""
        return self._idle.wait(timeout)

    def close_connection(self, timeout: float) -> bool:
        """Write what waits, then close the thread's database connection (a test database can
        only be dropped with no connection to it)."""
        self._release.set()
        self.wake()
        return self.wait_idle(timeout)

    def _loop(self) -> None:
        while True:
            if not self._wake.wait(self.IDLE_CLOSE):
                connection.close()
                continue
            time.sleep(WRITE_DELAY)
            with self._lock:
                self._wake.clear()
            try:
                flush()
            except Exception:  # flush counts and logs a failed write; anything else must not end the thread
                logger.exception("memory reads writer failed")
            finally:
                if self._release.is_set():
                    self._release.clear()
                    connection.close()
                else:
                    close_old_connections()
            with self._lock:
                if not self._wake.is_set():
                    self._idle.set()


writer = _Writer()


def flush_after_request(**_signal_kwargs: Any) -> None:
    """``request_finished``: the writer thread writes the request's reads (or, with
    ``MEMORY_READS_IN_BACKGROUND`` off, this thread does, now)."""
    if not getattr(settings, "MEMORY_READS_IN_BACKGROUND", True):
        flush()
    elif pending():
        writer.wake()


EXIT_WAIT = 5.0  # seconds an exiting process waits for the writer's batch


def flush_at_exit() -> int:
    """A process that exits normally (a server worker recycled after its requests, a command)
    writes what is still waiting. The writer thread first finishes the batch it holds: those
    rows are no longer in the buffer, and a daemon thread is stopped, its transaction never
    committed, once the exit handlers have run."""
    writer.wait_idle(EXIT_WAIT)
    return flush()


atexit.register(flush_at_exit)


def discard() -> int:
    """Drop every buffered row unwritten (tests). Nothing forks a process that holds rows: the
    server's master loads no Django code (no preload), and a worker starts with an empty buffer."""
    with _lock:
        count = len(_buffer)
        _buffer.clear()
    return count
