"""Vectors for indexed documents: now (in-process provider), after commit in a background
thread (the e5 model: tens of milliseconds a text, never on the request path), or by
``embed_pending`` from the worker and ``manage.py refresh_embeddings``.

The engine does not read owner tables: each source registers a loader that returns the text
to embed for refs (``register_source``). A document's vector is stored only if the document
still has the text it was computed from (its hash), so a race with an edit or a delete
cannot attach a stale vector.
"""

import logging
from collections.abc import Callable, Mapping

import numpy as np
from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.db.models import Q, QuerySet

from config.threads import WokenThread
from memory_app.search import vectorstore
from memory_app.search.embeddings import EmbeddingProvider, get_provider, to_bytes
from memory_app.search.index import RECIPES, text_hash, vectors_store
from memory_app.search.models import SearchDocument

logger = logging.getLogger(__name__)
BATCH = 32
# What a document's vector is computed from: one text, or several whose vectors are averaged.
ToEmbed = str | tuple[str, ...]
_loaders: dict[str, Callable[[list[str]], Mapping[str, tuple[str, ToEmbed]]]] = {}


def register_source(
    source: str, loader: Callable[[list[str]], Mapping[str, tuple[str, ToEmbed]]], *, recipe: int = 0
) -> None:
    """``loader(refs) -> {ref: (indexed text, what to embed)}`` for the refs that still exist.
    What to embed is a text, which may add context to the indexed text, or several texts: the
    vector is then the mean of theirs (not normalised: its dot product with a question is the
    mean of their similarities; a message's is its own text and the text with the turn before
    it, docs/search.md). ``recipe`` numbers what the loader returns: a source that changes it
    raises it, and its vectors of lower numbers are made again by ``embed_stale`` (they serve
    until then)."""
    _loaders[source] = loader
    RECIPES[source] = recipe


def embed_texts(provider: EmbeddingProvider, items: list[ToEmbed]) -> np.ndarray:
    """One vector per item: a text's, or the mean of the vectors of a tuple's texts. One call to
    the provider for all the texts."""
    flat = [text for item in items for text in ((item,) if isinstance(item, str) else item)]
    matrix = provider.embed(flat)
    if len(flat) == len(items):  # one text each (and no items at all)
        return matrix
    out, at = [], 0
    for item in items:
        count = 1 if isinstance(item, str) else len(item)
        out.append(matrix[at : at + count].mean(axis=0))
        at += count
    return np.asarray(out, dtype=matrix.dtype).reshape(len(items), -1)


def pending_count(*, provider: EmbeddingProvider | None = None) -> int:
    provider = provider or get_provider()
    return SearchDocument.objects.exclude(model=provider.model).count()


def _stale(provider: EmbeddingProvider) -> Q:
    """Vectors of the current model made by an older recipe of their source."""
    stale = Q(pk__in=[])
    for source, recipe in RECIPES.items():
        if recipe:
            stale |= Q(source=source, recipe__lt=recipe)
    return stale & Q(model=provider.model)


def stale_count(*, provider: EmbeddingProvider | None = None) -> int:
    return SearchDocument.objects.filter(_stale(provider or get_provider())).count()


def embed_pending(
    *,
    provider: EmbeddingProvider | None = None,
    limit: int | None = None,
    batch_size: int = BATCH,
    progress: Callable[[int], object] | None = None,
) -> int:
    """Embed documents without a vector of the current model, oldest first, in batches; each
    batch is committed on its own, so an interrupted run resumes where it stopped. Returns how
    many vectors were stored. ``progress(done)`` is called after each batch."""
    provider = provider or get_provider()
    return _embed(SearchDocument.objects.exclude(model=provider.model), provider, limit, batch_size, progress)


def embed_stale(
    *,
    provider: EmbeddingProvider | None = None,
    limit: int | None = None,
    batch_size: int = BATCH,
    progress: Callable[[int], object] | None = None,
) -> int:
    """Embed again, as ``embed_pending`` embeds, the documents whose vector was made by an older
    recipe of their source (the worker, a bounded batch a round, once nothing is pending; and
    ``refresh_embeddings``). Never from a request's process: after a release that changes a
    recipe, that is every document of the source."""
    provider = provider or get_provider()
    return _embed(SearchDocument.objects.filter(_stale(provider)), provider, limit, batch_size, progress)


def _embed(
    documents: QuerySet[SearchDocument],
    provider: EmbeddingProvider,
    limit: int | None,
    batch_size: int,
    progress: Callable[[int], object] | None,
) -> int:
    done, last_id = 0, 0
    while limit is None or done < limit:
        size = batch_size if limit is None else min(batch_size, limit - done)
        batch = list(
            documents.filter(pk__gt=last_id).order_by("pk").values_list("id", "source", "ref", "text_hash")[:size]
        )
        if not batch:
            break
        last_id = batch[-1][0]
        texts: dict[tuple[str, str], tuple[str, ToEmbed]] = {}
        for source in {row[1] for row in batch}:
            loader = _loaders.get(source)
            if loader is not None:
                found = loader([row[2] for row in batch if row[1] == source])
                texts.update({(source, ref): text for ref, text in found.items()})
        todo = [
            (doc_id, digest, texts[(source, ref)][1])
            for doc_id, source, ref, digest in batch
            if (source, ref) in texts and text_hash(texts[(source, ref)][0]) == digest
        ]
        if todo:
            matrix = embed_texts(provider, [text for _, _, text in todo])
            done += vectors_store(
                [(doc_id, digest, to_bytes(vector)) for (doc_id, digest, _), vector in zip(todo, matrix, strict=True)],
                model=provider.model,
            )
        if progress is not None:
            progress(done)
    return done


def embed_now(source: str, created: list[tuple[SearchDocument, str]], *, provider: EmbeddingProvider) -> None:
    """Vectors for just-created documents ``(document, indexed text)`` of an in-process
    provider, in the caller's transaction. Each is embedded as ``embed_pending`` would embed
    it: the source's text to embed (with its context), where the source still has that text."""
    documents = [doc for doc, _ in created]
    loader = _loaders.get(source)
    found = loader([doc.ref for doc in documents]) if loader is not None else {}
    texts = [found[doc.ref][1] if doc.ref in found and found[doc.ref][0] == text else text for doc, text in created]
    matrix = embed_texts(provider, texts)
    updated = [_with_vector(doc, vector, provider) for doc, vector in zip(documents, matrix, strict=True)]
    SearchDocument.objects.bulk_update(updated, ["model", "vector", "recipe"])
    vectorstore.store([(doc.pk, doc.vector) for doc in updated])


def _with_vector(doc: SearchDocument, vector: np.ndarray, provider: EmbeddingProvider) -> SearchDocument:
    doc.model, doc.vector, doc.recipe = provider.model, to_bytes(vector), RECIPES.get(doc.source, 0)
    return doc


class _Background(WokenThread):
    """One daemon thread per process that embeds pending documents whenever it is woken."""

    thread_name = "memory-embedder"

    def _loop(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            try:
                while embed_pending(limit=BATCH * 8):
                    pass
            except Exception as exc:  # keep the thread; the worker catches up
                logger.warning("background embedding failed", extra={"error_class": type(exc).__name__})
            finally:
                close_old_connections()
                connection.close()


background = _Background()


def schedule() -> None:
    """After the current transaction commits, embed what it indexed (background providers)."""
    if getattr(settings, "MEMORY_EMBED_IN_BACKGROUND", True) and not get_provider().in_process:
        transaction.on_commit(background.wake)
