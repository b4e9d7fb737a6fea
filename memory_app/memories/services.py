"""Every write to tiered memories goes through these functions."""

import enum
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _

from config.errors import Conflict, InvalidInput, NotFound, PermissionDenied, TooLarge
from config.validation import clean_text, validate_json_container
from identity_app.chat_reach import CHAT_NOT_FOUND, chat_in_reach
from identity_app.models import User
from identity_app.permissions import (
    CREATE_TASK,
    global_write_require,
    is_service_principal,
    may_act_for_user,
    may_write_global,
    project_require_permission,
    staff_may,
)
from memory_app.memories import derived
from memory_app.memories.keys import STORE_EVIDENCE, store_namespace_encode, validate_store_key
from memory_app.memories.models import (
    GLOBAL_SCOPE_ID,
    IDENTITY_KINDS,
    KIND_VALUES,
    MAX_CONTENT_CHARS,
    ChangedField,
    Memory,
    MemoryChange,
    Origin,
    ProjectSummary,
    Status,
    Tier,
    expired_q,
)
from memory_app.memories.selectors import MAX_CHAIN_LENGTH, chat_is_bound_to, memory_visibility_q

logger = logging.getLogger(__name__)
MAX_JSON_BYTES = 8 * 1024


def validate_content(content) -> str:
    """A memory's ``content`` as every writer takes it (the API, the pages, the tools, the
    import): a string holding something besides white space, at most ``MAX_CONTENT_CHARS`` once
    stripped, clean text (``clean_text``). Returns it stripped."""
    if not isinstance(content, str):
        raise InvalidInput(_("content must be a string."), code="invalid_content")
    content = content.strip()
    if not content:
        raise InvalidInput(_("content may not be empty."), code="invalid_content")
    if len(content) > MAX_CONTENT_CHARS:
        raise TooLarge(_("content is longer than %(n)s characters.") % {"n": MAX_CONTENT_CHARS})
    return clean_text(content, field="content")


# ``memory_supersede(expires_at=KEEP_EXPIRY)``: the new version expires when the old one would.
KEEP_EXPIRY = "keep"


def validate_expires_at(value, *, now: datetime | None = None) -> datetime | None:
    """``expires_at`` as every writer takes it: null (never expires), or an ISO 8601 date-time
    with a time zone that lies in the future."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            parsed = parse_datetime(value.strip())
        except ValueError:
            parsed = None
        if parsed is None:
            raise InvalidInput(
                "expires_at must be an ISO 8601 date-time, e.g. 2026-12-12T18:00:00+01:00.", code="invalid_expires_at"
            )
        value = parsed
    if not isinstance(value, datetime):
        raise InvalidInput("expires_at must be an ISO 8601 date-time or null.", code="invalid_expires_at")
    if timezone.is_naive(value):
        raise InvalidInput(
            "expires_at needs a time zone (an offset such as +01:00, or Z for UTC).", code="invalid_expires_at"
        )
    if value <= (now or timezone.now()):
        raise InvalidInput("expires_at must be in the future.", code="invalid_expires_at")
    return value.astimezone(UTC)


def _validate_kind(kind, tier: str) -> str:
    allowed = IDENTITY_KINDS if tier in (Tier.USER, Tier.PROJECT) else KIND_VALUES
    if kind not in allowed:
        raise InvalidInput(
            f"kind must be one of {', '.join(sorted(allowed))} for the {tier} tier.",
            code="invalid_kind",
        )
    return kind


def staff_may_review_memories(actor: User) -> bool:
    """Admin review: active staff holding the ``change_memory`` permission may correct or
    forget a memory of any tier (only through ``staff_review=True`` in the admin)."""
    return staff_may(actor, "memory_app.change_memory")


# What the user a private chat is bound to may do with that chat's items: forget and correct
# them. Not archive or move them: a move to global would share a private fact with everyone.
# Pausing and changing the expiry in place (``memory_change``) are corrections too.
IN_PLACE = "change_in_place"
BOUND_USER_CHAT_ACTIONS = frozenset({"forget", "supersede", IN_PLACE})


def _forgets_as_source_chat_user(*, actor: User, memory: Memory) -> bool:
    """A global item shared from a chat (``source_chat_key``) may be forgotten by the user that
    chat is bound to, who does not otherwise write global items; correcting it stays staff's."""
    return (
        memory.scope_type == Tier.GLOBAL
        and bool(memory.source_chat_key)
        and not may_write_global(actor)
        and chat_is_bound_to(user=actor, chat_key=memory.source_chat_key)
    )


