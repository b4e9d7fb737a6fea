"""Conversations (threads), their messages and the tool calls in them (docs/runs.md).

Written by service principals on behalf of a user; a user reads their own.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q
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
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations", verbose_name=_("owner")
    )
    project = models.ForeignKey(
        Project,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="conversations",
        verbose_name=_("project"),
    )
    title = models.CharField(max_length=300, blank=True, verbose_name=_("title"))
    status = models.CharField(
        max_length=16, choices=ConversationStatus.choices, default=ConversationStatus.ACTIVE, verbose_name=_("status")
    )
    source = models.CharField(
        max_length=32, choices=ConversationSource.choices, default=ConversationSource.CHAT, verbose_name=_("source")
    )
    # Set for persisted sub-agent child threads; those never show up in history tools.
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="children",
        verbose_name=_("parent conversation"),
    )
    session_key = models.CharField(max_length=200, blank=True, default="", verbose_name=_("session key"))
    # "Don't remember this chat": its runs get no memory of any kind, nothing is extracted from
    # them, and the history tools of other chats never return its messages (docs/runs.md).
    no_memory = models.BooleanField(default=False, verbose_name=_("don't remember this chat"))
    # The runtime's own name for this conversation (an OpenAI Agents SDK session id): unique per
    # user, so another process finds the same conversation again (docs/integrations.md).
    external_id = models.CharField(max_length=200, blank=True, default="", verbose_name=_("external ID"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("conversation")
        verbose_name_plural = _("conversations")
        ordering = ["-updated_at", "-id"]
        indexes = [
            models.Index(fields=["owner", "status", "-updated_at"], name="conv_owner_idx"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "external_id"], condition=~Q(external_id=""), name="conversation_external_id_unique"
            ),
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
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="messages", verbose_name=_("conversation")
    )
    run = models.ForeignKey(
        "memory_app.AgentRun",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="messages",
        verbose_name=_("run"),
    )
    role = models.CharField(max_length=16, choices=MessageRole.choices, verbose_name=_("role"))
    type = models.CharField(
        max_length=16, choices=MessageType.choices, default=MessageType.TEXT, verbose_name=_("type")
    )
    content = models.TextField(blank=True, verbose_name=_("content"))
    metadata = models.JSONField(default=dict, blank=True, verbose_name=_("metadata"))
    attachments = models.JSONField(default=list, blank=True, verbose_name=_("attachments"))
    images = models.JSONField(default=list, blank=True, verbose_name=_("images"))
    feedback = models.JSONField(default=dict, blank=True, verbose_name=_("feedback"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    # When the message was said, as the runtime reports it (a transcript imported later, a
    # message queued offline); None: when it was stored (``created_at``).
    sent_at = models.DateTimeField(null=True, blank=True, verbose_name=_("sent at"))

    class Meta:
        verbose_name = _("message")
        verbose_name_plural = _("messages")
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["conversation", "created_at", "id"], name="message_conv_idx")]

    def __str__(self):
        return _("%(role)s/%(type)s in %(conversation)s") % {
            "role": self.get_role_display(),
            "type": self.get_type_display(),
            "conversation": self.conversation_id,
        }


class ToolCall(models.Model):
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="tool_calls", verbose_name=_("message"))
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="tool_calls", verbose_name=_("conversation")
    )
    name = models.CharField(max_length=200, verbose_name=_("name"))
    input = models.JSONField(default=dict, blank=True, verbose_name=_("input"))
    output = models.TextField(blank=True, verbose_name=_("output"))
    status = models.CharField(max_length=32, blank=True, default="", verbose_name=_("status"))
    error = models.TextField(blank=True, verbose_name=_("error"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("tool call")
        verbose_name_plural = _("tool calls")
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["conversation", "created_at"], name="toolcall_conv_idx")]

    def __str__(self):
        return f"{self.name} ({self.status})"
