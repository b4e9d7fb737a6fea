"""Writing chat/global items for bots (``POST /api/memory/items``, docs/scoped-memory.md).

The scope always comes from the session and the kind (``scope.chat_write_placement``: an item
of a global kind written through a typed chat's session waits in that chat, with a pending
candidate for the admin's review, unless ``MEMORY_CHAT_TO_GLOBAL=direct``); metadata can not
choose it, and only staff holding ``identity_app.write_global_memories`` may write to global
directly (that is not chat-derived and needs no review). Neither metadata nor evidence may carry the keys scope migration reads as
clues (``scope.SCOPE_CLUE_KEYS``): the system records the real session as
``evidence.source_session_id``. Duplicates are looked for inside the target scope only: the
same text in another chat is not a duplicate. Two texts are
duplicates when their normalized forms (``duplicate_key``) are equal — the one rule both this
check and dreaming's archive pass use.
"""

import functools
from datetime import datetime

from django.db import connection, transaction
from django.db.models import Q

from config.errors import InvalidInput, NotFound
from config.validation import clean_text, validate_json_value
from identity_app.chat_reach import chat_require_reach
from identity_app.models import User
from identity_app.permissions import global_write_require
from memory_app.distill.extraction import normalize_text
from memory_app.memories import services
from memory_app.memories.models import SCOPED_TIERS, Memory, Origin, live_q
from memory_app.memories.selectors import chat_is_bound_to, memories_visible
from memory_app.scoped.models import CandidateDecision, MemoryCandidate
from memory_app.scoped.scope import (
    GLOBAL_SCOPE,
    SCOPE_CLUE_KEYS,
    SCOPE_TYPE_CHAT,
    SCOPE_TYPE_GLOBAL,
    Placement,
    chat_write_placement,
    resolve_scope_from_session,
)

RESERVED_METADATA_KEYS = frozenset({"scope", "scope_type", "scope_id", "scope_key"})


# How many of a scope's newest active items the duplicate check and the archive pass read.
DUPLICATE_SCAN_LIMIT = 2000


