"""The rules every write of a tiered memory checks: content, expiry and kind, who may write
which memory (``require_write``, ``scope_for_create``), the row lock, and the chain of older
versions a forget or a move takes along."""

from collections.abc import Callable
from datetime import datetime
from typing import NamedTuple

from django.db.models import Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _

from config.errors import InvalidInput, NotFound, PermissionDenied, TooLarge
from config.instants import SHOWN_LAST, OutOfRange, in_utc
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
from memory_app.memories.errors import ErrorCode
from memory_app.memories.models import (
    GLOBAL_SCOPE_ID,
    IDENTITY_KINDS,
    KIND_VALUES,
    MAX_CONTENT_CHARS,
    Memory,
    Origin,
    Tier,
)
from memory_app.memories.selectors import MAX_CHAIN_LENGTH, chat_is_bound_to, memory_visibility_q

MAX_JSON_BYTES = 8 * 1024


def validate_content(content) -> str:
    """A memory's ``content`` as every writer takes it (the API, the pages, the tools, the
    import): a string holding something besides white space, at most ``MAX_CONTENT_CHARS`` once
    stripped, clean text (``clean_text``). Returns it stripped."""
    if not isinstance(content, str):
        raise InvalidInput(_("content must be a string."), code=ErrorCode.INVALID_CONTENT)
    content = content.strip()
    if not content:
        raise InvalidInput(_("content may not be empty."), code=ErrorCode.INVALID_CONTENT)
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
                "expires_at must be an ISO 8601 date-time, e.g. 2026-12-12T18:00:00+01:00.",
                code=ErrorCode.INVALID_EXPIRES_AT,
            )
        value = parsed
    if not isinstance(value, datetime):
        raise InvalidInput("expires_at must be an ISO 8601 date-time or null.", code=ErrorCode.INVALID_EXPIRES_AT)
    if timezone.is_naive(value):
        raise InvalidInput(
            "expires_at needs a time zone (an offset such as +01:00, or Z for UTC).", code=ErrorCode.INVALID_EXPIRES_AT
        )
    try:
        value = in_utc(value)
    except OutOfRange:
        raise InvalidInput(
            "expires_at lies outside the years 1 to 9999 in UTC.", code=ErrorCode.INVALID_EXPIRES_AT
        ) from None
    if value <= (now or timezone.now()):
        raise InvalidInput("expires_at must be in the future.", code=ErrorCode.INVALID_EXPIRES_AT)
    # Later than every zone can show (9999-12-31T23:59:59Z, written for "never"): kept as the
    # last instant every zone shows, which never comes either (config/instants.py).
    return min(value, SHOWN_LAST)


def kinds_of(tier: str) -> frozenset[str]:
    """The kinds a memory of ``tier`` may have (docs/tiers.md)."""
    return IDENTITY_KINDS if tier in (Tier.USER, Tier.PROJECT) else KIND_VALUES


def validate_kind(kind, tier: str) -> str:
    allowed = kinds_of(tier)
    if kind not in allowed:
        raise InvalidInput(
            f"kind must be one of {', '.join(sorted(allowed))} for the {tier} tier.",
            code=ErrorCode.INVALID_KIND,
        )
    return kind


class NewFields(NamedTuple):
    """The fields of a new memory or version, checked (``validate_new``)."""

    content: str
    kind: str
    expires_at: datetime | None
    metadata: dict
    evidence: dict


def validate_new(
    *,
    content,
    kind,
    tier: str,
    expires_at,
    metadata,
    evidence,
    origin: str,
    content_guard: Callable[[str], None] | None = None,
) -> NewFields:
    """Every check of what a new memory is written with (a create, a keyed write), in one place:
    the text (and the adapter's ``content_guard``), the kind for the tier, the expiry, the JSON
    of metadata and evidence, the origin."""
    content = validate_content(content)
    if content_guard is not None:
        content_guard(content)
    kind = validate_kind(kind, tier)
    checked_expiry = validate_expires_at(expires_at)
    metadata = validate_json_container(
        metadata, field="metadata", code=ErrorCode.INVALID_METADATA, max_bytes=MAX_JSON_BYTES
    )
    evidence = validate_json_container(
        evidence, field="evidence", code=ErrorCode.INVALID_EVIDENCE, max_bytes=MAX_JSON_BYTES
    )
    if origin not in Origin.values:
        raise InvalidInput(f"Unknown origin {origin!r}.", code=ErrorCode.INVALID_ORIGIN)
    return NewFields(content, kind, checked_expiry, metadata, evidence)


