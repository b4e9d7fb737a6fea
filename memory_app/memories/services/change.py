"""Changing a memory in place (``expires_at``, ``paused``): same id, no new version, each
change recorded as a ``MemoryChange``."""

import enum
import logging
from datetime import UTC, datetime, timedelta

from django.db import transaction
from django.utils import timezone

from config.errors import Conflict, InvalidInput
from identity_app.models import User
from memory_app.memories.errors import ErrorCode
from memory_app.memories.models import (
    ChangedField,
    Memory,
    MemoryChange,
    Status,
)
from memory_app.memories.services.rules import (
    IN_PLACE,
    locked_memory,
    require_write,
    validate_expires_at,
    validate_paused,
)

logger = logging.getLogger(__name__)


class NotGiven(enum.Enum):
    """``memory_change``'s "leave this as it is" (``None`` is a value there: no expiry)."""

    NOT_GIVEN = "not given"


NOT_GIVEN = NotGiven.NOT_GIVEN


def _change_value(field: str, value):
    """A changed field's value as ``MemoryChange`` stores it (JSON)."""
    if field == ChangedField.EXPIRES_AT:
        return value.astimezone(UTC).isoformat() if value is not None else None
    return value


# Expiry changes by one actor within this time are one record (its first old value, its last
# new value): an agent that refreshes an item's expiry whenever it uses it (a store with a
# time to live) leaves a record per hour, not per read. Pausing and resuming are each kept.
EXPIRY_CHANGE_COALESCE = timedelta(hours=1)


def _record_change(*, memory: Memory, field: str, old, new, actor: User | None, now: datetime) -> None:
    by = actor if actor is not None and actor.is_authenticated else None
    old, new = _change_value(field, old), _change_value(field, new)
    if field == ChangedField.EXPIRES_AT and by is not None:
        latest = memory.changes.filter(field=field).order_by("-changed_at", "-id").first()
        if latest is not None and latest.changed_by_id == by.pk and now - latest.changed_at < EXPIRY_CHANGE_COALESCE:
            if latest.old_value == new:
                latest.delete()  # back where it was: no change to record
            else:
                latest.new_value, latest.changed_at = new, now
                latest.save(update_fields=["new_value", "changed_at"])
            return
    MemoryChange.objects.create(memory=memory, field=field, old_value=old, new_value=new, changed_by=by, changed_at=now)


def memory_change(
    *,
    actor: User,
    memory_id: str,
    expires_at: datetime | str | NotGiven | None = NOT_GIVEN,
    paused: bool | NotGiven = NOT_GIVEN,
    tier: str | None = None,
    project_id: str | None = None,
) -> Memory:
    """Change a memory in place: its expiry (``expires_at``: a future date-time, or None for
    none) and whether it is paused (``paused``; a paused memory is used by no agent, see
    ``agent_q``). Same id, no new version: each field that really changes is recorded as a
    ``MemoryChange`` (who, when, old → new), the provenance of the change. A value equal to
    the current one records nothing; expiry changes by one actor within
    ``EXPIRY_CHANGE_COALESCE`` are one record.

    The write rule is the tier's (``require_write``): the owner; a project member with
    ``create_task`` (a viewer: 403); service principals and the user a chat is bound to for a
    chat item; global items: staff and service principals. Hidden rows are 404, and
    ``tier``/``project_id`` restrict which rows the caller's route may address like
    ``memory_supersede``. Only the active version of a chain changes (409 ``not_active``); an
    expired one may get a new expiry (or none), which brings it back before it is purged.
    Nothing given is a 400 ``nothing_to_change``; bad values are 400 and change nothing."""
    if expires_at is NOT_GIVEN and paused is NOT_GIVEN:
        raise InvalidInput("Give expires_at, paused or both.", code=ErrorCode.NOTHING_TO_CHANGE)
    wanted: dict[str, object] = {}
    if not isinstance(expires_at, NotGiven):
        wanted[ChangedField.EXPIRES_AT] = validate_expires_at(expires_at)
    if not isinstance(paused, NotGiven):
        wanted[ChangedField.PAUSED] = validate_paused(paused)
    with transaction.atomic():
        memory = locked_memory(memory_id=memory_id, tier=tier, project_id=project_id)
        require_write(actor=actor, memory=memory, action=IN_PLACE)
        if memory.status != Status.ACTIVE:
            raise Conflict(
                f"Memory is {memory.status}; only the active version can be changed.", code=ErrorCode.NOT_ACTIVE
            )
        now = timezone.now()
        changed: list[str] = []
        for field, value in wanted.items():
            old = getattr(memory, field)
            if old == value:
                continue
            setattr(memory, field, value)
            _record_change(memory=memory, field=field, old=old, new=value, actor=actor, now=now)
            changed.append(field)
        if changed:
            memory.save(update_fields=[*changed, "updated_at"])
    if changed:
        logger.info(
            "memory changed in place",
            extra={"memory_id": memory.pk, "fields": changed, "actor": getattr(actor, "pk", None)},
        )
    return memory
