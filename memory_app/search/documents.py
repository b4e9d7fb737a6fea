"""What owners call to keep their rows searchable, inside the transaction that writes them.

    documents.sync("memory", [Row(ref=m.pk, scope="user:7", text=m.content), ...])
    documents.remove("message", [str(message.pk)])

A row with ``scope=None`` is removed from the index (archived, superseded, moved out of the
searchable tiers). New documents get their vector at once from an in-process provider, else
after commit in the background (``embedder``).
"""

from collections.abc import Iterable

from memory_app.search import embedder, index
from memory_app.search.embeddings import get_provider
from memory_app.search.index import Row
from memory_app.search.models import SearchScope

__all__ = ["Row", "drop_scopes", "remove", "sync"]


def sync(source: str, rows: Iterable[Row]) -> None:
    created = index.documents_sync(source, rows)
    if not created:
        return
    provider = get_provider()
    if provider.in_process:
        embedder.embed_now(source, created, provider=provider)
    else:
        embedder.schedule()


def remove(source: str, refs: Iterable[str]) -> None:
    index.documents_sync(source, [Row(ref=ref, scope=None) for ref in refs])


def drop_scopes(keys: list[str]) -> None:
    """Forget whole scopes (their owner is gone): documents, postings and vectors."""
    SearchScope.objects.filter(key__in=keys).delete()
