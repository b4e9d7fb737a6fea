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
import json
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TypeVar

from django.conf import settings
from django.core import serializers
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, models, transaction
from django.db.models import Q
from django.utils import timezone

from config.errors import Conflict, InvalidInput, NotFound
from config.validation import clean_text, validate_json_value
from identity_app.chat_reach import chat_require_reach
from identity_app.models import User
from identity_app.permissions import global_write_require
from memory_app.distill.extraction import normalize_text
from memory_app.memories import derived, services
from memory_app.memories.models import SCOPED_TIERS, Memory, MemoryChange, Origin, live_q
from memory_app.memories.selectors import chat_is_bound_to, memories_visible
from memory_app.scoped.errors import ErrorCode
from memory_app.scoped.models import CandidateDecision, ChatForgetUndo, MemoryCandidate
from memory_app.scoped.scope import (
    GLOBAL_SCOPE,
    SCOPE_CLUE_KEYS,
    SCOPE_TYPE_CHAT,
    SCOPE_TYPE_GLOBAL,
    Placement,
    chat_write_placement,
    resolve_scope_from_session,
)

logger = logging.getLogger(__name__)
M = TypeVar("M", bound=models.Model)

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
                code=ErrorCode.SCOPE_IN_METADATA,
            )
    for key in evidence or {}:
        if str(key).strip().lower() in SCOPE_CLUE_KEYS:
            raise InvalidInput(
                f"evidence may not set {key!r}: the session is recorded by the system.",
                code=ErrorCode.SCOPE_IN_EVIDENCE,
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
                "Only scope_type 'global' may be requested; chat scope follows the session.",
                code=ErrorCode.INVALID_SCOPE,
            )
        global_write_require(actor, operator=True)
        # Staff's explicit global write: not learned in a chat, so no review and no source chat.
        placement = Placement(scope=GLOBAL_SCOPE, target=GLOBAL_SCOPE, source_chat_key="")
    else:
        if not session_id:
            raise InvalidInput("session_id is required.", code=ErrorCode.INVALID_SESSION_KEY)
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


def _chat_candidates_q(chat_key: str) -> Q:
    """Consolidation's records of a chat that forgetting it deletes: those of its items (their
    foreign key), those of its scope, and those that went nowhere but came from its sessions."""
    in_chat = Q(scope_type=SCOPE_TYPE_CHAT, scope_id=chat_key)
    from_chat = Q(memory__isnull=True) & (Q(session_id=chat_key) | Q(session_id__startswith=f"{chat_key}:"))
    items = Q(memory__scope_type=SCOPE_TYPE_CHAT, memory__scope_id=chat_key)
    return in_chat | from_chat | items


def chat_pending_reviews(*, chat_key: str) -> int:
    """How many of the chat's items wait for an operator's review to be shared with everyone
    (forgetting the chat takes those reviews along). Callers pass a chat the reader may see."""
    return MemoryCandidate.objects.filter(
        decision=CandidateDecision.PENDING, memory__scope_type=SCOPE_TYPE_CHAT, memory__scope_id=chat_key
    ).count()


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


# --- undoing the forgetting of a whole chat ---------------------------------------------------
# At most this many rows (items, their changes and the chat's records) are kept for an undo; a
# larger chat is forgotten without one (the page says so before).
UNDO_MAX_ROWS = 5000


class _ExactTimes(DjangoJSONEncoder):
    """Django's encoder, keeping times to the microsecond (its own stops at milliseconds): the
    rows come back with the very times they had."""

    def default(self, o):
        if isinstance(o, datetime):
            return o.isoformat()
        return super().default(o)


def _kept(rows) -> list:
    return json.loads(json.dumps(serializers.serialize("python", rows), cls=_ExactTimes))


def chat_forget_undo_keep(*, actor: User, chat_key: str) -> ChatForgetUndo | None:
    """Before a whole chat of ``actor``'s is forgotten (inside that transaction): keep what
    will be deleted — every row of the chat's scope, their changes in place, the chat's
    consolidation records — for ``MEMORY_FORGET_UNDO_MINUTES``. None when undo is off (0) or
    the chat holds more than ``UNDO_MAX_ROWS`` rows."""
    minutes = settings.MEMORY_FORGET_UNDO_MINUTES
    if minutes <= 0:
        return None
    if not chat_is_bound_to(user=actor, chat_key=chat_key):
        raise NotFound("Chat not found.")
    rows = Memory.objects.filter(scope_type=SCOPE_TYPE_CHAT, scope_id=chat_key).order_by("created_at", "pk")
    memories = list(rows[: UNDO_MAX_ROWS + 1])
    candidates = list(MemoryCandidate.objects.filter(_chat_candidates_q(chat_key)).order_by("pk")[: UNDO_MAX_ROWS + 1])
    changes = list(MemoryChange.objects.filter(memory__in=[m.pk for m in memories]).order_by("pk")[: UNDO_MAX_ROWS + 1])
    if len(memories) + len(candidates) + len(changes) > UNDO_MAX_ROWS:
        return None
    return ChatForgetUndo.objects.create(
        user=actor,
        chat_key=chat_key,
        expires_at=timezone.now() + timedelta(minutes=minutes),
        memories=_kept(memories),
        changes=_kept(changes),
        candidates=_kept(candidates),
        item_count=sum(1 for m in memories if m.status == "active"),
        pending_count=sum(1 for c in candidates if c.decision == CandidateDecision.PENDING),
    )


