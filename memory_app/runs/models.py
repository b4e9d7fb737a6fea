"""Agent runs and their leases (docs/runs.md), and the rules for which runs get memory.

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
    "RunKind",
    "RunStatus",
    "run_gets_memory",
    "run_is_top_level",
    "run_reaches_user",
]


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
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="agent_runs", verbose_name=_("user")
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("created by"),
    )
    conversation = models.ForeignKey(
        "memory_app.Conversation", on_delete=models.CASCADE, related_name="runs", verbose_name=_("conversation")
    )
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs", verbose_name=_("project")
    )
    request_id = models.CharField(max_length=100, verbose_name=_("request ID"))
    kind = models.CharField(max_length=16, choices=RunKind.choices, default=RunKind.CHAT, verbose_name=_("kind"))
    parent_run = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="child_runs",
        verbose_name=_("parent run"),
    )
    status = models.CharField(
        max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED, verbose_name=_("status")
    )
    prompt = models.TextField(blank=True, verbose_name=_("prompt"))
    goal = models.TextField(blank=True, null=True, verbose_name=_("goal"))  # noqa: DJ001 - no goal (None) differs from an empty one
    # Lease: the worker that owns the run, until when, and which generation of token is valid.
    worker_id = models.CharField(max_length=200, blank=True, default="", verbose_name=_("worker"))
    lease_expires_at = models.DateTimeField(null=True, blank=True, verbose_name=_("lease expires at"))
    lease_generation = models.PositiveIntegerField(default=0, verbose_name=_("lease generation"))
    run_token_hash = models.CharField(
        max_length=64, blank=True, default="", db_index=True, verbose_name=_("run token hash")
    )
    # Timing and usage.
    started_at = models.DateTimeField(null=True, blank=True, verbose_name=_("started at"))
    finished_at = models.DateTimeField(null=True, blank=True, verbose_name=_("finished at"))
    usage = models.JSONField(default=dict, blank=True, verbose_name=_("usage"))
    # Auto-memory per-run overrides (null = inherit the user's setting) and processing marker.
    auto_memory_generate = models.BooleanField(null=True, blank=True, verbose_name=_("auto-memory: generate"))
    auto_memory_use = models.BooleanField(null=True, blank=True, verbose_name=_("auto-memory: use"))
    auto_memory_processed_at = models.DateTimeField(null=True, blank=True, verbose_name=_("auto-memory processed at"))
    # Part of a stretch of its chat in "don't remember this chat" mode: set when the run starts
    # in that mode, and on every run not yet processed when the mode is turned on. Nothing is
    # ever extracted from such a run, whatever the mode says later (``run_never_extracted``).
    not_remembered = models.BooleanField(default=False, verbose_name=_("not remembered"))
    # Started or last taken over through a token limited to projects, which works inside them
    # only: the run reaches none of its user's own things (``run_reaches_user``).
    within_project = models.BooleanField(default=False, verbose_name=_("within its project only"))
    # How many times the run's context was assembled: the server decides which call is the
    # first round (identity injection), whatever the runtime sends (docs/runs.md, Context).
    context_rounds = models.PositiveIntegerField(default=0, verbose_name=_("context rounds"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("agent run")
        verbose_name_plural = _("agent runs")
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["user", "-created_at"], name="run_user_idx"),
            models.Index(
                fields=["status", "auto_memory_processed_at", "finished_at"],
                name="run_automemory_sweep_idx",
            ),
        ]

    def __str__(self):
        return f"{self.id} ({self.get_kind_display()}, {self.get_status_display()})"


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


def run_reaches_user(run: AgentRun) -> bool:
    """The one predicate for what is the user's own and no project's in a run's context and
    tools: the workspace's files (``AGENTS.md``, ``USER.md``, the notes file), the user's own
    memories, the history of the user's threads, and the notes the run writes. Not for a run
    started or last taken over through a token limited to projects (``within_project``): such a
    token reaches none of them itself (docs/API.md, "Limited service tokens"), so neither does
    a run it holds. Its project's memories it gets (``run_gets_memory``)."""
    return not run.within_project


def run_never_extracted(run: AgentRun) -> bool:
    """The one rule for "nothing is extracted from this run": it ran in "don't remember this
    chat" mode (stamped), or its chat is in that mode now."""
    return run.not_remembered or run.conversation.no_memory
