"""Forgetting (physically, with older versions and derived rows), purging what expired, and
archiving."""

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from config.errors import NotFound, TooLarge
from identity_app.models import User
from memory_app.memories import derived
from memory_app.memories.models import (
    Memory,
    Status,
    Tier,
    expired_q,
)
from memory_app.memories.services.rules import (
    locked_memory,
    older_versions_q,
    require_write,
    with_older_versions,
)

logger = logging.getLogger(__name__)


def memory_forget(
    *,
    actor: User,
    memory_id: str,
    tier: str | None = None,
    project_id: str | None = None,
    staff_review: bool = False,
    for_user: User | None = None,
) -> list[str]:
    """Physically delete a memory **and the older versions it replaced**.

    Older versions hold the same fact in older words, so forgetting a memory forgets its
    history too. Later versions (if ``memory_id`` is itself superseded) stay, and nothing
    is left pointing at a deleted row, so every remaining chain stays consistent.
    Returns the deleted ids. ``for_user``: as ``memory_create``'s.
    """
    with transaction.atomic():
        memory = locked_memory(memory_id=memory_id, tier=tier, project_id=project_id)
        require_write(actor=actor, memory=memory, staff_review=staff_review, action="forget", for_user=for_user)
        older = (
            Q(scope_type=memory.scope_type, scope_id=memory.scope_id)
            if staff_review
            else older_versions_q(actor=actor, memory=memory)
        )
        doomed = with_older_versions([memory.pk], within=older)
        derived.on_memories_deleted(doomed)
        Memory.objects.filter(pk__in=doomed).delete()
    logger.info("memory forgotten", extra={"memory_ids": doomed, "actor": getattr(actor, "pk", None)})
    return doomed


MAX_FORGET_MANY = 500


def memory_forget_many(*, actor: User, memory_ids: list[str], for_user: User | None = None) -> list[str]:
    """Forget several memories at once, each as ``memory_forget`` would (the write rule, older
    versions along, derived rows and vectors too), in one transaction: all or nothing. An id
    that is missing, hidden or not the caller's to forget refuses the whole call (404/403) and
    nothing is deleted. At most ``MAX_FORGET_MANY`` ids. Returns the deleted ids.
    ``for_user``: as ``memory_create``'s."""
    ids = list(dict.fromkeys(str(memory_id)[:40] for memory_id in memory_ids))
    if len(ids) > MAX_FORGET_MANY:
        raise TooLarge(f"At most {MAX_FORGET_MANY} memories can be forgotten at once.")
    if not ids:
        return []
    with transaction.atomic():
        memories = list(Memory.objects.select_for_update().filter(pk__in=ids).order_by("pk"))
        if len(memories) != len(ids):
            raise NotFound("Memory not found.")
        # The write rule depends on the actor, the row's scope and (for a global row) the chat it
        # was shared from only: checked once per such group.
        scopes: dict[tuple[str, str, str], Memory] = {}
        for memory in memories:
            shared_from = memory.source_chat_key if memory.scope_type == Tier.GLOBAL else ""
            scopes.setdefault((memory.scope_type, memory.scope_id, shared_from), memory)
        in_scopes = Q(pk__in=[])
        for memory in scopes.values():
            require_write(actor=actor, memory=memory, action="forget", for_user=for_user)
            in_scopes |= older_versions_q(actor=actor, memory=memory)
        doomed = with_older_versions(ids, within=in_scopes)
        derived.on_memories_deleted(doomed)
        Memory.objects.filter(pk__in=doomed).delete()
    logger.info("memories forgotten", extra={"memory_ids": doomed, "actor": getattr(actor, "pk", None)})
    return doomed


PURGE_BATCH = 500


def memories_purge_expired(*, now: datetime | None = None, grace_days: int | None = None) -> list[str]:
    """Delete for good the memories that expired more than ``grace_days`` ago
    (``MEMORY_EXPIRED_GRACE_DAYS``; 0 keeps them as expired), as forgetting would: with the
    older versions they replaced, their search documents, postings and vectors, and what
    registered copies (auto-memory log text, consolidation candidates) hold of them. At most
    ``PURGE_BATCH`` expired rows per call (the worker calls it every round). Returns the
    deleted ids."""
    grace_days = settings.MEMORY_EXPIRED_GRACE_DAYS if grace_days is None else grace_days
    if grace_days <= 0:
        return []
    cutoff = (now or timezone.now()) - timedelta(days=grace_days)
    with transaction.atomic():
        expired = list(
            Memory.objects.select_for_update()
            .filter(expired_q(now=cutoff))
            .order_by("expires_at", "pk")
            .values_list("pk", "scope_type", "scope_id")[:PURGE_BATCH]
        )
        if not expired:
            return []
        in_scopes = Q(pk__in=[])
        for scope_type, scope_id in {(t, i) for _pk, t, i in expired}:
            in_scopes |= Q(scope_type=scope_type, scope_id=scope_id)
        doomed = with_older_versions([pk for pk, _t, _i in expired], within=in_scopes)
        derived.on_memories_deleted(doomed)
        Memory.objects.filter(pk__in=doomed).delete()
    logger.info("expired memories purged", extra={"memory_ids": doomed, "grace_days": grace_days})
    return doomed


def memory_archive(*, actor: User, memory_id: str, tier: str | None = None, scope_id: str | None = None) -> bool:
    """Move an active memory to ``archived`` (it leaves every context and search, stays
    auditable). Returns False when the row was no longer active (a concurrent change won).
    ``tier``/``scope_id`` pin the scope: a row moved to another scope meanwhile is a 404."""
    with transaction.atomic():
        memory = locked_memory(memory_id=memory_id, tier=tier, project_id=None, scope_id=scope_id)
        require_write(actor=actor, memory=memory)
        moved = Memory.objects.filter(pk=memory.pk, status=Status.ACTIVE).update(
            status=Status.ARCHIVED, updated_at=timezone.now()
        )
        if moved:
            derived.on_memories_written(created=[], changed=[memory.pk])
    return bool(moved)
