"""Superseding a memory: a new version under the row lock; the old one points to it."""

from collections.abc import Callable
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from config.errors import Conflict
from config.validation import validate_json_container
from identity_app.models import User
from memory_app.memories import derived
from memory_app.memories.errors import ErrorCode
from memory_app.memories.models import (
    Memory,
    Origin,
    Status,
)
from memory_app.memories.services.rules import (
    KEEP_EXPIRY,
    MAX_JSON_BYTES,
    locked_memory,
    require_write,
    validate_content,
    validate_expires_at,
    validate_kind,
)


def memory_supersede(
    *,
    actor: User,
    memory_id: str,
    content: str,
    kind: str | None = None,
    tier: str | None = None,
    project_id: str | None = None,
    origin: str = Origin.API,
    metadata: dict | None = None,
    evidence: dict | None = None,
    source_thread_id: str | None = None,
    source_chat_key: str | None = None,
    staff_review: bool = False,
    expires_at: datetime | str | None = KEEP_EXPIRY,
    for_user: User | None = None,
    content_guard: Callable[[str], None] | None = None,
) -> Memory:
    """Replace an active memory by a new row; the old row becomes ``superseded`` → new.

    ``expires_at``: the new version's expiry (null: none); by default the old one's. An expired
    row is no longer active for this purpose: 409 ``not_active`` like a superseded one.

    ``tier``/``project_id`` restrict which rows the caller's route may address, so an id of
    another tier or project is a 404. Two concurrent supersedes of one row: the row lock
    serializes them and the second sees a non-active row → 409.
    ``staff_review=True`` (the admin only) replaces the tier write rule by
    ``staff_may_review_memories``. ``for_user``, ``content_guard``: as ``memory_create``'s.
    The new version keeps the old one's store namespace and key.
    """
    content = validate_content(content)
    if content_guard is not None:
        content_guard(content)
    keep_expiry = isinstance(expires_at, str) and expires_at == KEEP_EXPIRY
    new_expiry = None if keep_expiry else validate_expires_at(expires_at)
    metadata = (
        validate_json_container(metadata, field="metadata", code=ErrorCode.INVALID_METADATA, max_bytes=MAX_JSON_BYTES)
        if metadata is not None
        else None
    )
    evidence = (
        validate_json_container(evidence, field="evidence", code=ErrorCode.INVALID_EVIDENCE, max_bytes=MAX_JSON_BYTES)
        if evidence is not None
        else None
    )
    with transaction.atomic():
        old = locked_memory(memory_id=memory_id, tier=tier, project_id=project_id)
        require_write(actor=actor, memory=old, staff_review=staff_review, action="supersede", for_user=for_user)
        return supersede_locked(
            actor=actor,
            old=old,
            kind=kind,
            content=content,
            origin=origin,
            metadata=metadata,
            evidence=evidence,
            source_thread_id=source_thread_id,
            source_chat_key=source_chat_key,
            expires_at=old.expires_at if keep_expiry else new_expiry,
            # A correction of a paused memory stays paused: rewording it is not resuming it.
            paused=old.paused,
        )


def supersede_locked(
    *,
    actor: User,
    old: Memory,
    kind: str | None,
    content: str,
    origin: str,
    metadata: dict | None,
    evidence: dict | None,
    source_thread_id: str | None,
    source_chat_key: str | None,
    expires_at: datetime | None,
    paused: bool = False,
) -> Memory:
    """The supersede of ``old`` (locked, its write rule checked), with validated values."""
    if old.status != Status.ACTIVE:
        raise Conflict(f"Memory is {old.status}; only active memories can be superseded.", code=ErrorCode.NOT_ACTIVE)
    now = timezone.now()
    if old.is_expired(now):
        raise Conflict("Memory has expired; only active memories can be superseded.", code=ErrorCode.NOT_ACTIVE)
    new_kind = validate_kind(kind if kind is not None else old.kind, old.scope_type)
    new = Memory(
        scope_type=old.scope_type,
        scope_id=old.scope_id,
        owner_id=old.owner_id,
        project_id=old.project_id,
        kind=new_kind,
        content=content,
        origin=origin,
        metadata=metadata if metadata is not None else old.metadata,
        evidence=evidence if evidence is not None else old.evidence,
        source_thread_id=(source_thread_id if source_thread_id is not None else old.source_thread_id)[:64],
        source_chat_key=source_chat_key if source_chat_key is not None else old.source_chat_key,
        created_by=actor if actor and actor.is_authenticated else None,
        expires_at=expires_at,
        paused=paused,
        store_namespace=old.store_namespace,
        store_key=old.store_key,
    )
    # Conditional update as a second guard: exactly one supersede can move the row. The old row
    # leaves ``active`` before the new one is written, so a version that keeps the store key never
    # meets its predecessor in the key's unique constraint (the reference to the new row is
    # checked at commit).
    moved = Memory.objects.filter(pk=old.pk, status=Status.ACTIVE).update(
        status=Status.SUPERSEDED, superseded_by_id=new.pk, updated_at=now
    )
    if moved != 1:
        raise Conflict("Memory was superseded concurrently.", code=ErrorCode.NOT_ACTIVE)
    new.save(force_insert=True)
    derived.on_memories_written(created=[new], changed=[old.pk])
    return new