def lock_scope(scope: tuple[str, str]) -> None:
    """Serialize check-then-write inside one scope for the rest of the transaction.

    PostgreSQL: a transaction-level advisory lock on the scope. SQLite: transactions are
    IMMEDIATE (settings), so the write lock is already held from BEGIN.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"memory-scope:{scope[0]}:{scope[1]}"]
            )


@functools.lru_cache(maxsize=4096)  # a scope's newest texts are compared again on every write
def duplicate_key(text: str) -> str:
    """Two items of one scope are duplicates when this is equal (and not empty)."""
    return normalize_text(text)


def recent_active_texts(scope: tuple[str, str]):
    """(id, content) of the scope's newest active, unexpired items, newest first (bounded): an
    expired item is no duplicate of a new statement of the same fact."""
    return (
        Memory.objects.filter(live_q(), scope_type=scope[0], scope_id=scope[1])
        .order_by("-created_at", "-id")
        .values_list("id", "content")[:DUPLICATE_SCAN_LIMIT]
    )


def find_duplicate(*, scope: tuple[str, str], content: str) -> Memory | None:
    """An active item of ``scope`` whose text is a duplicate of ``content``, if any.

    Looks at the newest ``DUPLICATE_SCAN_LIMIT`` items (the window the archive pass reads)
    and, beyond it, at items with the same text up to letter case.
    """
    key = duplicate_key(content)
    same_text = (
        Memory.objects.filter(live_q(), scope_type=scope[0], scope_id=scope[1], content__iexact=content.strip())
        .order_by("created_at", "id")
        .first()
    )
    if same_text is not None and duplicate_key(same_text.content) == key:
        return same_text
    if not key:
        return None
    matches = [memory_id for memory_id, text in recent_active_texts(scope) if duplicate_key(text) == key]
    return Memory.objects.filter(pk=matches[-1]).first() if matches else None  # the oldest of them


def reject_scope_in_metadata(metadata: dict | None, evidence: dict | None = None) -> None:
    for key in metadata or {}:
        if str(key).strip().lower() in RESERVED_METADATA_KEYS | SCOPE_CLUE_KEYS:
            raise InvalidInput(
                f"metadata may not set {key!r}: the scope follows the session and the kind.",
                code="scope_in_metadata",
            )
    for key in evidence or {}:
        if str(key).strip().lower() in SCOPE_CLUE_KEYS:
            raise InvalidInput(
                f"evidence may not set {key!r}: the session is recorded by the system.",
                code="scope_in_evidence",
            )


def strip_scope_clues(data: dict | None) -> dict:
    """``data`` without the keys scope migration reads as clues (for extractor output)."""
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if str(k).strip().lower() not in SCOPE_CLUE_KEYS}


def scoped_item_create(
    *,
    actor: User,
    kind: str,
    content: str,
    session_id: str | None = None,
    metadata: dict | None = None,
    evidence: dict | None = None,
    scope_type: str | None = None,
    origin: str = Origin.API,
    expires_at: datetime | str | None = None,
) -> tuple[Memory, bool]:
    """Create an item in the scope of (session, kind); returns (item, created).

    An existing active item with the same text in that scope is returned instead of a
    second copy (``created`` False); for an item that would wait for review, also one already
    shared in the global scope. A new pending item comes with its pending ``MemoryCandidate``
    (``pending_candidate_for``).
    """
    clean_text(content, field="content")
    expires_at = services.validate_expires_at(expires_at)
    validate_json_value(metadata, field="metadata")
    validate_json_value(evidence, field="evidence")
    reject_scope_in_metadata(metadata, evidence)
    if session_id is not None:
        resolve_scope_from_session(session_id)  # malformed → 400, even when the scope is explicit
    if scope_type is not None:
        if scope_type != SCOPE_TYPE_GLOBAL:
            raise InvalidInput(
                "Only scope_type 'global' may be requested; chat scope follows the session.", code="invalid_scope"
            )
        global_write_require(actor, operator=True)
        # Staff's explicit global write: not learned in a chat, so no review and no source chat.
        placement = Placement(scope=GLOBAL_SCOPE, target=GLOBAL_SCOPE, source_chat_key="")
    else:
        if not session_id:
            raise InvalidInput("session_id is required.", code="invalid_session_key")
        placement = chat_write_placement(session_id=session_id, kind=kind)
    scope = placement.scope
    evidence = dict(evidence or {})
    if session_id:
        evidence["source_session_id"] = session_id
    # The write rule first, so nobody can learn from the dedupe answer what a scope holds;
    # then the session's own chat, which the evidence names even when the kind goes global: an
    # item never claims to come from a chat its writer may not use (docs/API.md, "Chat reach").
    services.scope_require_write(actor=actor, tier=scope[0], scope_id=scope[1])
    if session_id:
        chat_require_reach(actor=actor, session_key=session_id)
    with transaction.atomic():
        lock_scope(scope)
        if isinstance(content, str):
            existing = find_duplicate(scope=GLOBAL_SCOPE, content=content) if placement.pending else None
            existing = existing or find_duplicate(scope=scope, content=content)
            if existing:
                return existing, False
        memory = services.memory_create(
            actor=actor,
            tier=scope[0],
            scope_id=scope[1],
            kind=kind,
            content=content,
            origin=origin,
            metadata=metadata,
            evidence=evidence,
            expires_at=expires_at,
            source_chat_key=placement.source_chat_key,
        )
        if placement.pending:
            assert session_id  # a pending placement is a chat's, which needs session_id (above)
            MemoryCandidate.objects.create(
                session_id=session_id,
                source=ITEM_SOURCE,
                extractor=origin,
                scope_type=placement.target[0],
                scope_id=placement.target[1],
                kind=memory.kind,
                content=memory.content,
                subject_key=str((metadata or {}).get("subject_key") or "")[:240],
                decision=CandidateDecision.PENDING,
                reason=PENDING_REASON,
                memory=memory,
            )
    return memory, True


def scoped_item_change(*, actor: User, memory_id: str, **changes) -> Memory:
    """Change a chat/global item in place (``expires_at``, ``paused``: ``memory_change``, whose
    write rule decides: service principals within their reach, the user a chat is bound to
    for its items, staff and services for global ones). An id that is not a chat/global item
    the caller may read is 404, like one that does not exist."""
    memory = memories_visible(user=actor).filter(pk=str(memory_id)[:40], scope_type__in=SCOPED_TIERS).first()
    if memory is None:
        raise NotFound("Memory not found.")
    return services.memory_change(actor=actor, memory_id=memory.pk, tier=memory.scope_type, **changes)


ITEM_SOURCE = "item"  # a candidate for an item a bot wrote through POST /api/memory/items
PENDING_REASON = "waits for review before it is shared with everyone"


def pending_candidate_for(memory: Memory) -> MemoryCandidate | None:
    """The pending review of ``memory`` (written to its chat, to be shared with everyone), if any."""
    return MemoryCandidate.objects.filter(memory=memory, decision=CandidateDecision.PENDING).first()


def chat_candidates_forget(*, actor: User, chat_key: str) -> int:
    """Forgetting a whole chat: the records of what consolidation proposed there go too (a
    candidate whose item was written goes with that item; this takes the rejected ones and
    those that went nowhere, which still hold text of the chat). Only the user the chat is
    bound to; anyone else gets 404. Returns how many were deleted."""
    if not chat_is_bound_to(user=actor, chat_key=chat_key):
        raise NotFound("Chat not found.")
    in_chat = Q(scope_type=SCOPE_TYPE_CHAT, scope_id=chat_key)
    from_chat = Q(memory__isnull=True) & (Q(session_id=chat_key) | Q(session_id__startswith=f"{chat_key}:"))
    with transaction.atomic():
        deleted, _ = MemoryCandidate.objects.filter(in_chat | from_chat).delete()
    return deleted
