"""Derived data kept in step with ``Memory`` rows: their documents in the retrieval engine
(word index entries and vectors).

Called by the memory services inside their transaction, so a memory and what is derived from
it are written, re-scoped or forgotten together. Every active memory of every tier is indexed
in the scope of its tier ("user:7", "project:prj_…", "chat:<key>", "global:__global__");
superseded, archived and forgotten ones are not. An active global item shared from a chat
(``source_chat_key``) is also indexed a second time, as source ``memory-shared`` in the scope
"shared:<chat key>", so the memory home of that chat's user searches exactly what was shared
from their chats without ranking everyone's global items.
"""

from collections.abc import Callable, Iterable

from memory_app.memories.models import Memory, Status, Tier
from memory_app.reads import services as reads_services
from memory_app.reads.models import ItemKind
from memory_app.search import documents, embedder
from memory_app.search.index import Row

SOURCE = "memory"
SHARED_SOURCE = "memory-shared"
SHARED_SCOPE_PREFIX = "shared"
BATCH = 500
INDEXED_FIELDS = ("id", "scope_type", "scope_id", "status", "content", "source_chat_key")


def scope_key(scope_type: str, scope_id: str) -> str:
    return f"{scope_type}:{scope_id}"


def shared_scope_key(chat_key: str) -> str:
    """The index scope of the global items shared from ``chat_key``."""
    return scope_key(SHARED_SCOPE_PREFIX, chat_key)


def _row(memory: Memory) -> Row:
    if memory.status != Status.ACTIVE:
        return Row(ref=memory.pk, scope=None)
    return Row(ref=memory.pk, scope=scope_key(memory.scope_type, memory.scope_id), text=memory.content)


def _is_shared(memory: Memory) -> bool:
    return memory.status == Status.ACTIVE and memory.scope_type == Tier.GLOBAL and bool(memory.source_chat_key)


def _shared_row(memory: Memory) -> Row:
    if not _is_shared(memory):
        return Row(ref=memory.pk, scope=None)
    return Row(ref=memory.pk, scope=shared_scope_key(memory.source_chat_key), text=memory.content)


def on_memories_written(*, created: Iterable[Memory], changed: Iterable[str] = ()) -> None:
    """New rows are indexed; changed rows are re-read and re-indexed (moved, or removed when
    they stopped being active)."""
    changed = list(changed)
    created = list(created)
    current = list(Memory.objects.filter(pk__in=changed).only(*INDEXED_FIELDS)) if changed else []
    documents.sync(SOURCE, [_row(m) for m in [*created, *current]])
    # Only rows learned in a chat can have (or lose) a shared entry: no work for any other write.
    documents.sync(SHARED_SOURCE, [_shared_row(m) for m in [*created, *current] if m.source_chat_key])


# Packages above this one that keep a copy of a memory's text (the auto-memory log) register
# here what forgetting the memory does to that copy; called in the forgetting transaction.
_forget_hooks: list[Callable[[list[str]], None]] = []


def register_forget_hook(hook: Callable[[list[str]], None]) -> None:
    if hook not in _forget_hooks:
        _forget_hooks.append(hook)


def on_memories_deleted(memory_ids: list[str]) -> None:
    """Rows are about to be physically deleted; their documents, postings and vectors go too,
    and so does every registered copy of their text."""
    documents.remove(SOURCE, memory_ids)
    documents.remove(SHARED_SOURCE, memory_ids)
    reads_services.reads_forget(item_kind=ItemKind.MEMORY, refs=memory_ids)  # who read it goes with it
    for hook in _forget_hooks:
        hook(memory_ids)


def on_user_deleted(sender, instance, **kwargs) -> None:
    documents.drop_scopes([scope_key(Tier.USER, str(instance.pk))])


def on_project_deleted(sender, instance, **kwargs) -> None:
    documents.drop_scopes([scope_key(Tier.PROJECT, instance.pk)])


def _texts(refs: list[str]) -> dict[str, tuple[str, str]]:
    rows = Memory.objects.filter(pk__in=refs, status=Status.ACTIVE).values_list("id", "content")
    return {ref: (content, content) for ref, content in rows}


def _shared_texts(refs: list[str]) -> dict[str, tuple[str, str]]:
    rows = Memory.objects.filter(pk__in=refs, status=Status.ACTIVE, scope_type=Tier.GLOBAL).exclude(source_chat_key="")
    return {ref: (content, content) for ref, content in rows.values_list("id", "content")}


embedder.register_source(SOURCE, _texts)
embedder.register_source(SHARED_SOURCE, _shared_texts)


def reindex_all() -> int:
    """Index every memory again from its row (after a manual restore or bulk SQL); returns how
    many rows were looked at. Documents whose text is unchanged keep their vectors."""
    seen, last_id = 0, ""
    while True:
        batch = list(Memory.objects.filter(pk__gt=last_id).order_by("pk").only(*INDEXED_FIELDS)[:BATCH])
        if not batch:
            return seen
        last_id = batch[-1].pk
        documents.sync(SOURCE, [_row(m) for m in batch])
        documents.sync(SHARED_SOURCE, [_shared_row(m) for m in batch if m.source_chat_key])
        seen += len(batch)
