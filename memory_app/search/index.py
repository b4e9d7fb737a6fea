"""Storage of the retrieval engine: the keyword table and the vectors of indexed rows.

The engine knows rows only as ids, texts and scopes; which rows are indexed and when is
decided by their owner (``memory_app.memories.derived``), inside the same transaction as the
rows, so a row and its index entry/vector are written, re-scoped or forgotten together.

- SQLite: the FTS5 ``trigram`` table ``memory_scoped_fts`` holds one row per indexed row
  (content plus its scope, unindexed). PostgreSQL needs no extra table: the ``pg_trgm`` GIN
  index on the memory content is maintained by the database itself.
- Vectors: float32 bytes in ``MemoryEmbedding`` (and a pgvector column where installed), each
  with a copy of its row's scope and active flag so one scope's vectors are one index range.
"""

from collections.abc import Iterable
from typing import Protocol

from django.db import connection

from memory_app.search import pgvector
from memory_app.search.embeddings import to_bytes
from memory_app.search.models import MemoryEmbedding

FTS_TABLE = "memory_scoped_fts"
CHUNK = 500


class IndexedRow(Protocol):
    pk: str
    content: str
    scope_type: str
    scope_id: str


def _chunks(ids: list[str]):
    for start in range(0, len(ids), CHUNK):
        yield ids[start : start + CHUNK]


def fts_remove(row_ids: Iterable[str]) -> None:
    ids = list(row_ids)
    if connection.vendor != "sqlite" or not ids:
        return
    with connection.cursor() as cursor:
        for chunk in _chunks(ids):
            marks = ",".join("%s" for _ in chunk)
            cursor.execute(f"DELETE FROM {FTS_TABLE} WHERE memory_id IN ({marks})", chunk)


def fts_add(rows: Iterable[IndexedRow]) -> None:
    if connection.vendor != "sqlite":
        return
    values = [(r.content, r.pk, r.scope_type, r.scope_id) for r in rows]
    if values:
        with connection.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {FTS_TABLE} (content, memory_id, scope_type, scope_id) VALUES (%s, %s, %s, %s)",
                values,
            )


def fts_rebuild(*, select_sql: str, params: list) -> int:
    """Replace the whole table with ``select_sql`` (content, id, scope_type, scope_id); SQLite only."""
    if connection.vendor != "sqlite":
        return 0
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {FTS_TABLE}")
        cursor.execute(f"INSERT INTO {FTS_TABLE} (content, memory_id, scope_type, scope_id) {select_sql}", params)
        return cursor.rowcount


def vector_ids(row_ids: list[str], *, provider) -> set[str]:
    """Those of ``row_ids`` that already have a vector of ``provider``'s model."""
    return set(
        MemoryEmbedding.objects.filter(memory_id__in=row_ids, provider=provider.name, model=provider.model).values_list(
            "memory_id", flat=True
        )
    )


def vectors_store(rows: list[tuple[IndexedRow, bool]], matrix, *, provider) -> None:
    """Store one vector per ``(row, active)`` (``matrix`` in the same order); a vector stored
    concurrently for the same row and model is kept."""
    MemoryEmbedding.objects.bulk_create(
        [
            MemoryEmbedding(
                memory_id=row.pk,
                scope_type=row.scope_type,
                scope_id=row.scope_id,
                active=active,
                provider=provider.name,
                model=provider.model,
                dim=provider.dim,
                vector=to_bytes(vector),
            )
            for (row, active), vector in zip(rows, matrix, strict=True)
        ],
        ignore_conflicts=True,
    )
    if pgvector.enabled():
        pgvector.store(
            [(row.pk, provider.name, provider.model, vector) for (row, _), vector in zip(rows, matrix, strict=True)]
        )


def vectors_set_scope(row_ids: list[str], *, scope_type: str, scope_id: str, active: bool) -> None:
    MemoryEmbedding.objects.filter(memory_id__in=row_ids).update(
        scope_type=scope_type, scope_id=scope_id, active=active
    )
