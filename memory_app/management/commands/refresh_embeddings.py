"""Embed every indexed document (memories of all tiers, history messages) that has no vector
of the configured model: after a model change, a restore, or with the background thread off;
then, again, every document whose vector an older recipe of its source made (a release that
changes what a source embeds: those vectors serve until then, and the worker replaces them a
batch a round).
Batches are committed one by one, so an interrupted run resumes where it stopped; running it
twice embeds nothing the second time. Where PostgreSQL offers pgvector, it then installs it if
needed (``vectorstore.install``), fills the ``vec`` column of rows that lack it and builds the
configured model's HNSW index if it is missing, or again, beside the old one, if an earlier
release built it with other settings."""

import sys
import time

from django.core.management.base import BaseCommand, CommandError

from memory_app.memories.derived import reindex_all as reindex_memories
from memory_app.search import vectorstore
from memory_app.search.embedder import embed_pending, embed_stale, pending_count, stale_count
from memory_app.search.embeddings import get_provider
from memory_app.threads.indexing import reindex_all as reindex_messages


class Command(BaseCommand):
    help = "Embed every indexed document that has no vector of the configured embedding model, then those an older recipe made."

    def add_arguments(self, parser):
        parser.add_argument("--batch-size", type=int, default=32)
        parser.add_argument(
            "--reindex",
            "--resync-index",
            action="store_true",
            dest="reindex",
            help="first rebuild the word index from the memory and message rows (after a restore or bulk SQL)",
        )
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args, batch_size, reindex, no_progress, **options):
        if not 1 <= batch_size <= 5000:
            raise CommandError("--batch-size must be between 1 and 5000")
        if reindex:
            memories, messages = reindex_memories(), reindex_messages()
            self.stdout.write(f"reindexed: {memories} memory row(s), {messages} message row(s)")
        provider = get_provider()
        total = pending_count(provider=provider) + stale_count(provider=provider)
        started = time.monotonic()
        show = not no_progress and total > 0

        def progress(done: int) -> None:
            if show:
                width = 30
                filled = int(width * min(done / total, 1))
                rate = done / max(time.monotonic() - started, 1e-6)
                sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} ({rate:.1f}/s)")
                sys.stderr.flush()

        count = embed_pending(provider=provider, batch_size=batch_size, progress=progress)
        remade = embed_stale(provider=provider, batch_size=batch_size, progress=lambda done: progress(count + done))
        if show:
            sys.stderr.write("\n")
        self.stdout.write(f"embedded {count} document(s) with {provider.model}")
        if remade:
            self.stdout.write(f"embedded again {remade} document(s) made by an older recipe")
        if vectorstore.install(provider.model, provider.dim, rebuild=True):
            ready = vectorstore.index_ready(provider.model, provider.dim)
            self.stdout.write(f"pgvector: column filled, index {'ready' if ready else 'missing'}")
