"""Derived data kept in step with ``Memory`` rows: their keyword index entries and vectors.

Called by the memory services inside their transaction, so a memory and what is derived from
it are written, re-scoped or forgotten together. Only active chat/global rows are indexed;
the retrieval engine (``memory_app.search``) stores what this module hands it.

Embeddings are computed inside the transaction only by an in-process provider; a remote
provider is filled in later by ``embeddings_refresh`` (no network inside a transaction).
"""

from collections.abc import Iterable

from django.db import connection, transaction

from memory_app.memories.models import SCOPED_TIERS, Memory, Status
from memory_app.search import index, pgvector
from memory_app.search.embeddings import get_provider
from memory_app.search.models import MemoryEmbedding


def _is_indexed(memory: Memory) -> bool:
    return memory.scope_type in SCOPED_TIERS and memory.status == Status.ACTIVE


def on_memories_written(*, created: Iterable[Memory], changed: Iterable[str] = ()) -> None:
    """New rows get an index entry (and a vector); changed rows are re-read and re-indexed."""
    created, changed = list(created), list(changed)
    # Only chat/global rows have derived data (user/project memories are not indexed).
    changed_rows = list(Memory.objects.filter(pk__in=changed, scope_type__in=SCOPED_TIERS)) if changed else []
    index.fts_remove([m.pk for m in changed_rows])
    groups: dict[tuple, list[str]] = {}
    for m in changed_rows:
        groups.setdefault((m.scope_type, m.scope_id, m.status == Status.ACTIVE), []).append(m.pk)
    for (scope_type, scope_id, active), ids in groups.items():
        index.vectors_set_scope(ids, scope_type=scope_type, scope_id=scope_id, active=active)
    index.fts_add([m for m in [*created, *changed_rows] if _is_indexed(m)])
    provider = get_provider()
    if provider.in_process:
        memories_embed([m for m in created if _is_indexed(m)], provider=provider)


def on_memories_deleted(memory_ids: list[str]) -> None:
    """Rows are about to be physically deleted; remove everything derived from them."""
    # Vectors and candidates go with the row (foreign-key cascade); the FTS table has none.
    index.fts_remove(list(memory_ids))


def memories_embed(memories: list[Memory], *, provider=None) -> int:
    """Store vectors for those of ``memories`` that lack one for ``provider``; returns how many."""
    provider = provider or get_provider()
    todo = [m for m in memories if m.scope_type in SCOPED_TIERS]
    if not todo:
        return 0
    have = index.vector_ids([m.pk for m in todo], provider=provider)
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
        kept = [(current[m.pk], row) for m, row in zip(todo, matrix, strict=True) if m.pk in current]
        index.vectors_store(
            [(m, m.status == Status.ACTIVE) for m, _ in kept], [row for _, row in kept], provider=provider
        )
        # Vectors stored concurrently (kept by ignore_conflicts) get the current scope too.
        sync_vector_scopes(memory_ids=list(current))
    return len(kept)


def embeddings_refresh(*, batch_size: int = 256, provider=None) -> int:
    """Store a vector for every active chat/global item that lacks one for ``provider``;
    returns how many. Running it twice adds nothing the second time."""
    provider = provider or get_provider()
    done = 0
    last_id = ""
    while True:
        have = MemoryEmbedding.objects.filter(provider=provider.name, model=provider.model).values("memory_id")
        batch = list(
            Memory.objects.filter(scope_type__in=SCOPED_TIERS, status=Status.ACTIVE, pk__gt=last_id)
            .exclude(pk__in=have)
            .order_by("pk")
            .only("id", "content", "scope_type", "scope_id", "status")[:batch_size]
        )
        if not batch:
            if pgvector.enabled():
                pgvector.fill_missing(provider=provider)
            return done
        last_id = batch[-1].pk
        # No transaction around the provider call: it may be remote. memories_embed then
        # stores the vectors under the items' row locks with the scope/active flag they have
        # by then (moved or archived meanwhile), skips forgotten ones and keeps a vector
        # stored concurrently (its scope copy re-synced too).
        done += memories_embed(batch, provider=provider)


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
        for start in range(0, len(memory_ids), index.CHUNK):
            chunk = memory_ids[start : start + index.CHUNK]
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
    fts = index.fts_rebuild(
        select_sql="SELECT content, id, scope_type, scope_id FROM memory_app_memory "
        "WHERE status = %s AND scope_type IN (%s, %s)",
        params=[Status.ACTIVE, *SCOPED_TIERS],
    )
    return {"vectors_fixed": vectors, "fts_rows": fts}
