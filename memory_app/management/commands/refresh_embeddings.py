"""Store a vector for every active chat/global item that lacks one for the current
provider/model. Covers all scopes; running it twice adds nothing the second time."""

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from memory_app.models import Memory, MemoryEmbedding, Status
from memory_app.scoped import pgvector
from memory_app.scoped.embeddings import get_provider
from memory_app.scoped.index import embed_memories, resync_all
from memory_app.scoped.scope import SCOPE_TYPES


def refresh_embeddings(*, batch_size: int = 256, provider=None) -> int:
    provider = provider or get_provider()
    done = 0
    last_id = ""
    while True:
        have = MemoryEmbedding.objects.filter(provider=provider.name, model=provider.model).values("memory_id")
        batch = list(
            Memory.objects.filter(scope_type__in=SCOPE_TYPES, status=Status.ACTIVE, pk__gt=last_id)
            .exclude(pk__in=have)
            .order_by("pk")
            .only("id", "content", "scope_type", "scope_id", "status")[:batch_size]
        )
        if not batch:
            if pgvector.enabled():
                pgvector.fill_missing(provider=provider)
            return done
        last_id = batch[-1].pk
        # No transaction around the provider call: it may be remote. embed_memories then
        # stores the vectors under the items' row locks with the scope/active flag they have
        # by then (moved or archived meanwhile), skips forgotten ones and keeps a vector
        # stored concurrently (its scope copy re-synced too).
        done += embed_memories(batch, provider=provider)


class Command(BaseCommand):
    help = "Embed every active chat/global item that has no vector for the configured provider."

    def add_arguments(self, parser):
        parser.add_argument("--batch-size", type=int, default=256)
        parser.add_argument(
            "--resync-index",
            action="store_true",
            help="first re-copy every vector's scope from its item and rebuild the SQLite FTS table",
        )

    def handle(self, *args, batch_size, resync_index, **options):
        if not 1 <= batch_size <= 5000:
            raise CommandError("--batch-size must be between 1 and 5000")
        if resync_index:
            with transaction.atomic():
                fixed = resync_all()
            self.stdout.write(f"resynced: {fixed['vectors_fixed']} vector(s) fixed, {fixed['fts_rows']} FTS row(s)")
        count = refresh_embeddings(batch_size=batch_size)
        self.stdout.write(f"embedded {count} item(s)")
