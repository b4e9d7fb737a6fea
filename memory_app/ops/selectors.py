"""Reads of background jobs and worker heartbeats."""

from datetime import datetime, timedelta

from django.utils import timezone

from config.errors import NotFound
from memory_app.ops.models import BackgroundJob, WorkerHeartbeat


def job_get(*, user, job_id: str) -> BackgroundJob:
    """The caller's own job; anyone else's is 404, like a job that does not exist."""
    job = BackgroundJob.objects.filter(pk=job_id, user=user).first()
    if job is None:
        raise NotFound("Job not found.")
    return job


def worker_alive(*, max_age_seconds: int, now: datetime | None = None) -> bool:
    """A worker has beaten within ``max_age_seconds``."""
    since = (now or timezone.now()) - timedelta(seconds=max_age_seconds)
    return WorkerHeartbeat.objects.filter(beat_at__gte=since).exists()
