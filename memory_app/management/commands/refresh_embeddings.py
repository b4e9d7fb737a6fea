"""Store a vector for every active chat/global item that lacks one for the current
provider/model. Covers all scopes; running it twice adds nothing the second time."""

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from memory_app.memories.derived import embeddings_refresh, resync_all


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
        count = embeddings_refresh(batch_size=batch_size)
        self.stdout.write(f"embedded {count} item(s)")
