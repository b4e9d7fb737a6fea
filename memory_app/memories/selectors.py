"""Reads that decide who may see which memory. Every adapter goes through these."""

from django.db.models import Q, QuerySet

from config.errors import NotFound
from identity_app.chat_reach import ALL_CHATS, chat_keys_reachable
from identity_app.models import ChatBinding, User
from identity_app.permissions import READ, acting_for_users_q, project_ids_with_permission, project_require_permission
from memory_app.memories.models import GLOBAL_SCOPE_ID, Memory, ProjectSummary, Tier, agent_q

IDENTITY_CONTEXT_LIMIT = 5
MAX_CHAIN_LENGTH = 1000
PROJECT_SUMMARY_LIMIT = 3
PROJECT_SUMMARY_MAX_CHARS = 8000


def chat_keys_bound_to(*, user: User):
    """Chat keys whose memories ``user`` may read (extended by chat bindings)."""
    return ChatBinding.objects.filter(user=user).values("chat_key")


def chat_is_bound_to(*, user: User, chat_key: str) -> bool:
    """Whether the private chat ``chat_key`` is bound to ``user`` (a service principal's reach
    over every chat does not count: this is about whose chat it is)."""
    return bool(user and user.is_authenticated) and chat_keys_bound_to(user=user).filter(chat_key=chat_key).exists()


def chat_keys_readable_by(*, user: User):
    """The chat read rule: the chat reach rule (``identity_app.chat_reach``) as a list —
    ``ALL_CHATS`` for a service principal with an unlimited token, else the chat keys ``user``
    reaches (a values queryset, usable as a subquery); none for an anonymous user."""
    return chat_keys_reachable(actor=user)


def memory_visibility_q(*, user: User, tier: str | None = None) -> Q:
    """The read rule (docs/tiers.md) for all four tiers, as one filter; with ``tier``, only that
    tier's part (a simpler query that its indexes answer)."""
    if not user or not user.is_authenticated:
        return Q(pk__in=[])
    rule = Q()
    if tier in (None, Tier.USER):
        rule |= Q(scope_type=Tier.USER, owner=user)
    if tier in (None, Tier.PROJECT):
        rule |= Q(scope_type=Tier.PROJECT, project_id__in=project_ids_with_permission(user=user, permission=READ))
    if tier in (None, Tier.CHAT):
        chats = chat_keys_readable_by(user=user)
        rule |= Q(scope_type=Tier.CHAT) if chats is ALL_CHATS else Q(scope_type=Tier.CHAT, scope_id__in=chats)
    if tier in (None, Tier.GLOBAL):
        rule |= Q(scope_type=Tier.GLOBAL, scope_id=GLOBAL_SCOPE_ID)
    if not rule:
        raise ValueError(f"unknown tier {tier!r}")
    return rule


def memories_visible(*, user: User, tier: str | None = None) -> QuerySet[Memory]:
    return Memory.objects.filter(memory_visibility_q(user=user, tier=tier)).select_related("project", "superseded_by")


def user_memories(*, user: User) -> QuerySet[Memory]:
    return memories_visible(user=user, tier=Tier.USER)


def project_memories(*, user: User, project_id: str) -> QuerySet[Memory]:
    project = project_require_permission(user=user, project_id=project_id, permission=READ)
    return memories_visible(user=user, tier=Tier.PROJECT).filter(project=project)


def user_memory_get(*, user: User, memory_id: str) -> Memory:
    memory = user_memories(user=user).filter(pk=memory_id).first()
    if memory is None:
        raise NotFound("Memory not found.")
    return memory


def project_memory_get(*, user: User, project_id: str, memory_id: str) -> Memory:
    memory = project_memories(user=user, project_id=project_id).filter(pk=memory_id).first()
    if memory is None:
        raise NotFound("Memory not found.")
    return memory


def memories_of_users(*, actor: User, users) -> QuerySet[Memory]:
    """The own memories (user tier) of ``users`` that ``actor`` may reach: each user's own key,
    or a service acting for them (``identity_app.permissions.may_act_for_user``)."""
    return Memory.objects.filter(
        acting_for_users_q(actor, user_field="owner"), scope_type=Tier.USER, owner__in=list(users)
    ).select_related("owner")


def memory_of_users_get(*, actor: User, memory_id) -> Memory:
    """One own memory (user tier) of any user ``actor`` may act for, by id; anything else —
    another tier, a user out of reach, no such id — is 404 alike."""
    memory = (
        Memory.objects.filter(acting_for_users_q(actor, user_field="owner"), scope_type=Tier.USER)
        .select_related("owner")
        .filter(pk=str(memory_id)[:40])
        .first()
    )
    if memory is None:
        raise NotFound("Memory not found.")
    return memory


def memory_chain(*, memory: Memory) -> list[Memory]:
    """The supersede chain through ``memory``, oldest first (bounded)."""
    scope = Memory.objects.filter(scope_type=memory.scope_type, scope_id=memory.scope_id)
    back: list[Memory] = []
    current = memory
    for _ in range(MAX_CHAIN_LENGTH):
        previous = scope.filter(superseded_by=current).order_by("created_at").first()
        if previous is None:
            break
        back.append(previous)
        current = previous
    forward: list[Memory] = []
    current = memory
    for _ in range(MAX_CHAIN_LENGTH):
        if not current.superseded_by_id:
            break
        following = scope.filter(pk=current.superseded_by_id).first()
        if following is None:
            break
        forward.append(following)
        current = following
    return [*reversed(back), memory, *forward]


def latest_active(qs: QuerySet[Memory], limit: int = IDENTITY_CONTEXT_LIMIT) -> list[Memory]:
    """The newest ``limit`` of ``qs`` that agents may use (active, unexpired, not paused:
    ``agent_q``), without their related rows (the identity block and its API output read the
    memories' own fields)."""
    return list(qs.filter(agent_q()).select_related(None).order_by("-created_at", "-id")[:limit])


def latest_active_user_memories(*, user, limit: int = IDENTITY_CONTEXT_LIMIT) -> list[Memory]:
    return latest_active(user_memories(user=user), limit)


def latest_active_project_memories(*, user, project_id: str, limit: int = IDENTITY_CONTEXT_LIMIT) -> list[Memory]:
    return latest_active(project_memories(user=user, project_id=project_id), limit)


def project_summaries_for(*, user, project_id: str) -> list[ProjectSummary]:
    project = project_require_permission(user=user, project_id=project_id, permission=READ)
    return list(ProjectSummary.objects.filter(project=project).order_by("-updated_at", "-id")[:PROJECT_SUMMARY_LIMIT])