def _undo_get(*, actor: User, undo_id: str) -> ChatForgetUndo:
    """The undo of ``actor``'s, locked; anyone else's, or one already used or dropped: 404."""
    undo = ChatForgetUndo.objects.select_for_update().filter(pk=str(undo_id)[:40], user=actor).first()
    if undo is None:
        raise NotFound("Nothing to undo.")
    return undo


def chat_forget_undo_get(*, actor: User, undo_id: str) -> ChatForgetUndo:
    """For the page that offers the undo: ``actor``'s own (404 otherwise)."""
    undo = ChatForgetUndo.objects.filter(pk=str(undo_id)[:40], user=actor).first()
    if undo is None:
        raise NotFound("Nothing to undo.")
    return undo


def _existing_user_ids(ids: set) -> set:
    """Which of ``ids`` are accounts still there (an author may have been deleted meanwhile)."""
    return set(User.objects.filter(pk__in=[i for i in ids if i is not None]).values_list("pk", flat=True))


def _rows_back(model: type[M], data: list) -> list[M]:
    """The rows of ``model`` a ``_kept`` list holds, as unsaved instances."""
    rows = [kept.object for kept in serializers.deserialize("json", json.dumps(data))]
    return [row for row in rows if isinstance(row, model)]


def _put_back(rows) -> None:
    """Insert rows as they were kept: their own creation times (a raw save skips ``auto_now``)."""
    for row in rows:
        row.save_base(raw=True, force_insert=True)


@dataclass
class UndoReport:
    chat_key: str
    restored: list[str] = field(default_factory=list)
    candidates: int = 0


def chat_forget_undo(*, actor: User, undo_id: str) -> UndoReport:
    """Put a forgotten chat back as it was: its items (same ids, every version, indexed for
    search again), their changes in place and the chat's consolidation records, pending reviews
    included. Only its user, within the undo time (409 ``undo_expired`` after), while the chat
    is still bound to them (404 otherwise). The reads log of the items is not brought back: it
    went for good with them. Items that came back meanwhile under the same ids are left as they
    are."""
    with transaction.atomic():
        undo = _undo_get(actor=actor, undo_id=undo_id)
        if undo.expires_at <= timezone.now():
            raise Conflict(
                "It is too late to undo this: the chat's items are gone for good.", code=ErrorCode.UNDO_EXPIRED
            )
        if not chat_is_bound_to(user=actor, chat_key=undo.chat_key):
            raise NotFound("Chat not found.")
        lock_scope((SCOPE_TYPE_CHAT, undo.chat_key))
        report = UndoReport(chat_key=undo.chat_key)
        memories = _rows_back(Memory, undo.memories)
        memories = [m for m in memories if m.scope_type == SCOPE_TYPE_CHAT and m.scope_id == undo.chat_key]
        taken = set(Memory.objects.filter(pk__in=[m.pk for m in memories]).values_list("pk", flat=True))
        memories = [m for m in memories if m.pk not in taken]
        users = _existing_user_ids({m.created_by_id for m in memories})
        ids = {m.pk for m in memories} | taken
        for memory in memories:
            memory.created_by_id = memory.created_by_id if memory.created_by_id in users else None
            if memory.superseded_by_id and memory.superseded_by_id not in ids:
                memory.superseded_by_id = None  # its newer version is gone: this one ends the chain
        _put_back(memories)
        report.restored = [m.pk for m in memories]
        changes = _rows_back(MemoryChange, undo.changes)
        changes = [c for c in changes if c.memory_id in report.restored]
        users = _existing_user_ids({c.changed_by_id for c in changes})
        for change in changes:
            change.changed_by_id = change.changed_by_id if change.changed_by_id in users else None
        _put_back(changes)
        candidates = _rows_back(MemoryCandidate, undo.candidates)
        present = set(MemoryCandidate.objects.filter(pk__in=[c.pk for c in candidates]).values_list("pk", flat=True))
        users = _existing_user_ids({c.reviewed_by_id for c in candidates})
        kept = []
        for candidate in candidates:
            if candidate.pk in present or (candidate.memory_id and candidate.memory_id not in ids):
                continue
            candidate.reviewed_by_id = candidate.reviewed_by_id if candidate.reviewed_by_id in users else None
            kept.append(candidate)
        _put_back(kept)
        report.candidates = len(kept)
        derived.on_memories_written(created=memories)  # search entries and vectors again
        undo.delete()
    logger.info(
        "forgotten chat restored",
        extra={"actor": actor.pk, "chat_key": report.chat_key, "memories": len(report.restored)},
    )
    return report


def chat_forget_undo_drop(*, actor: User, undo_id: str) -> None:
    """Delete the kept rows now: the chat is forgotten for good at once."""
    with transaction.atomic():
        _undo_get(actor=actor, undo_id=undo_id).delete()


UNDO_PURGE_BATCH = 500


def chat_forget_undos_purge(*, now: datetime | None = None) -> int:
    """Delete the undos whose time is over (the worker, each round; a bounded batch)."""
    ids = list(
        ChatForgetUndo.objects.filter(expires_at__lte=now or timezone.now())
        .order_by("expires_at")
        .values_list("pk", flat=True)[:UNDO_PURGE_BATCH]
    )
    if not ids:
        return 0
    deleted, _ = ChatForgetUndo.objects.filter(pk__in=ids).delete()
    return deleted
