"""Auto-memory (docs/auto-memory.md): per-user settings, the extraction log and run claims."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from memory_app.runs.models import AgentRun

__all__ = [
    "AUTO_MEMORY_DEFAULTS",
    "AUTO_MEMORY_LIMITS",
    "AutoMemoryClaim",
    "AutoMemoryLogEntry",
    "AutoMemoryOutcome",
    "AutoMemorySettings",
]


# Defaults of the gate thresholds (0 disables a gate):
# - idle 10 min: a conversation that is still going on (a quick follow-up) is not final yet;
# - duration 30 s: shorter runs are one-shot questions that rarely hold a decision;
# - length 200 chars: below that there is no statement worth remembering;
# - quota 20 %: extraction may use model quota; leave the user the last fifth for their work.
AUTO_MEMORY_DEFAULTS = {
    "generate": False,
    "use": False,
    "extract_model": "",
    "consolidation_model": "",
    "min_idle_minutes": 10,
    "min_duration_seconds": 30,
    "min_length_chars": 200,
    "min_quota_remaining_pct": 20,
    "redact_contact_info": True,
}


# Upper bounds of the thresholds (a week, a day, a million characters, a hundred percent).
AUTO_MEMORY_LIMITS = {
    "min_idle_minutes": 7 * 24 * 60,
    "min_duration_seconds": 24 * 60 * 60,
    "min_length_chars": 1_000_000,
    "min_quota_remaining_pct": 100,
}


MODEL_NAME_MAX = 200


class AutoMemorySettings(models.Model):
    """One row per user; a missing row means the defaults (everything off)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="auto_memory_settings", verbose_name=_("user")
    )
    generate = models.BooleanField(default=AUTO_MEMORY_DEFAULTS["generate"], verbose_name=_("generate memories"))
    use = models.BooleanField(default=AUTO_MEMORY_DEFAULTS["use"], verbose_name=_("use memories"))
    # Stored only: the extractor used is configured by the operator (settings.AUTO_MEMORY_*).
    extract_model = models.CharField(
        max_length=MODEL_NAME_MAX, blank=True, default="", verbose_name=_("extraction model")
    )
    consolidation_model = models.CharField(
        max_length=MODEL_NAME_MAX, blank=True, default="", verbose_name=_("consolidation model")
    )
    min_idle_minutes = models.PositiveIntegerField(
        default=AUTO_MEMORY_DEFAULTS["min_idle_minutes"], verbose_name=_("idle at least (minutes)")
    )
    min_duration_seconds = models.PositiveIntegerField(
        default=AUTO_MEMORY_DEFAULTS["min_duration_seconds"], verbose_name=_("run lasted at least (seconds)")
    )
    min_length_chars = models.PositiveIntegerField(
        default=AUTO_MEMORY_DEFAULTS["min_length_chars"], verbose_name=_("conversation at least (characters)")
    )
    min_quota_remaining_pct = models.PositiveSmallIntegerField(
        default=AUTO_MEMORY_DEFAULTS["min_quota_remaining_pct"], verbose_name=_("quota remaining at least (%)")
    )
    redact_contact_info = models.BooleanField(
        default=AUTO_MEMORY_DEFAULTS["redact_contact_info"], verbose_name=_("redact contact info")
    )
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("auto-memory settings")
        verbose_name_plural = _("auto-memory settings")
        constraints = [
            models.CheckConstraint(
                name="automemory_quota_pct_range",
                condition=Q(min_quota_remaining_pct__gte=0, min_quota_remaining_pct__lte=100),
            ),
        ]

    def __str__(self):
        return _("auto-memory settings of %(user)s") % {"user": self.user_id}


class AutoMemoryOutcome(models.TextChoices):
    EXTRACTED = "extracted", _("remembered")  # a new project memory was written
    SUPERSEDED = "superseded", _("updated")  # an older auto memory of the same target was replaced
    UNCHANGED = "unchanged", _("already known")  # the same target already says the same thing
    SKIPPED = "skipped", _("skipped")  # a gate (or a missing project / permission) stopped the run
    FAILED = "failed", _("failed")  # extraction raised; ``error_class`` says what


class AutoMemoryLogEntry(models.Model):
    """What auto-memory did with one run. Holds only redacted text (memory content)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="auto_memory_log", verbose_name=_("user")
    )
    # Kept as text too, so the entry survives the run's deletion.
    run = models.ForeignKey(
        AgentRun,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="auto_memory_log",
        verbose_name=_("run"),
    )
    run_ref = models.CharField(max_length=40, verbose_name=_("run ID"))
    project_id_ref = models.CharField(max_length=40, blank=True, default="", verbose_name=_("project ID"))
    outcome = models.CharField(max_length=16, choices=AutoMemoryOutcome.choices, verbose_name=_("outcome"))
    gate = models.CharField(max_length=32, blank=True, default="", verbose_name=_("check"))
    reason = models.CharField(max_length=300, blank=True, default="", verbose_name=_("reason"))
    details = models.JSONField(default=dict, blank=True, verbose_name=_("details"))
    memory_id = models.CharField(max_length=40, blank=True, default="", verbose_name=_("memory ID"))
    superseded_memory_id = models.CharField(
        max_length=40, blank=True, default="", verbose_name=_("superseded memory ID")
    )
    content = models.TextField(blank=True, default="", verbose_name=_("content"))
    error_class = models.CharField(max_length=200, blank=True, default="", verbose_name=_("error class"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    # Not stored: the entry in words, for the log page (memory_app/automemory/web.py).
    gate_words: str
    reason_words: str
    detail_sentences: list[str]
    detail_other: list[tuple[str, str]]

    class Meta:
        verbose_name = _("auto-memory log entry")
        verbose_name_plural = _("auto-memory log entries")
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["user", "-created_at"], name="automemory_log_user_idx"),
            models.Index(fields=["run_ref", "-created_at"], name="automemory_log_run_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                name="automemory_log_outcome_valid", condition=Q(outcome__in=AutoMemoryOutcome.values)
            ),
        ]

    def __str__(self):
        return f"{self.run_ref}: {self.get_outcome_display()}"


class AutoMemoryClaim(models.Model):
    """A worker's time-limited claim on one run while it extracts outside any transaction.

    The primary key makes the claim unique per run; an expired claim (the worker crashed)
    may be taken over by a conditional UPDATE. The run's ``auto_memory_processed_at`` is the
    final marker, set in the same transaction as the memories.
    """

    run = models.OneToOneField(
        AgentRun, primary_key=True, on_delete=models.CASCADE, related_name="+", verbose_name=_("run")
    )
    token = models.CharField(max_length=40, verbose_name=_("token"))
    worker_id = models.CharField(max_length=200, blank=True, default="", verbose_name=_("worker"))
    expires_at = models.DateTimeField(verbose_name=_("expires at"))
    attempts = models.PositiveIntegerField(default=0, verbose_name=_("attempts"))
    last_error_class = models.CharField(max_length=200, blank=True, default="", verbose_name=_("last error class"))

    class Meta:
        verbose_name = _("auto-memory claim")
        verbose_name_plural = _("auto-memory claims")

    def __str__(self):
        return _("claim on %(run)s by %(worker)s") % {"run": self.run_id, "worker": self.worker_id or "-"}
