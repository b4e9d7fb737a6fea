"""Search index and embeddings of chat/global items, kept in step with ``Memory`` rows.

Called from ``memory_app.derived`` inside the memory services' transactions, so an item and
its index entry/vector are written, re-scoped or forgotten together.

- SQLite: the FTS5 ``trigram`` table ``memory_scoped_fts`` holds one row per *active*
  chat/global item (content plus its scope, unindexed). PostgreSQL needs no extra table:
  the ``pg_trgm`` GIN index on ``Memory.content`` is maintained by the database itself.
- Embeddings: computed in the transaction only by an in-process provider; a remote provider
  is filled in later by ``refresh_embeddings`` (no network inside a transaction).
"""

from collections.abc import Iterable

from django.db import connection, transaction

from memory_app.models import Memory, MemoryEmbedding, Status
from memory_app.scoped import pgvector
from memory_app.scoped.embeddings import get_provider, to_bytes
from memory_app.scoped.scope import SCOPE_TYPES

FTS_TABLE = "memory_scoped_fts"
EMBED_BATCH = 500


def _is_indexed(memory: Memory) -> bool:
    return memory.scope_type in SCOPE_TYPES and memory.status == Status.ACTIVE


def fts_remove(memory_ids: Iterable[str]) -> None:
    ids = list(memory_ids)
    if connection.vendor != "sqlite" or not ids:
        return
    with connection.cursor() as cursor:
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("%s" for _ in chunk)
            cursor.execute(f"DELETE FROM {FTS_TABLE} WHERE memory_id IN ({marks})", chunk)


def fts_add(memories: Iterable[Memory]) -> None:
    if connection.vendor != "sqlite":
        return
    rows = [(m.content, m.pk, m.scope_type, m.scope_id) for m in memories if _is_indexed(m)]
    if rows:
        with connection.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {FTS_TABLE} (content, memory_id, scope_type, scope_id) VALUES (%s, %s, %s, %s)",
                rows,
            )


def embed_memories(memories: list[Memory], *, provider=None) -> int:
    """Store vectors for those of ``memories`` that lack one for ``provider``; returns how many."""
    provider = provider or get_provider()
    todo = [m for m in memories if m.scope_type in SCOPE_TYPES]
    if not todo:
        return 0
    have = set(
        MemoryEmbedding.objects.filter(
            memory_id__in=[m.pk for m in todo], provider=provider.name, model=provider.model
        ).values_list("memory_id", flat=True)
    )
    todo = [m for m in todo if m.pk not in have]
    if not todo:
        return 0
    matrix = provider.embed([m.content for m in todo])
    with transaction.atomic():
        # The items may have moved, been archived or forgotten while the (possibly remote)
        # provider computed: lock and re-read them, store each vector with its item's scope
        # as it is now. A move waiting on these locks updates the stored vectors after us.
        current = {
            m.pk: m
            for m in Memory.objects.select_for_update(no_key=True)
            .filter(pk__in=[m.pk for m in todo])
            .order_by("pk")
            .only("id", "scope_type", "scope_id", "status")
        }
        rows = [(current[m.pk], row) for m, row in zip(todo, matrix, strict=True) if m.pk in current]
        MemoryEmbedding.objects.bulk_create(
            [
                MemoryEmbedding(
                    memory_id=m.pk,
                    scope_type=m.scope_type,
                    scope_id=m.scope_id,
                    active=m.status == Status.ACTIVE,
                    provider=provider.name,
                    model=provider.model,
                    dim=provider.dim,
                    vector=to_bytes(row),
                )
                for m, row in rows
            ],
            ignore_conflicts=True,  # a concurrent refresh may have stored the same vector
        )
        # Vectors stored concurrently (kept by ignore_conflicts) get the current scope too.
        sync_vector_scopes(memory_ids=list(current))
        if pgvector.enabled():
            pgvector.store([(m.pk, provider.name, provider.model, row) for m, row in rows])
    return len(rows)


def index_written(*, created: list[Memory], changed: list[str]) -> None:
    """New rows get an index entry (and a vector); changed rows are re-read and re-indexed."""
    # Only chat/global rows have derived data (user/project memories are not indexed here).
    changed_rows = list(Memory.objects.filter(pk__in=list(changed), scope_type__in=SCOPE_TYPES)) if changed else []
    fts_remove([m.pk for m in changed_rows])
    groups: dict[tuple, list[str]] = {}
    for m in changed_rows:
        groups.setdefault((m.scope_type, m.scope_id, m.status == Status.ACTIVE), []).append(m.pk)
    for (scope_type, scope_id, active), ids in groups.items():
        MemoryEmbedding.objects.filter(memory_id__in=ids).update(scope_type=scope_type, scope_id=scope_id, active=active)
    fts_add([*created, *changed_rows])
    provider = get_provider()
    if provider.in_process:
        embed_memories([m for m in created if _is_indexed(m)], provider=provider)


def index_deleted(memory_ids: list[str]) -> None:
    # Vectors and candidates go with the row (foreign-key cascade); the FTS table has none.
    fts_remove(memory_ids)


def sync_vector_scopes(*, memory_ids: list[str] | None = None) -> int:
    """Copy each item's scope and active flag onto its vectors where they differ (all items,
    or only ``memory_ids``); returns how many vectors changed."""
    if memory_ids is not None and not memory_ids:
        return 0
    sql = (
        "UPDATE memory_app_memoryembedding SET scope_type = m.scope_type, scope_id = m.scope_id, "
        "active = (m.status = %s) FROM memory_app_memory m WHERE m.id = memory_app_memoryembedding.memory_id "
        "AND (memory_app_memoryembedding.scope_type <> m.scope_type OR memory_app_memoryembedding.scope_id "
        "<> m.scope_id OR memory_app_memoryembedding.active <> (m.status = %s))"
    )
    changed = 0
    with connection.cursor() as cursor:
        if memory_ids is None:
            cursor.execute(sql, [Status.ACTIVE, Status.ACTIVE])
            return cursor.rowcount
        for start in range(0, len(memory_ids), 500):
            chunk = memory_ids[start : start + 500]
            marks = ",".join("%s" for _ in chunk)
            cursor.execute(
                f"{sql} AND memory_app_memoryembedding.memory_id IN ({marks})", [Status.ACTIVE, Status.ACTIVE, *chunk]
            )
            changed += cursor.rowcount
    return changed


def resync_all() -> dict:
    """Rebuild the derived index from the items (after a manual restore or bulk SQL).

    Vectors get their item's scope/active copied again; on SQLite the FTS5 table is rebuilt
    from the active chat/global items. Safe to run at any time; returns row counts.
    """
    vectors = sync_vector_scopes()
    with connection.cursor() as cursor:
        fts = 0
        if connection.vendor == "sqlite":
            cursor.execute(f"DELETE FROM {FTS_TABLE}")
            cursor.execute(
                f"INSERT INTO {FTS_TABLE} (content, memory_id, scope_type, scope_id) "
                "SELECT content, id, scope_type, scope_id FROM memory_app_memory "
                "WHERE status = %s AND scope_type IN ('chat', 'global')",
                [Status.ACTIVE],
            )
            fts = cursor.rowcount
    return {"vectors_fixed": vectors, "fts_rows": fts}
