"""Writes of the retrieval engine: documents, their postings and their scopes' statistics.

``documents_sync`` is what owners reach through ``documents.sync`` (and ``documents.remove``
for deleted rows), inside the transaction that writes their rows, with each row's current
state (its scope key and text, or ``None`` when it is not to be indexed): a row and its index
entries are written, re-scoped or forgotten together.

Scope statistics rows are updated in key order, so two transactions touching the same scopes
never wait on each other in a cycle.
"""

import hashlib
import secrets
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from django.db import transaction
from django.db.models import Case, F, IntegerField, Value, When

from memory_app.search import vectorstore
from memory_app.search.analysis import term_counts
from memory_app.search.models import SearchDocument, SearchPosting, SearchScope

CHUNK = 500
T = TypeVar("T")
# What a source embeds for a document, by version (``embedder.register_source``); 0 by default.
RECIPES: dict[str, int] = {}


@dataclass(frozen=True)
class Row:
    """The state of one owner row: ``scope`` is None when it must not be indexed."""

    ref: str
    scope: str | None
    text: str = ""


def text_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def _chunks(items: list[T]) -> Iterator[list[T]]:
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]


def scopes_get_or_create(keys: Iterable[str]) -> dict[str, int]:
    """Ids of the scope rows for ``keys``, creating missing ones."""
    keys = sorted(set(keys))
    if not keys:
        return {}
    found = dict(SearchScope.objects.filter(key__in=keys).values_list("key", "id"))
    missing = [k for k in keys if k not in found]
    if missing:
        SearchScope.objects.bulk_create([SearchScope(key=k) for k in missing], ignore_conflicts=True)
        found.update(SearchScope.objects.filter(key__in=missing).values_list("key", "id"))
    return found


def _add(deltas: dict[int, list[int]], scope_id: int, docs: int, length: int) -> None:
    entry = deltas.setdefault(scope_id, [0, 0])
    entry[0] += docs
    entry[1] += length


def _bump(deltas: dict[int, list[int]]) -> None:
    """Apply ``{scope id: [docs delta, length delta]}`` in id order and give each scope a new
    version: a random one, so a version seen inside a rolled-back transaction never comes back."""
    for scope_id in sorted(deltas):
        docs, length = deltas[scope_id]
        SearchScope.objects.filter(pk=scope_id).update(
            docs=F("docs") + docs, total_length=F("total_length") + length, version=secrets.randbits(62)
        )


def documents_sync(source: str, rows: Iterable[Row]) -> list[tuple[SearchDocument, str]]:
    """Make the index hold exactly ``rows``' current state (add, move, re-index or remove);
    returns the documents created, each with its text (they have no vector yet)."""
    rows = list(rows)
    created: list[tuple[SearchDocument, str]] = []
    if not rows:
        return created
    with transaction.atomic():
        existing = {}
        for chunk in _chunks([r.ref for r in rows]):
            existing.update(
                {
                    d.ref: d
                    for d in SearchDocument.objects.filter(source=source, ref__in=chunk).only(
                        "id", "ref", "scope_id", "length", "text_hash"
                    )
                }
            )
        scope_ids = scopes_get_or_create(r.scope for r in rows if r.scope is not None)
        deltas: dict[int, list[int]] = {}
        moves: dict[int, list[int]] = {}  # new scope id -> documents that move there
        doomed: list[SearchDocument] = []
        fresh: list[tuple[Row, int, str]] = []
        for row in rows:
            doc = existing.get(row.ref)
            if row.scope is None:
                if doc is not None:
                    doomed.append(doc)
                continue
            scope_id, digest = scope_ids[row.scope], text_hash(row.text)
            if doc is not None and doc.text_hash == digest:
                if doc.scope_id != scope_id:  # moved: keep the vector, move the postings
                    moves.setdefault(scope_id, []).append(doc.pk)
                    _add(deltas, doc.scope_id, -1, -doc.length)
                    _add(deltas, scope_id, 1, doc.length)
                continue
            if doc is not None:
                doomed.append(doc)
            fresh.append((row, scope_id, digest))
        for scope_id, doc_ids in moves.items():
            for id_chunk in _chunks(doc_ids):
                SearchDocument.objects.filter(pk__in=id_chunk).update(scope_id=scope_id)
                SearchPosting.objects.filter(document_id__in=id_chunk).update(scope_id=scope_id)
        for doc in doomed:
            _add(deltas, doc.scope_id, -1, -doc.length)
        for id_chunk in _chunks([d.pk for d in doomed]):
            SearchPosting.objects.filter(document_id__in=id_chunk).delete()
            SearchDocument.objects.filter(pk__in=id_chunk).delete()
        if fresh:
            counted = [(row, scope_id, digest, term_counts(row.text)) for row, scope_id, digest in fresh]
            docs = SearchDocument.objects.bulk_create(
                [
                    SearchDocument(
                        source=source,
                        ref=row.ref,
                        scope_id=scope_id,
                        length=sum(counts.values()),
                        text_hash=digest,
                    )
                    for row, scope_id, digest, counts in counted
                ]
            )
            postings: list[SearchPosting] = []
            for doc, (_, scope_id, _, counts) in zip(docs, counted, strict=True):
                _add(deltas, scope_id, 1, doc.length)
                postings.extend(
                    SearchPosting(
                        scope_id=scope_id, term=term, document_id=doc.pk, tf=min(tf, 32767), length=doc.length
                    )
                    for term, tf in counts.items()
                )
            SearchPosting.objects.bulk_create(postings, batch_size=1000)
            created = [(doc, row.text) for doc, (row, _, _, _) in zip(docs, counted, strict=True)]
        _bump(deltas)
    return created


def _current_recipe() -> Case | Value:
    """The recipe of a vector stored now: its document's source's current one."""
    if not RECIPES:
        return Value(0)
    return Case(
        *(When(source=source, then=Value(recipe)) for source, recipe in sorted(RECIPES.items())),
        default=Value(0),
        output_field=IntegerField(),
    )


def vectors_store(doc_vectors: list[tuple[int, str, bytes]], *, model: str) -> int:
    """Store ``(document id, text hash, vector bytes)`` of ``model``, made by the current recipe
    of each document's source; a document whose text changed meanwhile (other hash) or that is
    gone is skipped. Returns how many were stored."""
    stored = 0
    touched: set[int] = set()
    recipe = _current_recipe()
    with transaction.atomic():
        for doc_id, digest, raw in doc_vectors:
            changed = SearchDocument.objects.filter(pk=doc_id, text_hash=digest).update(
                model=model, vector=raw, recipe=recipe
            )
            if changed:
                stored += 1
                touched.add(doc_id)
        vectorstore.store([(doc_id, raw) for doc_id, _, raw in doc_vectors if doc_id in touched])
        scope_ids = set(SearchDocument.objects.filter(pk__in=touched).values_list("scope_id", flat=True))
        _bump({scope_id: [0, 0] for scope_id in scope_ids})
    return stored
