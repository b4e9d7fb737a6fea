"""Conversations (threads), their messages and the tool calls in them (docs/runs.md).

Written by service principals on behalf of a user; a user reads their own.
"""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from identity_app.ids import new_id
from identity_app.models import Project

__all__ = [
    "Conversation",
    "ConversationSource",
    "ConversationStatus",
    "Message",
    "MessageRole",
    "MessageType",
    "ToolCall",
]


class ConversationStatus(models.TextChoices):
    ACTIVE = "active", _("active")
    ARCHIVED = "archived", _("archived")
    DELETED = "deleted", _("deleted")


class ConversationSource(models.TextChoices):
    CHAT = "chat", _("chat")
    API = "api", _("API")
    AGENT_CALL = "agent_call", _("called by an agent")
    AGENT_EVALUATION = "agent_evaluation", _("agent evaluation")
    SUBAGENT = "subagent", _("helper task")
    CRON = "cron", _("scheduled")


def new_conversation_id() -> str:
    return new_id("thr")


class Conversation(models.Model):
    id = models.CharField(primary_key=True, max_length=40, default=new_conversation_id, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations")
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.SET_NULL, related_name="conversations")
    title = models.CharField(max_length=300, blank=True)
    status = models.CharField(max_length=16, choices=ConversationStatus.choices, default=ConversationStatus.ACTIVE)
    source = models.CharField(max_length=32, choices=ConversationSource.choices, default=ConversationSource.CHAT)
    # Set for persisted sub-agent child threads; those never show up in history tools.
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="children")
    session_key = models.CharField(max_length=200, blank=True, default="")
    # "Don't remember this chat": its runs get no memory of any kind, nothing is extracted from
    # them, and the history tools of other chats never return its messages (docs/runs.md).
    no_memory = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-id"]
        indexes = [
            models.Index(fields=["owner", "status", "-updated_at"], name="conv_owner_idx"),
        ]

    def __str__(self):
        return self.title or self.id


class MessageRole(models.TextChoices):
    USER = "user", _("you")
    ASSISTANT = "assistant", _("agent")
    SYSTEM = "system", _("system")
    TOOL = "tool", _("tool")


class MessageType(models.TextChoices):
    TEXT = "text", _("text")
    TOOL_CALL = "tool_call", _("tool call")
    TOOL_RESULT = "tool_result", _("tool result")
    IMAGE = "image", _("image")
    FILE = "file", _("file")
    EVENT = "event", _("event")
    INTER_RUN = "inter_run", _("message from another task")


class Message(models.Model):
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    run = models.ForeignKey(
        "memory_app.AgentRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="messages"
    )
    role = models.CharField(max_length=16, choices=MessageRole.choices)
    type = models.CharField(max_length=16, choices=MessageType.choices, default=MessageType.TEXT)
    content = models.TextField(blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    attachments = models.JSONField(default=list, blank=True)
    images = models.JSONField(default=list, blank=True)
    feedback = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # When the message was said, as the runtime reports it (a transcript imported later, a
    # message queued offline); None: when it was stored (``created_at``).
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["conversation", "created_at", "id"], name="message_conv_idx")]

    def __str__(self):
        return f"{self.role}/{self.type} in {self.conversation_id}"


class ToolCall(models.Model):
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="tool_calls")
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="tool_calls")
    name = models.CharField(max_length=200)
    input = models.JSONField(default=dict, blank=True)
    output = models.TextField(blank=True)
    status = models.CharField(max_length=32, blank=True, default="")
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["conversation", "created_at"], name="toolcall_conv_idx")]

    def __str__(self):
        return f"{self.name} ({self.status})"
