"""One dreaming pass per session: consolidate recent history into scoped items.

``python manage.py dream`` (every recently active session) or ``--session KEY`` (repeatable).
``python manage.py memory_worker --dream`` runs the same pass after each worker round.
"""

from django.core.management.base import BaseCommand, CommandError

from config.errors import DomainError
from memory_app.scoped.consolidation import dream_round


class Command(BaseCommand):
    help = "Consolidate each session's recent history into chat/global items (scope by kind)."

    def add_arguments(self, parser):
        parser.add_argument("--session", action="append", default=[], help="session key (repeatable)")
        parser.add_argument("--limit", type=int, default=100, help="at most this many sessions")

    def handle(self, *args, session, limit, **options):
        if limit < 1:
            raise CommandError("--limit must be positive")
        failed = 0
        for key, report in dream_round(sessions=session, limit=limit).items():
            if isinstance(report, DomainError):
                failed += 1
                self.stderr.write(f"{key}: {report.message}")
                continue
            counts = " ".join(f"{name}={count}" for name, count in sorted(report.counts().items()))
            self.stdout.write(f"{key}: {counts}")
        if failed:
            raise CommandError(f"{failed} session(s) failed")