def _older_versions_q(*, actor: User, memory: Memory) -> Q:
    """Which older versions go along when ``memory`` is forgotten: its scope's; for the user of
    the chat it was shared from, only those shared from that same chat (an older global version
    that came from elsewhere is not theirs to forget)."""
    rule = Q(scope_type=memory.scope_type, scope_id=memory.scope_id)
    if _forgets_as_source_chat_user(actor=actor, memory=memory):
        rule &= Q(source_chat_key=memory.source_chat_key)
    return rule


def _require_write(
    *, actor: User, memory: Memory, staff_review: bool = False, action: str = "change", for_user: User | None = None
) -> None:
    """The write rule (docs/tiers.md). Hidden rows are 404; visible but not writable rows are 403.

    ``action`` names the change (``forget``, ``supersede``, or any other): it matters only for
    chat items, which the user the chat is bound to may forget and correct. ``for_user``: the
    call is about that user's own memories (``may_act_for_user``), not the caller's."""
    if staff_review:
        if not staff_may_review_memories(actor):
            raise PermissionDenied("Only staff with the change_memory permission may review memories.")
        return
    tier = memory.scope_type
    if tier == Tier.USER:
        owner = actor if for_user is None else for_user
        if memory.owner_id != owner.pk or (for_user is not None and not may_act_for_user(actor, for_user.pk)):
            raise NotFound("Memory not found.")
    elif tier == Tier.PROJECT:
        project_require_permission(user=actor, project_id=memory.project_id or "", permission=CREATE_TASK)
    elif tier == Tier.CHAT:
        # Visibility first (a limited service token does not see chats outside its reach).
        if not Memory.objects.filter(memory_visibility_q(user=actor), pk=memory.pk).exists():
            raise NotFound("Memory not found.")
        if is_service_principal(actor):
            return
        if action in BOUND_USER_CHAT_ACTIONS and chat_is_bound_to(user=actor, chat_key=memory.scope_id):
            return
        raise PermissionDenied(
            "Only service principals may change chat memories; the user a chat is bound to may forget "
            "or correct its items."
        )
    elif tier == Tier.GLOBAL:
        if action == "forget" and _forgets_as_source_chat_user(actor=actor, memory=memory):
            return
        global_write_require(actor)


def _scope_for_create(*, actor, tier: str, project_id, scope_id, for_user: User | None = None) -> dict:
    if tier == Tier.USER:
        if for_user is not None and not may_act_for_user(actor, for_user.pk):
            raise NotFound(f"No active user named {for_user.get_username()!r}.", code="unknown_user")
        owner = actor if for_user is None else for_user
        return {"scope_id": str(owner.pk), "owner": owner, "project": None}
    if tier == Tier.PROJECT:
        if not project_id:
            raise InvalidInput("project_id is required for the project tier.", code="invalid_project")
        project = project_require_permission(user=actor, project_id=project_id, permission=CREATE_TASK)
        return {"scope_id": project.pk, "owner": None, "project": project}
    if tier == Tier.CHAT:
        if not is_service_principal(actor):
            raise PermissionDenied("Only service principals may write chat memories.")
        if not scope_id or scope_id == GLOBAL_SCOPE_ID:
            raise InvalidInput("A chat memory needs a chat key.", code="invalid_scope")
        if not chat_in_reach(actor=actor, chat_key=scope_id):
            raise NotFound(CHAT_NOT_FOUND)
        return {"scope_id": scope_id, "owner": None, "project": None}
    if tier == Tier.GLOBAL:
        global_write_require(actor)
        return {"scope_id": GLOBAL_SCOPE_ID, "owner": None, "project": None}
    raise InvalidInput(f"Unknown tier {tier!r}.", code="invalid_tier")


def scope_require_write(*, actor: User, tier: str, scope_id: str | None = None) -> None:
    """The create rule of a chat/global scope, for callers that must check before reading it."""
    _scope_for_create(actor=actor, tier=tier, project_id=None, scope_id=scope_id)


