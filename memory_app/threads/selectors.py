"""Reads of conversations and messages (owners only; service principals within their token's
reach), and the main threads the history tools may read.

Sub-agent threads are never history (``SUBAGENT_SOURCES``)."""

from django.db.models import Count, QuerySet
from django.db.models.functions import Left

from config.errors import NotFound
from identity_app.models import User
from identity_app.permissions import is_service_principal, reach_q
from memory_app.threads.models import (
    Conversation,
    ConversationSource,
    ConversationStatus,
    Message,
    MessageRole,
    MessageType,
)


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
