"""Reads of the agent part: workspace files and the memory switch, conversations and messages
(owners only), the main threads the history tools may read, and runs with their lease state.

A user reads only their own rows; sub-agent threads are never history (``SUBAGENT_SOURCES``)."""

from django.db.models import Count, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Left
from django.utils import timezone

from config.errors import InvalidInput, NotFound
from identity_app.models import User
from identity_app.permissions import is_service_principal, reach_q
from memory_app.agent.models import (
    AgentRun,
    Conversation,
    ConversationSource,
    ConversationStatus,
    Message,
    MessageRole,
    MessageType,
    RunStatus,
    UserSettings,
    WorkspaceChange,
)
from memory_app.agent.workspace import Workspace, WorkspaceFile, read_whole_file, sha256_hex, validate_workspace_name


def workspace_file_get(*, user: User, name: str) -> WorkspaceFile:
    validate_workspace_name(name)
    read = read_whole_file(Workspace(user.pk), name)
    return WorkspaceFile(
        name, read.content.decode("utf-8", errors="replace"), read.size, read.exists, sha256_hex(read.content)
    )


def workspace_changes_visible(*, user: User) -> QuerySet[WorkspaceChange]:
    """The change history of a user's workspace files: their own, nobody else's (not even a
    service principal's, which never reads another user's notes file either)."""
    # Changes of one group commit share a moment; their sequence numbers keep them in order.
    return (
        WorkspaceChange.objects.filter(user=user)
        .select_related("actor", "reverts")
        .defer("reverts__hunks")
        .order_by("-created_at", "-seq", "-id")
    )


def workspace_change_get(*, user: User, change_id: str) -> WorkspaceChange:
    change = workspace_changes_visible(user=user).filter(pk=change_id).first()
    if change is None:
        raise NotFound("Change not found.")
    return change


def user_settings_get(*, user: User) -> UserSettings:
    """The user's settings; an unsaved default row when none exists (reads never write)."""
    found = UserSettings.objects.filter(user=user).first()
    return found if found is not None else UserSettings(user=user)


def memory_enabled_for(*, user_id: int) -> bool:
    value = UserSettings.objects.filter(user_id=user_id).values_list("enable_memory", flat=True).first()
    return memory_enabled_from(value)


def enable_memory_subquery(user_field: str = "user_id") -> Subquery:
    """The stored ``enable_memory`` of the row's user (NULL without a settings row), to read it in
    the same query as the row; ``memory_enabled_from`` turns it into the switch state."""
    return Subquery(UserSettings.objects.filter(user_id=OuterRef(user_field)).values("enable_memory")[:1])


def memory_enabled_from(value) -> bool:
    return UserSettings._meta.get_field("enable_memory").default if value is None else bool(value)


def run_memory_enabled(run) -> bool:
    """The run user's ``enable_memory``, as read with the run by authentication when it was
    (``stored_enable_memory``), else read now."""
    if hasattr(run, "stored_enable_memory"):
        return memory_enabled_from(run.stored_enable_memory)
    return memory_enabled_for(user_id=run.user_id)


def conversations_visible(*, user: User) -> QuerySet[Conversation]:
    """Conversations a caller may read in the API/UI: their own; service principals read all
    within the reach of their token."""
    qs = Conversation.objects.select_related("owner", "project")
    qs = qs if is_service_principal(user) else qs.filter(owner=user)
    return qs.filter(reach_q(user, user_field="owner", project_field="project"))


def conversation_get(*, user: User, conversation_id: str) -> Conversation:
    conversation = conversations_visible(user=user).filter(pk=conversation_id).first()
    if conversation is None:
        raise NotFound("Conversation not found.")
    return conversation


def conversation_messages(*, user: User, conversation_id: str) -> QuerySet[Message]:
    conversation = conversation_get(user=user, conversation_id=conversation_id)
    return conversation.messages.prefetch_related("tool_calls").order_by("created_at", "id")


def conversation_message_list(*, user: User, conversation_id: str, content_chars: int) -> QuerySet[Message]:
    """Messages of a readable conversation for a list: the first ``content_chars`` characters
    of the content as ``content_head``, tool calls counted, nothing large loaded."""
    conversation = conversation_get(user=user, conversation_id=conversation_id)
    return (
        conversation.messages.annotate(content_head=Left("content", content_chars), tool_call_count=Count("tool_calls"))
        .defer("content", "metadata", "attachments", "images", "feedback")
        .order_by("created_at", "id")
    )


