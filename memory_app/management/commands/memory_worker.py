"""``python manage.py memory_worker``: the auto-memory extraction loop (docs/auto-memory.md), and
between its rounds the background jobs (docs/deploy.md), polled every ``--job-poll`` seconds,
with a heartbeat row that ``/readyz`` reads. SIGTERM or SIGINT stop it after the current step.
"""

import contextlib
import logging
import os
import signal
import socket
import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, OutputWrapper
from django.db import DatabaseError, close_old_connections
from django.utils import timezone

from config.errors import DomainError, ServiceUnavailable
from identity_app.services import invitations_expire
from memory_app.automemory.worker.claim import SWEEP_BATCH
from memory_app.automemory.worker.rounds import round_run
from memory_app.distill.extraction import get_extractor
from memory_app.memories.services import memories_purge_expired
from memory_app.ops.services import jobs_prune, jobs_run_pending, worker_heartbeat, worker_heartbeat_end
from memory_app.reads.recorder import flush as reads_flush
from memory_app.reads.services import reads_purge
from memory_app.scoped.consolidation import dream_round
from memory_app.scoped.services import chat_forget_undos_purge
from memory_app.search.embedder import embed_pending, embed_stale

logger = logging.getLogger(__name__)
HEARTBEAT_SECONDS = 10  # far below WORKER_HEARTBEAT_MAX_AGE


class _LogLines(OutputWrapper):
    """``self.stdout`` under ``LOG_FORMAT=json``: each summary line becomes a log record."""

    def __init__(self) -> None:
        super().__init__(sys.stdout)

    # The stubs make OutputWrapper a TextIOBase, whose write returns int; at run time it is not
    # one (only registered), and OutputWrapper.write itself returns None (its stub ignores this too).
    def write(self, msg: str = "", style_func=None, ending=None) -> None:  # type: ignore[override]
        for line in msg.splitlines():
            if line.strip():
                logger.info(line)


