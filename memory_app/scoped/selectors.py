"""Who may search or read which chat/global scope: the chat reach rule
(``identity_app.chat_reach``, also behind ``memory_visibility_q``), asked for one chat key
that may have no rows yet."""

from django.db.models import QuerySet

from identity_app.chat_reach import chat_require_reach
from identity_app.models import ChatBinding, User
from memory_app.memories.models import Memory, Tier
from memory_app.memories.selectors import memories_visible
from memory_app.scoped.models import MemoryCandidate, ScopeMigrationEntry
from memory_app.scoped.scope import cascade_scopes


def searchable_scopes(*, user: User, session_id: str, acting_for_id: int | None = None) -> list[tuple[str, str]]:
    """The cascade of ``session_id`` if its chat is in the reach of ``user`` (working for the
    user ``acting_for_id``, if given); a chat out of reach is NotFound, as one that does not exist."""
    chat_require_reach(actor=user, session_key=session_id, acting_for_id=acting_for_id)
    return cascade_scopes(session_id)


def bound_chats(*, user: User) -> QuerySet[ChatBinding]:
    return ChatBinding.objects.filter(user=user).order_by("chat_key")


def chat_memories(*, user: User, chat_key: str) -> QuerySet[Memory]:
    """Memories of one chat as ``user`` may see them (the shared visibility selector)."""
    return memories_visible(user=user, tier=Tier.CHAT).filter(scope_id=chat_key).order_by("-created_at", "-id")


def chat_memories_visible(*, user: User, chat_keys: list[str]) -> QuerySet[Memory]:
    """Memories of several chats as ``user`` may see them (the shared visibility selector)."""
    return memories_visible(user=user, tier=Tier.CHAT).filter(scope_id__in=list(chat_keys))


def candidates_for_memories(memory_ids: list[str]) -> QuerySet[MemoryCandidate]:
    """The consolidation records that wrote (or matched) these items, newest first. Callers
    pass ids of items the reader may see."""
    return (
        MemoryCandidate.objects.filter(memory_id__in=list(memory_ids))
        .select_related("reviewed_by")
        .order_by("-created_at", "-id")
    )


def migrations_applied_to(memory_ids: list[str]) -> QuerySet[ScopeMigrationEntry]:
    """Scope-migration entries that moved these items, with their plan."""
    return (
        ScopeMigrationEntry.objects.filter(item_id__in=list(memory_ids), result="applied")
        .select_related("plan")
        .order_by("-plan__applied_at", "-id")
    )