def staff_may_review_memories(actor: User) -> bool:
    """Admin review: active staff holding the ``change_memory`` permission may correct or
    forget a memory of any tier (only through ``staff_review=True`` in the admin)."""
    return staff_may(actor, "memory_app.change_memory")


# What the user a private chat is bound to may do with that chat's items: forget and correct
# them. Not archive or move them: a move to global would share a private fact with everyone.
# Pausing and changing the expiry in place (``memory_change``) are corrections too.
IN_PLACE = "change_in_place"
BOUND_USER_CHAT_ACTIONS = frozenset({"forget", "supersede", IN_PLACE})


def forgets_as_source_chat_user(*, actor: User, memory: Memory) -> bool:
    """A global item shared from a chat (``source_chat_key``) may be forgotten by the user that
    chat is bound to, who does not otherwise write global items; correcting it stays staff's."""
    return (
        memory.scope_type == Tier.GLOBAL
        and bool(memory.source_chat_key)
        and not may_write_global(actor)
        and chat_is_bound_to(user=actor, chat_key=memory.source_chat_key)
    )


def older_versions_q(*, actor: User, memory: Memory) -> Q:
    """Which older versions go along when ``memory`` is forgotten: its scope's; for the user of
    the chat it was shared from, only those shared from that same chat (an older global version
    that came from elsewhere is not theirs to forget)."""
    rule = Q(scope_type=memory.scope_type, scope_id=memory.scope_id)
    if forgets_as_source_chat_user(actor=actor, memory=memory):
        rule &= Q(source_chat_key=memory.source_chat_key)
    return rule


def require_write(
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
        if action == "forget" and forgets_as_source_chat_user(actor=actor, memory=memory):
            return
        global_write_require(actor)


def scope_for_create(*, actor, tier: str, project_id, scope_id, for_user: User | None = None) -> dict:
    if tier == Tier.USER:
        if for_user is not None and not may_act_for_user(actor, for_user.pk):
            raise NotFound(f"No active user named {for_user.get_username()!r}.", code=ErrorCode.UNKNOWN_USER)
        owner = actor if for_user is None else for_user
        return {"scope_id": str(owner.pk), "owner": owner, "project": None}
    if tier == Tier.PROJECT:
        if not project_id:
            raise InvalidInput("project_id is required for the project tier.", code=ErrorCode.INVALID_PROJECT)
        project = project_require_permission(user=actor, project_id=project_id, permission=CREATE_TASK)
        return {"scope_id": project.pk, "owner": None, "project": project}
    if tier == Tier.CHAT:
        if not is_service_principal(actor):
            raise PermissionDenied("Only service principals may write chat memories.")
        if not scope_id or scope_id == GLOBAL_SCOPE_ID:
            raise InvalidInput("A chat memory needs a chat key.", code=ErrorCode.INVALID_SCOPE)
        if not chat_in_reach(actor=actor, chat_key=scope_id):
            raise NotFound(CHAT_NOT_FOUND)
        return {"scope_id": scope_id, "owner": None, "project": None}
    if tier == Tier.GLOBAL:
        global_write_require(actor)
        return {"scope_id": GLOBAL_SCOPE_ID, "owner": None, "project": None}
    raise InvalidInput(f"Unknown tier {tier!r}.", code=ErrorCode.INVALID_TIER)


def scope_require_write(*, actor: User, tier: str, scope_id: str | None = None) -> None:
    """The create rule of a chat/global scope, for callers that must check before reading it."""
    scope_for_create(actor=actor, tier=tier, project_id=None, scope_id=scope_id)


def locked_memory(*, memory_id: str, tier: str | None, project_id: str | None, scope_id: str | None = None) -> Memory:
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


def with_older_versions(ids: list[str], *, within: Q) -> list[str]:
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


def validate_paused(value) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput("paused must be true or false.", code=ErrorCode.INVALID_PAUSED)
    return value
