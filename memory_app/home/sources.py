"""The sources of the memory home (docs/home.md) and the one rule of what it holds.

Sources: ``user`` (my memories), ``project:<id>`` (each project I may read), ``notes`` (my
``MEMORY.md``), ``chat:<key>`` (each private chat bound to me), ``shared`` (global items that
were learned in a chat bound to me and shared with everyone, after review or through the
deployment's opt-in: ``Memory.source_chat_key``) and ``auto`` (project memories auto-memory
extracted from my runs; they are also part of their project). Rows are always read through
``memories_visible``, narrowed to those sources (``home_memories``): a service principal's reach
over every chat does not make another person's chat part of its home. "Bound to me" is the one
chat-binding selector, ``chat_keys_bound_to``.
"""

from dataclasses import dataclass

from django.db.models import Q, QuerySet
from django.utils.translation import gettext as _

from config.errors import DomainError, InvalidInput, NotFound
from config.validation import is_valid_id
from identity_app.models import User
from identity_app.permissions import READ, project_ids_with_permission, project_require_permission
from identity_app.session_keys import MAX_SESSION_KEY_LENGTH, ChatAddress
from memory_app.home.errors import ErrorCode
from memory_app.memories.models import Memory, Origin, Tier
from memory_app.memories.selectors import chat_is_bound_to, chat_keys_bound_to, memories_visible
from memory_app.scoped.selectors import bound_chats

MAX_PROJECTS = 50  # projects shown (and searched) in the home; the projects page lists them all
MAX_CHATS = 50
# Rows one export holds, over all sources (the oldest rows of a large source are left out first);
# the overview's capacity says how near a home is to it.
EXPORT_MAX_MEMORIES = 5000

SOURCE_USER, SOURCE_NOTES, SOURCE_AUTO, SOURCE_ALL = "user", "notes", "auto", "all"
SOURCE_SHARED = "shared"  # shared from your chats
SIMPLE_SOURCES = (SOURCE_USER, SOURCE_NOTES, SOURCE_AUTO, SOURCE_SHARED)
SOURCE_PROJECT, SOURCE_CHAT = "project", "chat"


@dataclass(frozen=True)
class SourceRef:
    """One source of the home: ``kind`` and, for a project or a chat, its id or key."""

    kind: str
    ident: str = ""

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.ident}" if self.ident else self.kind


def source_parse(value, *, allow_all: bool = False) -> SourceRef:
    """``user``, ``notes``, ``auto``, ``shared``, ``project:<id>``, ``chat:<key>`` (and ``all``
    where a request may name every source); anything else is a 400 ``invalid_source``."""
    if isinstance(value, str) and len(value) <= MAX_SESSION_KEY_LENGTH + 10:
        if value in SIMPLE_SOURCES or (allow_all and value == SOURCE_ALL):
            return SourceRef(value)
        kind, sep, ident = value.partition(":")
        if sep and kind == SOURCE_PROJECT and is_valid_id(ident):
            return SourceRef(SOURCE_PROJECT, ident)
        if sep and kind == SOURCE_CHAT:
            try:
                address = ChatAddress.parse(ident)
            except DomainError:
                address = None
            if address is not None and address.is_typed and address.chat_key == ident:
                return SourceRef(SOURCE_CHAT, ident)
    names = "user, notes, auto, shared, project:<id>, chat:<key>" + (", all" if allow_all else "")
    raise InvalidInput(f"source must be one of {names}.", code=ErrorCode.INVALID_SOURCE)


def source_of(memory: Memory) -> SourceRef:
    if memory.scope_type == Tier.PROJECT:
        return SourceRef(SOURCE_PROJECT, memory.project_id or "")
    if memory.scope_type == Tier.CHAT:
        return SourceRef(SOURCE_CHAT, memory.scope_id)
    if memory.scope_type == Tier.GLOBAL:
        return SourceRef(SOURCE_SHARED)
    return SourceRef(SOURCE_USER)


def shared_from_chats_q(chat_keys) -> Q:
    """Global items shared from the chats ``chat_keys`` (a list or a values subquery)."""
    return Q(scope_type=Tier.GLOBAL, source_chat_key__in=chat_keys) & ~Q(source_chat_key="")


def _home_q(user: User) -> Q:
    bound = chat_keys_bound_to(user=user)
    return (
        Q(scope_type=Tier.USER, owner=user)
        | Q(scope_type=Tier.PROJECT, project_id__in=project_ids_with_permission(user=user, permission=READ))
        | Q(scope_type=Tier.CHAT, scope_id__in=bound)
        | shared_from_chats_q(bound)
    )


def home_memories(*, user: User) -> QuerySet[Memory]:
    """Every memory of the home, whatever its status: the user's own, their projects', those
    of the private chats bound to them, and the global items shared from those chats (read
    through the visibility rule)."""
    return memories_visible(user=user).filter(_home_q(user)).select_related("created_by")


def home_item_get(*, user: User, memory_id: str) -> Memory:
    memory = home_memories(user=user).filter(pk=str(memory_id)[:40]).first()
    if memory is None:
        raise NotFound("Memory not found.")
    return memory


def auto_q(user: User) -> Q:
    return Q(scope_type=Tier.PROJECT, origin=Origin.AUTO, created_by=user)


def source_memories(*, user: User, source: SourceRef) -> QuerySet[Memory]:
    """The memories of one source (every status). A project the user may not read and a chat
    not bound to them are 404."""
    qs = home_memories(user=user)
    if source.kind == SOURCE_USER:
        return qs.filter(scope_type=Tier.USER)
    if source.kind == SOURCE_PROJECT:
        project = project_require_permission(user=user, project_id=source.ident, permission=READ)
        return qs.filter(scope_type=Tier.PROJECT, project=project)
    if source.kind == SOURCE_CHAT:
        if not chat_is_bound_to(user=user, chat_key=source.ident):
            raise NotFound("Chat not found.")
        return qs.filter(scope_type=Tier.CHAT, scope_id=source.ident)
    if source.kind == SOURCE_AUTO:
        return qs.filter(auto_q(user))
    if source.kind == SOURCE_SHARED:
        return qs.filter(scope_type=Tier.GLOBAL)
    raise InvalidInput("The notes file has no memory rows; open it in the editor.", code=ErrorCode.INVALID_SOURCE)


def chat_names(*, user: User, keys) -> dict[str, str]:
    """The display names the user gave their bound chats (keys without one are left out)."""
    keys = [k for k in keys if k][:MAX_CHATS]
    if not keys:
        return {}
    return dict(
        bound_chats(user=user)
        .filter(chat_key__in=keys)
        .exclude(display_name="")
        .values_list("chat_key", "display_name")
    )


def source_title(source: SourceRef, *, project_name: str = "", chat_names: dict | None = None) -> str:
    if source.kind == SOURCE_USER:
        return _("About me")
    if source.kind == SOURCE_PROJECT:
        return _("Project %(name)s") % {"name": project_name or source.ident}
    if source.kind == SOURCE_CHAT:
        return _("Chat “%(name)s”") % {"name": (chat_names or {}).get(source.ident) or source.ident}
    if source.kind == SOURCE_AUTO:
        return _("Auto-extracted")
    if source.kind == SOURCE_NOTES:
        return _("Notes file")
    if source.kind == SOURCE_SHARED:
        return _("Shared from your chats")
    return _("Everything")