def conversation_message_get(*, user: User, conversation_id: str, message_id) -> Message:
    conversation = conversation_get(user=user, conversation_id=conversation_id)
    message = conversation.messages.prefetch_related("tool_calls").filter(pk=int(message_id)).first()
    if message is None:
        raise NotFound("Message not found.")
    return message


# Threads of agent calls, evaluations and sub-agents. Such a thread (or any thread with a
# parent, i.e. a persisted sub-agent child) is never a main-agent thread: history tools do not
# see it and no chat/resume run may execute on it.
SUBAGENT_SOURCES = (ConversationSource.AGENT_CALL, ConversationSource.AGENT_EVALUATION, ConversationSource.SUBAGENT)


def conversation_is_main_thread(conversation: Conversation) -> bool:
    """The rule of ``main_threads`` for one loaded conversation."""
    return conversation.parent_id is None and conversation.source not in SUBAGENT_SOURCES


def main_threads() -> QuerySet[Conversation]:
    """Ordinary threads: no parent and not an agent_call / agent_evaluation / subagent source."""
    return Conversation.objects.filter(parent__isnull=True).exclude(source__in=SUBAGENT_SOURCES)


def history_threads(*, user_id: int) -> QuerySet[Conversation]:
    """Threads the history tools may see: the user's own, active main threads that are not in
    "don't remember this chat" mode (their messages stay indexed, never returned)."""
    return main_threads().filter(owner_id=user_id, status=ConversationStatus.ACTIVE, no_memory=False)


def history_messages(*, user_id: int) -> QuerySet[Message]:
    """Messages the history tools may see: user/assistant text in visible threads only."""
    return Message.objects.filter(
        conversation__in=history_threads(user_id=user_id),
        role__in=(MessageRole.USER, MessageRole.ASSISTANT),
        type=MessageType.TEXT,
    )


# --- runs -------------------------------------------------------------------------------
def run_lease_state(run: AgentRun) -> str:
    """``held`` (running, lease live), ``expired`` (running, claimable) or ``released``."""
    if run.status != RunStatus.RUNNING:
        return "released"
    if run.lease_expires_at is None or run.lease_expires_at <= timezone.now():
        return "expired"
    return "held"


def runs_with_lease_state(qs, state: str, *, now=None):
    """``qs`` narrowed to runs whose ``run_lease_state`` is ``state`` (the same rule as a query)."""
    now = now or timezone.now()
    running = Q(status=RunStatus.RUNNING)
    live = Q(lease_expires_at__isnull=False, lease_expires_at__gt=now)
    if state == "held":
        return qs.filter(running & live)
    if state == "expired":
        return qs.filter(running).exclude(live)
    if state == "released":
        return qs.exclude(running)
    raise InvalidInput("lease state must be held, expired or released.", code="invalid_lease_state")


def runs_visible(*, user: User):
    """Runs a caller may read: their own; service principals read all within the reach of
    their token."""
    qs = AgentRun.objects.select_related("conversation", "user", "project")
    qs = qs if is_service_principal(user) else qs.filter(user=user)
    return qs.filter(reach_q(user, user_field="user", project_field="project"))


def runs_list(*, user: User, text_chars: int):
    """``runs_visible`` for a list: only the first ``text_chars`` characters of ``prompt`` and
    ``goal`` are loaded (``prompt_head``, ``goal_head``)."""
    return (
        runs_visible(user=user)
        .annotate(prompt_head=Left("prompt", text_chars), goal_head=Left("goal", text_chars))
        .defer("prompt", "goal")
        .order_by("-created_at", "-id")
    )


def run_get(*, user: User, run_id: str, own_only: bool = False) -> AgentRun:
    """A run the caller may read, else 404. ``own_only``: the caller's own runs only, even for
    service principals (settings that belong to the run's user, like auto-memory flags)."""
    qs = (
        AgentRun.objects.select_related("conversation", "user", "project")
        .filter(user=user)
        .filter(reach_q(user, user_field="user", project_field="project"))
        if own_only
        else runs_visible(user=user)
    )
    run = qs.filter(pk=str(run_id)[:40]).first()
    if run is None:
        raise NotFound("Run not found.")
    return run
