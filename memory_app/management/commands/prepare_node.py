"""``python manage.py prepare_node``: what a node does before it serves (``make serve`` runs it
at every start; docs/deploy.md), in one process: apply the migrations and create the cache
table, collect the static files, and print what ``check --deploy`` finds.

On PostgreSQL the database step runs under a session advisory lock, so nodes that start
together apply each migration once: the first applies them, the others wait and then find
nothing to do (two ``migrate`` at once would both try to create the same tables). SQLite is
one file on one host and needs no lock.
"""

import hashlib
import logging

from django.core import checks
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from memory_app.search import vectorstore
from memory_app.search.embeddings import get_provider

logger = logging.getLogger(__name__)

LOCK_KEY = int.from_bytes(hashlib.sha256(b"memory-service:prepare-node").digest()[:8], "big", signed=True)


class Command(BaseCommand):
    help = "Migrate and create the cache table (serialized across nodes), collect static files, check --deploy."

    def add_arguments(self, parser):
        parser.add_argument("--skip-database", action="store_true", help="leave the database to another step")

    def handle(self, *args, skip_database, verbosity, **options):
        if not skip_database:
            self._database(verbosity)
        call_command("collectstatic", interactive=False, verbosity=verbosity)
        self._check()

    @staticmethod
    def _check() -> None:
        """``check --deploy`` as log lines (JSON ones under ``LOG_FORMAT=json``): warnings are
        said (e.g. no HTTPS on a test box), errors stop the start."""
        serious = 0
        for message in checks.run_checks(include_deployment_checks=True):
            if message.is_silenced():
                continue
            serious += message.is_serious()
            log = logger.error if message.is_serious() else logger.warning
            log("%s: %s", message.id, message.msg, extra={"check_id": message.id, "hint": message.hint or ""})
        if serious:
            raise CommandError(f"{serious} system check error(s); see above.")

    @staticmethod
    def _database(verbosity: int) -> None:
        locked = connection.vendor == "postgresql"
        if locked:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_lock(%s)", [LOCK_KEY])
        try:
            call_command("migrate", interactive=False, verbosity=verbosity)
            call_command("createcachetable", verbosity=verbosity)
            # pgvector where the server has it (installed after the migrations too), and the
            # index of the configured embedding model (after a change of model: empty, so
            # quick; it grows as the vectors are filled in).
            provider = get_provider()
            vectorstore.install(provider.model, provider.dim)
        finally:
            if locked:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])
        # Where the operator created pg_prewarm: the search tables and the graph into memory,
        # asynchronously (the first searches after a restart would read them from disk).
        prewarmed = vectorstore.prewarm(provider.model, provider.dim)
        if prewarmed:
            logger.info("search relations prefetched", extra={"relations": len(prewarmed)})