def memory_create(
    *,
    actor: User,
    tier: str,
    kind: str,
    content: str,
    project_id: str | None = None,
    scope_id: str | None = None,
    origin: str = Origin.API,
    metadata: dict | None = None,
    evidence: dict | None = None,
    source_thread_id: str = "",
    expires_at: datetime | str | None = None,
    source_chat_key: str = "",
    for_user: User | None = None,
    content_guard: Callable[[str], None] | None = None,
    paused: bool = False,
) -> Memory:
    """``source_chat_key``: the typed chat a chat/global item was learned in (only the scoped
    services set it, from the session key). ``for_user``: a user-tier memory of that user
    rather than of ``actor`` (``may_act_for_user``: a service principal acting for them).
    ``content_guard(content)`` may refuse the text (an adapter's secret guard) before anything
    is written. ``paused``: written paused (an import of a paused item), used by no agent until
    resumed."""
    content = validate_content(content)
    if content_guard is not None:
        content_guard(content)
    kind = _validate_kind(kind, tier)
    expires_at = validate_expires_at(expires_at)
    metadata = validate_json_container(metadata, field="metadata", max_bytes=MAX_JSON_BYTES)
    evidence = validate_json_container(evidence, field="evidence", max_bytes=MAX_JSON_BYTES)
    if origin not in Origin.values:
        raise InvalidInput(f"Unknown origin {origin!r}.", code="invalid_origin")
    paused = _validate_paused(paused)
    with transaction.atomic():
        scope = _scope_for_create(actor=actor, tier=tier, project_id=project_id, scope_id=scope_id, for_user=for_user)
        memory = Memory(
            scope_type=tier,
            kind=kind,
            content=content,
            origin=origin,
            metadata=metadata,
            evidence=evidence,
            source_thread_id=(source_thread_id or "")[:64],
            source_chat_key=source_chat_key if tier in (Tier.CHAT, Tier.GLOBAL) else "",
            created_by=actor if actor and actor.is_authenticated else None,
            expires_at=expires_at,
            paused=paused,
            **scope,
        )
        memory.save(force_insert=True)
        derived.on_memories_written(created=[memory])
    return memory