class Command(BaseCommand):
    help = "Extract project memories from finished runs; loops until stopped (--once: one round)."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="run one round and exit")
        parser.add_argument("--interval", type=float, default=30.0, help="seconds between rounds (default 30)")
        parser.add_argument("--batch", type=int, default=SWEEP_BATCH, help="runs per round (default 50)")
        parser.add_argument("--worker-id", default="", help="name of this worker in claims")
        parser.add_argument(
            "--dream", action="store_true", help="also run a dreaming pass over recent sessions after each round"
        )
        parser.add_argument("--dream-limit", type=int, default=100, help="sessions per dreaming pass (default 100)")
        parser.add_argument(
            "--embeddings",
            action="store_true",
            help="also embed up to 512 indexed documents that lack a vector after each round (then up to 256 whose vector an older recipe made)",
        )
        parser.add_argument(
            "--job-poll", type=float, default=1.0, help="seconds between looks for background jobs (default 1)"
        )

    def handle(self, *args, once, interval, batch, worker_id, dream, dream_limit, embeddings, job_poll, **options):
        if interval <= 0 or not 1 <= batch <= 1000 or not 0 < job_poll <= 60:
            raise CommandError("--interval must be > 0, --batch between 1 and 1000, --job-poll in (0, 60].")
        worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}"
        extractor = get_extractor()
        self._start(worker_id=worker_id, job_poll=job_poll, once=once)
        while True:
            try:
                results = round_run(worker_id=worker_id, limit=batch, extractor=extractor)
            except DatabaseError as exc:
                if once:
                    raise
                # The database went away: keep looping; claims that were taken expire.
                logger.warning("auto-memory round failed", extra={"error_class": type(exc).__name__})
                close_old_connections()
                self._wait(interval)
                continue
            counts: dict[str, int] = {}
            for result in results:
                counts[result.outcome] = counts.get(result.outcome, 0) + 1
            summary = ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "nothing to do"
            self.stdout.write(f"auto-memory round: {len(results)} runs ({summary})")
            self._purge_expired()
            try:
                expired = invitations_expire()
            except DatabaseError as exc:
                if once:
                    raise
                logger.warning("invitation expiry failed", extra={"error_class": type(exc).__name__})
                expired = 0
            if expired:
                self.stdout.write(f"invitations: {expired} expired invitation(s) deleted")
            if dream:
                dreamed = dream_round(limit=dream_limit)
                failed = sum(isinstance(r, DomainError) for r in dreamed.values())
                self.stdout.write(f"dreaming pass: {len(dreamed)} sessions ({failed} failed)")
            if embeddings:
                try:
                    embedded = embed_pending(limit=512)
                    self.stdout.write(f"embeddings: {embedded} document(s) embedded")
                    # Vectors of an older recipe serve until made again, once nothing waits for one.
                    remade = embed_stale(limit=256) if embedded < 512 else 0
                    if remade:
                        self.stdout.write(f"embeddings: {remade} document(s) embedded again (newer recipe)")
                except ServiceUnavailable as exc:
                    # A remote embedding service being down must not stop extraction rounds.
                    logger.warning("embedding refresh failed", extra={"error_class": type(exc).__name__})
                    self.stdout.write("embeddings: provider unavailable, retrying next round")
            if once:
                self._jobs()
                return
            self._wait(interval)

    def _purge_expired(self) -> None:
        """Expired memories past their grace period (``MEMORY_EXPIRED_GRACE_DAYS``) go for good,
        a bounded batch per round; they left every read path when they expired."""
        try:
            purged = memories_purge_expired()
        except DatabaseError as exc:
            logger.warning("expired-memory purge failed", extra={"error_class": type(exc).__name__})
            close_old_connections()
            return
        if purged:
            self.stdout.write(f"expired memories purged: {len(purged)}")
        # A forgotten chat's undo time is over: its kept rows go for good (docs/home.md, "Undo").
        try:
            undone = chat_forget_undos_purge()
        except DatabaseError as exc:
            logger.warning("forgotten-chat undo purge failed", extra={"error_class": type(exc).__name__})
            close_old_connections()
            return
        if undone:
            self.stdout.write(f"forgotten chats past their undo time: {undone}")
        # Who read what is kept MEMORY_READS_RETENTION_DAYS (docs/home.md), a bounded batch per round.
        try:
            reads_flush()
            old_reads = reads_purge()
        except DatabaseError as exc:
            logger.warning("memory-read purge failed", extra={"error_class": type(exc).__name__})
            close_old_connections()
            return
        if old_reads:
            self.stdout.write(f"memory reads purged: {old_reads}")

    # --- jobs and heartbeat between rounds ------------------------------------------------
    def _start(self, *, worker_id: str, job_poll: float, once: bool) -> None:
        self.worker_id, self.job_poll, self.stopping = worker_id, job_poll, False
        self.started_at, self.last_beat = timezone.now(), float("-inf")
        if settings.LOG_FORMAT == "json":
            self.stdout = _LogLines()
        if not once:
            for signum in (signal.SIGTERM, signal.SIGINT):
                signal.signal(signum, self._stop_soon)
        self._beat()

    def _stop_soon(self, signum, frame) -> None:
        self.stopping = True

    def _beat(self) -> None:
        """At most every HEARTBEAT_SECONDS: a write per poll would take SQLite's write lock
        every second for nothing."""
        if time.monotonic() - self.last_beat < HEARTBEAT_SECONDS:
            return
        try:
            worker_heartbeat(worker_id=self.worker_id, started_at=self.started_at)
            self.last_beat = time.monotonic()
        except DatabaseError as exc:
            logger.warning("worker heartbeat failed", extra={"error_class": type(exc).__name__})
            close_old_connections()

    def _jobs(self) -> None:
        try:
            jobs_run_pending(worker_id=self.worker_id)
        except DatabaseError as exc:
            logger.warning("background jobs failed", extra={"error_class": type(exc).__name__})
            close_old_connections()

    def _wait(self, seconds: float) -> None:
        """Until the next round: run queued jobs and beat every ``job_poll`` seconds."""
        deadline = time.monotonic() + seconds
        try:
            jobs_prune()
        except DatabaseError:
            close_old_connections()
        while True:
            self._jobs()
            self._beat()
            if self.stopping:
                with contextlib.suppress(DatabaseError):  # else its heartbeat ages out
                    worker_heartbeat_end(worker_id=self.worker_id)
                self.stdout.write("memory_worker stopped")
                raise SystemExit(0)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            time.sleep(min(self.job_poll, remaining))
