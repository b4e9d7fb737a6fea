"""One dreaming pass per session: consolidate recent history into scoped items.

``python manage.py dream`` (every recently active session) or ``--session KEY`` (repeatable).
The worker can call ``memory_app.scoped.consolidation.dream_session`` the same way.
"""

from django.core.management.base import BaseCommand, CommandError

from config.errors import DomainError
from memory_app.scoped.consolidation import dream_session, sessions_to_dream, system_actor


class Command(BaseCommand):
    help = "Consolidate each session's recent history into chat/global items (scope by kind)."

    def add_arguments(self, parser):
        parser.add_argument("--session", action="append", default=[], help="session key (repeatable)")
        parser.add_argument("--limit", type=int, default=100, help="at most this many sessions")

    def handle(self, *args, session, limit, **options):
        if limit < 1:
            raise CommandError("--limit must be positive")
        actor = system_actor()
        sessions = session or sessions_to_dream(limit=limit)
        failed = 0
        for key in sessions[:limit]:
            try:
                report = dream_session(actor=actor, session_id=key)
            except DomainError as exc:
                failed += 1
                self.stderr.write(f"{key}: {exc.message}")
                continue
            counts = " ".join(f"{name}={count}" for name, count in sorted(report.counts().items()))
            self.stdout.write(f"{key}: {counts}")
        if failed:
            raise CommandError(f"{failed} session(s) failed")