def _locked_memory(*, memory_id: str, tier: str | None, project_id: str | None, scope_id: str | None = None) -> Memory:
    qs = Memory.objects.select_for_update().filter(pk=str(memory_id))
    if tier:
        qs = qs.filter(scope_type=tier)
    if scope_id is not None:
        qs = qs.filter(scope_id=scope_id)
    if project_id is not None:
        qs = qs.filter(project_id=str(project_id))
    memory = qs.first()
    if memory is None:
        raise NotFound("Memory not found.")
    return memory


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
        validate_json_container(metadata, field="metadata", max_bytes=MAX_JSON_BYTES) if metadata is not None else None
    )
    evidence = (
        validate_json_container(evidence, field="evidence", max_bytes=MAX_JSON_BYTES) if evidence is not None else None
    )
    with transaction.atomic():
        old = _locked_memory(memory_id=memory_id, tier=tier, project_id=project_id)
        _require_write(actor=actor, memory=old, staff_review=staff_review, action="supersede", for_user=for_user)
        return _supersede_locked(
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


def _supersede_locked(
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
        raise Conflict(f"Memory is {old.status}; only active memories can be superseded.", code="not_active")
    now = timezone.now()
    if old.is_expired(now):
        raise Conflict("Memory has expired; only active memories can be superseded.", code="not_active")
    new_kind = _validate_kind(kind if kind is not None else old.kind, old.scope_type)
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
        raise Conflict("Memory was superseded concurrently.", code="not_active")
    new.save(force_insert=True)
    derived.on_memories_written(created=[new], changed=[old.pk])
    return new


class NotGiven(enum.Enum):
    """``memory_change``'s "leave this as it is" (``None`` is a value there: no expiry)."""

    NOT_GIVEN = "not given"


NOT_GIVEN = NotGiven.NOT_GIVEN


def _validate_paused(value) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput("paused must be true or false.", code="invalid_paused")
    return value


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

    The write rule is the tier's (``_require_write``): the owner; a project member with
    ``create_task`` (a viewer: 403); service principals and the user a chat is bound to for a
    chat item; global items: staff and service principals. Hidden rows are 404, and
    ``tier``/``project_id`` restrict which rows the caller's route may address like
    ``memory_supersede``. Only the active version of a chain changes (409 ``not_active``); an
    expired one may get a new expiry (or none), which brings it back before it is purged.
    Nothing given is a 400 ``nothing_to_change``; bad values are 400 and change nothing."""
    if expires_at is NOT_GIVEN and paused is NOT_GIVEN:
        raise InvalidInput("Give expires_at, paused or both.", code="nothing_to_change")
    wanted: dict[str, object] = {}
    if not isinstance(expires_at, NotGiven):
        wanted[ChangedField.EXPIRES_AT] = validate_expires_at(expires_at)
    if not isinstance(paused, NotGiven):
        wanted[ChangedField.PAUSED] = _validate_paused(paused)
    with transaction.atomic():
        memory = _locked_memory(memory_id=memory_id, tier=tier, project_id=project_id)
        _require_write(actor=actor, memory=memory, action=IN_PLACE)
        if memory.status != Status.ACTIVE:
            raise Conflict(f"Memory is {memory.status}; only the active version can be changed.", code="not_active")
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


def _with_older_versions(ids: list[str], *, within: Q) -> list[str]:
    """``ids`` and, locked, every older version they replaced (walking ``superseded_by`` back,
    at most ``MAX_CHAIN_LENGTH`` steps), among the rows ``within`` allows. The one chain walk of
    forgetting, purging and moving a memory."""
    found, frontier = list(ids), list(ids)
    for _step in range(MAX_CHAIN_LENGTH):
        frontier = list(
            Memory.objects.select_for_update()
            .filter(within, superseded_by_id__in=frontier)
            .exclude(pk__in=found)
            .values_list("pk", flat=True)
        )
        if not frontier:
            break
        found.extend(frontier)
    return found


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
        memory = _locked_memory(memory_id=memory_id, tier=tier, project_id=project_id)
        _require_write(actor=actor, memory=memory, staff_review=staff_review, action="forget", for_user=for_user)
        older = (
            Q(scope_type=memory.scope_type, scope_id=memory.scope_id)
            if staff_review
            else _older_versions_q(actor=actor, memory=memory)
        )
        doomed = _with_older_versions([memory.pk], within=older)
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
            _require_write(actor=actor, memory=memory, action="forget", for_user=for_user)
            in_scopes |= _older_versions_q(actor=actor, memory=memory)
        doomed = _with_older_versions(ids, within=in_scopes)
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
        doomed = _with_older_versions([pk for pk, _t, _i in expired], within=in_scopes)
        derived.on_memories_deleted(doomed)
        Memory.objects.filter(pk__in=doomed).delete()
    logger.info("expired memories purged", extra={"memory_ids": doomed, "grace_days": grace_days})
    return doomed


def project_summary_create(*, actor, project_id: str, content: str, title: str = "") -> ProjectSummary:
    if not isinstance(content, str) or not content.strip():
        raise InvalidInput("content may not be empty.", code="invalid_content")
    with transaction.atomic():
        project = project_require_permission(user=actor, project_id=project_id, permission=CREATE_TASK)
        summary = ProjectSummary(project=project, title=title, content=content.strip(), created_by=actor)
        summary.full_clean()
        summary.save()
    return summary


def memory_archive(*, actor: User, memory_id: str, tier: str | None = None, scope_id: str | None = None) -> bool:
    """Move an active memory to ``archived`` (it leaves every context and search, stays
    auditable). Returns False when the row was no longer active (a concurrent change won).
    ``tier``/``scope_id`` pin the scope: a row moved to another scope meanwhile is a 404."""
    with transaction.atomic():
        memory = _locked_memory(memory_id=memory_id, tier=tier, project_id=None, scope_id=scope_id)
        _require_write(actor=actor, memory=memory)
        moved = Memory.objects.filter(pk=memory.pk, status=Status.ACTIVE).update(
            status=Status.ARCHIVED, updated_at=timezone.now()
        )
        if moved:
            derived.on_memories_written(created=[], changed=[memory.pk])
    return bool(moved)


def memory_rescope(*, actor: User, memory_id: str, from_scope: tuple[str, str], to_scope: tuple[str, str]) -> Memory:
    """Move a chat/global memory between those two tiers (scope migration, docs/scoped-memory.md).

    The caller locks and checks the row first; this re-checks ``from_scope`` under the lock
    so a row changed since then is a Conflict, never a silent move.
    """
    if from_scope[0] not in (Tier.CHAT, Tier.GLOBAL) or to_scope[0] not in (Tier.CHAT, Tier.GLOBAL):
        raise InvalidInput("Only chat and global memories can change scope.", code="invalid_scope")
    if to_scope[0] == Tier.CHAT and (not to_scope[1] or to_scope[1] == GLOBAL_SCOPE_ID):
        raise InvalidInput("A chat memory needs a chat key.", code="invalid_scope")
    if to_scope[0] == Tier.GLOBAL and to_scope[1] != GLOBAL_SCOPE_ID:
        raise InvalidInput("The global scope id is __global__.", code="invalid_scope")
    with transaction.atomic():
        memory = _locked_memory(memory_id=memory_id, tier=None, project_id=None)
        _require_write(actor=actor, memory=memory)
        if (memory.scope_type, memory.scope_id) != tuple(from_scope):
            raise Conflict("Memory changed scope concurrently.", code="stale")
        # Older versions move along, so the supersede chain (and forgetting it) stays whole.
        moving = _with_older_versions([memory.pk], within=Q(scope_type=from_scope[0], scope_id=from_scope[1]))
        Memory.objects.filter(pk__in=moving).update(
            scope_type=to_scope[0], scope_id=to_scope[1], updated_at=timezone.now()
        )
        derived.on_memories_written(created=[], changed=moving)
        memory.refresh_from_db()
    return memory


# --- the store: memories addressed by namespace and key (docs/integrations.md) ---------------
KEYED_CREATED, KEYED_REPLACED, KEYED_UNCHANGED, KEYED_REFRESHED = "created", "replaced", "unchanged", "refreshed"
KEYED_ATTEMPTS = 20


@dataclass(frozen=True)
class KeyedWrite:
    memory: Memory
    outcome: str  # KEYED_CREATED, KEYED_REPLACED, KEYED_UNCHANGED or KEYED_REFRESHED


def _store_evidence(evidence: dict, *, first: Memory | None) -> dict:
    """What a keyed version records of its key: when the key was first written (its first
    version's time, carried from version to version)."""
    kept = dict(evidence.get(STORE_EVIDENCE) or {}) if isinstance(evidence.get(STORE_EVIDENCE), dict) else {}
    if first is not None:
        previous = first.evidence.get(STORE_EVIDENCE) if isinstance(first.evidence, dict) else None
        since = previous.get("created_at") if isinstance(previous, dict) else None
        kept["created_at"] = since if isinstance(since, str) else first.created_at.isoformat()
    return {**evidence, STORE_EVIDENCE: kept} if kept else evidence


def memory_put_keyed(
    *,
    actor: User,
    tier: str,
    namespace: Sequence[str],
    key: str,
    content: str,
    kind: str,
    metadata: dict | None = None,
    evidence: dict | None = None,
    expires_at: datetime | str | None = None,
    project_id: str | None = None,
    scope_id: str | None = None,
    for_user: User | None = None,
    origin: str = Origin.API,
    content_guard: Callable[[str], None] | None = None,
    adopt_id: str | None = None,
) -> KeyedWrite:
    """Write the memory a scope holds under ``namespace`` and ``key``: created when the key is
    new (or its memory has expired: that one is forgotten first), a correction (a new version,
    the key kept) when its content, kind or metadata changes, its expiry set in place when only
    that changes, nothing when nothing does. The create and write rules are those of
    ``memory_create`` and ``memory_supersede``. Two writers of one new key make one memory: the
    key's unique constraint refuses the second insert, which then corrects the first.
    ``adopt_id``: when the key is new, a memory of the scope written without a key (addressed by
    its id until now) is the one corrected, and its new version takes the key."""
    encoded = store_namespace_encode(namespace)
    key = validate_store_key(key)
    content = validate_content(content)
    if content_guard is not None:
        content_guard(content)
    kind = _validate_kind(kind, tier)
    expiry = validate_expires_at(expires_at)
    metadata = validate_json_container(metadata, field="metadata", max_bytes=MAX_JSON_BYTES)
    evidence = validate_json_container(evidence, field="evidence", max_bytes=MAX_JSON_BYTES)
    if origin not in Origin.values:
        raise InvalidInput(f"Unknown origin {origin!r}.", code="invalid_origin")
    # Each refused insert means another writer of the key committed first: take turns until
    # this write lands on the version they left (bounded; one writer commits per round).
    for attempt in range(1, KEYED_ATTEMPTS + 1):
        try:
            with transaction.atomic():
                return _put_keyed_locked(
                    actor=actor,
                    tier=tier,
                    encoded=encoded,
                    key=key,
                    values={"content": content, "kind": kind, "metadata": metadata, "expires_at": expiry},
                    evidence=evidence,
                    origin=origin,
                    scope=_scope_for_create(
                        actor=actor, tier=tier, project_id=project_id, scope_id=scope_id, for_user=for_user
                    ),
                    for_user=for_user,
                    adopt_id=adopt_id,
                )
        except IntegrityError:
            if attempt == KEYED_ATTEMPTS:
                raise Conflict("The key was written concurrently; try again.", code="conflict") from None
    raise AssertionError("unreachable")


def _put_keyed_locked(
    *,
    actor: User,
    tier: str,
    encoded: str,
    key: str,
    values: dict,
    evidence: dict,
    origin: str,
    scope: dict,
    for_user: User | None,
    adopt_id: str | None,
) -> KeyedWrite:
    in_scope = Q(scope_type=tier, scope_id=scope["scope_id"])
    existing = (
        Memory.objects.select_for_update()
        .filter(in_scope, store_namespace=encoded, store_key=key, status=Status.ACTIVE)
        .first()
    )
    if existing is None and adopt_id:
        existing = (
            Memory.objects.select_for_update()
            .filter(in_scope, pk=adopt_id, store_namespace="", store_key="", status=Status.ACTIVE)
            .first()
        )
    now = timezone.now()
    if existing is not None and existing.is_expired(now):
        # An expired key is gone for its reader: the new write starts it again.
        _require_write(actor=actor, memory=existing, action="forget", for_user=for_user)
        doomed = _with_older_versions([existing.pk], within=in_scope)
        derived.on_memories_deleted(doomed)
        Memory.objects.filter(pk__in=doomed).delete()
        existing = None
    if existing is None:
        memory = Memory(
            scope_type=tier,
            origin=origin,
            evidence=_store_evidence(evidence, first=None),
            created_by=actor if actor and actor.is_authenticated else None,
            store_namespace=encoded,
            store_key=key,
            **values,
            **scope,
        )
        memory.save(force_insert=True)
        derived.on_memories_written(created=[memory])
        return KeyedWrite(memory=memory, outcome=KEYED_CREATED)
    _require_write(actor=actor, memory=existing, action="supersede", for_user=for_user)
    same = all(getattr(existing, name) == values[name] for name in ("content", "kind", "metadata"))
    if same and existing.expires_at == values["expires_at"]:
        return KeyedWrite(memory=existing, outcome=KEYED_UNCHANGED)
    if same:
        # Only the expiry moved (a time to live written again): the same version, in place.
        Memory.objects.filter(pk=existing.pk).update(expires_at=values["expires_at"], updated_at=now)
        existing.expires_at, existing.updated_at = values["expires_at"], now
        return KeyedWrite(memory=existing, outcome=KEYED_REFRESHED)
    new = _supersede_locked(
        actor=actor,
        old=existing,
        kind=values["kind"],
        content=values["content"],
        origin=origin,
        metadata=values["metadata"],
        evidence=_store_evidence(evidence, first=existing),
        source_thread_id=None,
        source_chat_key=None,
        expires_at=values["expires_at"],
        paused=existing.paused,  # a new value is a correction: a paused memory stays paused
    )
    if (new.store_namespace, new.store_key) != (encoded, key):  # an adopted memory takes the key
        Memory.objects.filter(pk=new.pk).update(store_namespace=encoded, store_key=key)
        new.store_namespace, new.store_key = encoded, key
    return KeyedWrite(memory=new, outcome=KEYED_REPLACED)


def memories_expiry_extend(*, actor: User, memories: Sequence[Memory], minutes_of: Callable[[Memory], float | None]):
    """Move the expiry of ``memories`` to now plus ``minutes_of(memory)`` minutes, in place (a
    time to live refreshed by reading, docs/integrations.md), for the rows ``actor`` may change;
    the others, and rows whose ``minutes_of`` is None, stay as they are. One statement per
    distinct time to live."""
    now = timezone.now()
    by_minutes: dict[float, list[str]] = {}
    allowed: dict[tuple[str, str], bool] = {}
    for memory in memories:
        minutes = minutes_of(memory)
        if minutes is None or memory.status != Status.ACTIVE or memory.is_expired(now):
            continue
        scope = (memory.scope_type, memory.scope_id)
        if scope not in allowed:
            try:
                _require_write(actor=actor, memory=memory, action="supersede", for_user=memory.owner)
                allowed[scope] = True
            except (NotFound, PermissionDenied):
                allowed[scope] = False
        if allowed[scope]:
            by_minutes.setdefault(float(minutes), []).append(memory.pk)
    for minutes, ids in by_minutes.items():
        Memory.objects.filter(pk__in=ids, status=Status.ACTIVE).update(
            expires_at=now + timedelta(minutes=minutes), updated_at=now
        )
    return sum(len(ids) for ids in by_minutes.values())
