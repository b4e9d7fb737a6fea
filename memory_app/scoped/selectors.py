"""Who may search or read which chat/global scope: the chat rule of
``memory_app.memories.selectors`` (``chat_keys_readable_by``, also behind
``memory_visibility_q``), asked for one chat key that may have no rows yet."""

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from config.errors import NotFound, PermissionDenied
from identity_app.models import ChatBinding
from identity_app.permissions import is_service_principal
from memory_app.memories.models import Memory, Tier
from memory_app.memories.selectors import ALL_CHATS, chat_keys_readable_by, memories_visible
from memory_app.scoped.models import MemoryCandidate, ScopeMigrationEntry
from memory_app.scoped.scope import SCOPE_TYPE_CHAT, cascade_scopes


def chat_scope_readable(*, user: AbstractBaseUser, chat_key: str) -> bool:
    chats = chat_keys_readable_by(user=user)
    return chats is ALL_CHATS or chats.filter(chat_key=chat_key).exists()


def searchable_scopes(*, user: AbstractBaseUser, session_id: str) -> list[tuple[str, str]]:
    """The cascade of ``session_id`` if ``user`` may read all of it, else PermissionDenied
    (NotFound for a service principal whose limited token does not reach the chat)."""
    scopes = cascade_scopes(session_id)
    for scope_type, scope_id in scopes:
        if scope_type == SCOPE_TYPE_CHAT and not chat_scope_readable(user=user, chat_key=scope_id):
            if is_service_principal(user):
                raise NotFound("Chat not found.")
            raise PermissionDenied("This chat is not bound to you.", code="chat_not_accessible")
    return scopes


def bound_chats(*, user: AbstractBaseUser) -> QuerySet[ChatBinding]:
    return ChatBinding.objects.filter(user=user).order_by("chat_key")


def chat_memories(*, user: AbstractBaseUser, chat_key: str) -> QuerySet[Memory]:
    """Memories of one chat as ``user`` may see them (the shared visibility selector)."""
    return memories_visible(user=user, tier=Tier.CHAT).filter(scope_id=chat_key).order_by("-created_at", "-id")


def chat_memories_visible(*, user: AbstractBaseUser, chat_keys: list[str]) -> QuerySet[Memory]:
    """Memories of several chats as ``user`` may see them (the shared visibility selector)."""
    return memories_visible(user=user, tier=Tier.CHAT).filter(scope_id__in=list(chat_keys))


def candidates_for_memories(memory_ids: list[str]) -> QuerySet[MemoryCandidate]:
    """The consolidation records that wrote (or matched) these items, newest first. Callers
    pass ids of items the reader may see."""
    return MemoryCandidate.objects.filter(memory_id__in=list(memory_ids)).order_by("-created_at", "-id")


def migrations_applied_to(memory_ids: list[str]) -> QuerySet[ScopeMigrationEntry]:
    """Scope-migration entries that moved these items, with their plan."""
    return (
        ScopeMigrationEntry.objects.filter(item_id__in=list(memory_ids), result="applied")
        .select_related("plan")
        .order_by("-plan__applied_at", "-id")
    )
