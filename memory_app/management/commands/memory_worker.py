"""``python manage.py memory_worker``: the auto-memory extraction loop (docs/auto-memory.md)."""

import logging
import os
import socket
import time

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, close_old_connections

from config.errors import DomainError, ServiceUnavailable
from memory_app.automemory.extraction import get_extractor
from memory_app.automemory.worker import SWEEP_BATCH, round_run
from memory_app.scoped.consolidation import dream_round
from memory_app.search.embedder import embed_pending

logger = logging.getLogger(__name__)


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
            help="also embed up to 512 indexed documents that lack a vector after each round",
        )

    def handle(self, *args, once, interval, batch, worker_id, dream, dream_limit, embeddings, **options):
        if interval <= 0 or not 1 <= batch <= 1000:
            raise CommandError("--interval must be > 0 and --batch between 1 and 1000.")
        worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}"
        extractor = get_extractor()
        while True:
            try:
                results = round_run(worker_id=worker_id, limit=batch, extractor=extractor)
            except DatabaseError as exc:
                if once:
                    raise
                # The database went away: keep looping; claims that were taken expire.
                logger.warning("auto-memory round failed", extra={"error_class": type(exc).__name__})
                close_old_connections()
                time.sleep(interval)
                continue
            counts: dict[str, int] = {}
            for result in results:
                counts[result.outcome] = counts.get(result.outcome, 0) + 1
            summary = ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "nothing to do"
            self.stdout.write(f"auto-memory round: {len(results)} runs ({summary})")
            if dream:
                dreamed = dream_round(limit=dream_limit)
                failed = sum(isinstance(r, DomainError) for r in dreamed.values())
                self.stdout.write(f"dreaming pass: {len(dreamed)} sessions ({failed} failed)")
            if embeddings:
                try:
                    self.stdout.write(f"embeddings: {embed_pending(limit=512)} document(s) embedded")
                except ServiceUnavailable as exc:
                    # A remote embedding service being down must not stop extraction rounds.
                    logger.warning("embedding refresh failed", extra={"error_class": type(exc).__name__})
                    self.stdout.write("embeddings: provider unavailable, retrying next round")
            if once:
                return
            time.sleep(interval)
