"""What runs beside the requests (docs/deploy.md): background jobs and worker heartbeats."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from identity_app.ids import new_id

__all__ = ["BackgroundJob", "JobStatus", "WorkerHeartbeat"]


class JobStatus(models.TextChoices):
    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("Running")
    DONE = "done", _("Done")
    FAILED = "failed", _("Failed")


def _job_id() -> str:
    return new_id("job")


class BackgroundJob(models.Model):
    """One long job asked for over the API (an on-demand extraction round, a dreaming pass).

    Claimed like auto-memory runs: a conditional UPDATE from ``queued`` (``SKIP LOCKED`` on
    PostgreSQL) sets the worker and a lease; a worker that dies leaves a ``running`` job whose
    lease expires, and the next worker takes it over. ``dedupe_key``: while one job of a user,
    kind and key is queued, asking again returns that job instead of queueing a second.
    """

    id = models.CharField(primary_key=True, max_length=40, default=_job_id, editable=False)
    kind = models.CharField(max_length=32, verbose_name=_("kind"))
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", verbose_name=_("user")
    )
    # The limited API token the job was asked for with: the job acts within its reach, and not
    # at all once it is revoked or expired (deleting the token deletes the job).
    limited_token = models.ForeignKey(
        "identity_app.ApiToken",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        verbose_name=_("limited token"),
    )
    payload = models.JSONField(default=dict, blank=True, verbose_name=_("payload"))
    dedupe_key = models.CharField(max_length=240, blank=True, default="", verbose_name=_("dedupe key"))
    status = models.CharField(
        max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED, verbose_name=_("status")
    )
    result = models.JSONField(null=True, blank=True, verbose_name=_("result"))
    error = models.JSONField(null=True, blank=True, verbose_name=_("error"))  # {"code", "message"}: nothing internal
    attempts = models.PositiveIntegerField(default=0, verbose_name=_("attempts"))
    worker_id = models.CharField(max_length=200, blank=True, default="", verbose_name=_("worker"))
    lease_expires_at = models.DateTimeField(null=True, blank=True, verbose_name=_("lease expires at"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    started_at = models.DateTimeField(null=True, blank=True, verbose_name=_("started at"))
    finished_at = models.DateTimeField(null=True, blank=True, verbose_name=_("finished at"))

    class Meta:
        verbose_name = _("background job")
        verbose_name_plural = _("background jobs")
        indexes = [
            models.Index(fields=["status", "created_at"], name="ops_job_status_idx"),
            models.Index(fields=["user", "-created_at"], name="ops_job_user_idx"),
        ]
        constraints = [
            models.CheckConstraint(name="ops_job_status_valid", condition=Q(status__in=JobStatus.values)),
            models.UniqueConstraint(
                fields=["user", "kind", "dedupe_key"], condition=Q(status="queued"), name="ops_job_one_queued"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.pk} ({self.get_status_display()})"


class WorkerHeartbeat(models.Model):
    """The last sign of life of each ``memory_worker`` process (``/readyz`` reads it)."""

    worker_id = models.CharField(primary_key=True, max_length=200, verbose_name=_("worker"))
    started_at = models.DateTimeField(verbose_name=_("started at"))
    beat_at = models.DateTimeField(db_index=True, verbose_name=_("last beat at"))

    class Meta:
        verbose_name = _("worker heartbeat")
        verbose_name_plural = _("worker heartbeats")

    def __str__(self) -> str:
        return f"{self.worker_id} at {self.beat_at:%Y-%m-%d %H:%M:%S}"
