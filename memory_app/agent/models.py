"""Conversations, messages, tool calls and agent runs (docs/runs.md).

Written by service principals on behalf of a user; a user reads their own.
"""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from identity_app.ids import new_id
from identity_app.models import Project

__all__ = [
    "TOP_LEVEL_RUN_KINDS",
    "AgentRun",
    "Conversation",
    "ConversationSource",
    "ConversationStatus",
    "Message",
    "MessageRole",
    "MessageType",
    "RunKind",
    "RunStatus",
    "ToolCall",
    "UserSettings",
    "WorkspaceChange",
    "WorkspaceChangeAction",
    "WorkspaceChangeSource",
    "run_gets_memory",
    "run_is_top_level",
]


class UserSettings(models.Model):
    """Per-user switches of the main agent; ``enable_memory`` is the one switch for MEMORY.md."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_settings")
    enable_memory = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "user settings"

    def __str__(self):
        return f"settings of {self.user_id}"


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
    run = models.ForeignKey("AgentRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="messages")
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


class RunKind(models.TextChoices):
    CHAT = "chat", _("reply")
    RESUME = "resume", _("continued reply")
    SUBAGENT = "subagent", _("helper task")
    COORDINATOR = "coordinator", _("task that splits the work")
    CHECKPOINT = "checkpoint", _("progress save")


TOP_LEVEL_RUN_KINDS = frozenset({RunKind.CHAT, RunKind.RESUME})


class RunStatus(models.TextChoices):
    QUEUED = "queued", _("waiting")
    RUNNING = "running", _("working")
    COMPLETED = "completed", _("finished")
    FAILED = "failed", _("failed")
    CANCELLED = "cancelled", _("cancelled")


def new_run_id() -> str:
    return new_id("run")


class AgentRun(models.Model):
    id = models.CharField(primary_key=True, max_length=40, default=new_run_id, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="agent_runs")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="runs")
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    request_id = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=RunKind.choices, default=RunKind.CHAT)
    parent_run = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="child_runs")
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED)
    prompt = models.TextField(blank=True)
    goal = models.TextField(blank=True, null=True)  # noqa: DJ001 - no goal (None) differs from an empty one
    # Lease: the worker that owns the run, until when, and which generation of token is valid.
    worker_id = models.CharField(max_length=200, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    lease_generation = models.PositiveIntegerField(default=0)
    run_token_hash = models.CharField(max_length=64, blank=True, default="", db_index=True)
    # Timing and usage.
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    usage = models.JSONField(default=dict, blank=True)
    # Auto-memory per-run overrides (null = inherit the user's setting) and processing marker.
    auto_memory_generate = models.BooleanField(null=True, blank=True)
    auto_memory_use = models.BooleanField(null=True, blank=True)
    auto_memory_processed_at = models.DateTimeField(null=True, blank=True)
    # Part of a stretch of its chat in "don't remember this chat" mode: set when the run starts
    # in that mode, and on every run not yet processed when the mode is turned on. Nothing is
    # ever extracted from such a run, whatever the mode says later (``run_never_extracted``).
    not_remembered = models.BooleanField(default=False)
    # How many times the run's context was assembled: the server decides which call is the
    # first round (identity injection), whatever the runtime sends (docs/runs.md, Context).
    context_rounds = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["user", "-created_at"], name="run_user_idx"),
            models.Index(
                fields=["status", "auto_memory_processed_at", "finished_at"],
                name="run_automemory_sweep_idx",
            ),
        ]

    def __str__(self):
        return f"{self.id} ({self.kind}, {self.status})"


def run_is_top_level(run: AgentRun) -> bool:
    """The one rule for which runs are main-agent runs: ``chat``/``resume`` with no parent run.
    Only these ever receive memory text (the notes file, the memory tools, identity injection,
    scoped items); a run with a parent is a sub-agent whatever its kind says (docs/runs.md)."""
    return run.kind in TOP_LEVEL_RUN_KINDS and run.parent_run_id is None


def top_level_runs_q() -> models.Q:
    """``run_is_top_level`` as a query condition on runs."""
    return models.Q(kind__in=TOP_LEVEL_RUN_KINDS, parent_run__isnull=True)


def run_gets_memory(run: AgentRun) -> bool:
    """The one predicate for memory text in a run's context (the notes file, the memory tools,
    identity injection, scoped items): a top-level run in a conversation that is not in
    "don't remember this chat" mode. Each switch (``enable_memory``, auto-memory ``use``) then
    gates its own source on top of this (docs/runs.md)."""
    return run_is_top_level(run) and not run.conversation.no_memory


def run_never_extracted(run: AgentRun) -> bool:
    """The one rule for "nothing is extracted from this run": it ran in "don't remember this
    chat" mode (stamped), or its chat is in that mode now."""
    return run.not_remembered or run.conversation.no_memory


class WorkspaceChangeSource(models.TextChoices):
    WEB = "web", _("web page")
    API = "api", _("API")
    AGENT = "agent", _("agent run")


class WorkspaceChangeAction(models.TextChoices):
    WRITE = "write", _("saved")
    DELETE = "delete", _("deleted")
    APPEND = "append", _("note added")
    REPLACE = "replace", _("note corrected")
    UNDO = "undo", _("undo")


def new_workspace_change_id() -> str:
    return new_id("wch")


class WorkspaceChange(models.Model):
    """One change of a workspace file (``MEMORY.md``, ``AGENTS.md``, ``USER.md``): who made it,
    when, and the lines it removed and added (docs/runs.md, "Change history").

    Written in the same transaction, under the same per-user lock, as the publish it records, so
    the changes of one file form a chain: ``seq`` counts them, and each one's ``before_sha256`` is
    the previous one's ``after_sha256`` unless the file was changed outside the service. ``hunks``
    is the whole line diff (``[{"old_start", "old", "new_start", "new"}]``, lines with their
    newline), bounded by the 128 KiB cap on both versions; it is what an undo reverses.
    """

    id = models.CharField(primary_key=True, max_length=40, default=new_workspace_change_id, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="workspace_changes")
    name = models.CharField(max_length=16)
    seq = models.PositiveIntegerField()
    action = models.CharField(max_length=16, choices=WorkspaceChangeAction.choices)
    source = models.CharField(max_length=16, choices=WorkspaceChangeSource.choices)
    # Who: the signed-in user or API token holder (web, api), or the agent run (agent).
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    run = models.ForeignKey(AgentRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    run_ref = models.CharField(max_length=40, blank=True, default="")  # kept when the run row is gone
    client = models.CharField(max_length=160, blank=True, default="")  # e.g. the API token's name
    reverts = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reverted_by")
    before_exists = models.BooleanField()
    after_exists = models.BooleanField()
    before_sha256 = models.CharField(max_length=64)
    after_sha256 = models.CharField(max_length=64)
    hunks = models.JSONField(default=list, blank=True)
    # False when the earlier version could not be read whole (changed on disk beyond the cap):
    # the change is listed but cannot be undone.
    diff_complete = models.BooleanField(default=True)
    lines_added = models.PositiveIntegerField(default=0)
    lines_removed = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["user", "name", "seq"], name="workspace_change_seq_uniq")]
        indexes = [models.Index(fields=["user", "-created_at"], name="workspace_change_user_idx")]

    def __str__(self):
        return f"{self.name} #{self.seq} ({self.action}) of {self.user_id}"
