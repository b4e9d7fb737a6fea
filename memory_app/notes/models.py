"""The notes file's rows: the user's memory switch (``UserSettings.enable_memory``) and the change
history of the workspace files (``WorkspaceChange``; docs/runs.md, "Change history")."""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from identity_app.ids import new_id

__all__ = [
    "UserSettings",
    "WorkspaceChange",
    "WorkspaceChangeAction",
    "WorkspaceChangeSource",
]


class UserSettings(models.Model):
    """Per-user switches of the main agent; ``enable_memory`` is the one switch for MEMORY.md."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_settings", verbose_name=_("user")
    )
    enable_memory = models.BooleanField(default=True, verbose_name=_("memory (the notes file)"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("user settings")
        verbose_name_plural = _("user settings")

    def __str__(self) -> str:
        return _("settings of %(user)s") % {"user": self.user_id}


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
    run = models.ForeignKey("memory_app.AgentRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
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
        verbose_name = _("notes file change")
        verbose_name_plural = _("notes file changes")
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["user", "name", "seq"], name="workspace_change_seq_uniq")]
        indexes = [models.Index(fields=["user", "-created_at"], name="workspace_change_user_idx")]

    def __str__(self) -> str:
        return f"{self.name} #{self.seq} ({self.action}) of {self.user_id}"
