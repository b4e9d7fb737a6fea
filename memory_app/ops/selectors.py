"""Reads of background jobs and worker heartbeats."""

from datetime import datetime, timedelta

from django.db.models import QuerySet
from django.utils import timezone

from config.errors import NotFound
from identity_app.models import User
from identity_app.permissions import token_reach
from memory_app.ops.models import BackgroundJob, WorkerHeartbeat


def jobs_visible(*, user: User) -> QuerySet[BackgroundJob]:
    """The caller's own jobs. A limited token sees only the jobs it queued itself: a job acts
    within the reach of the token that asked for it (a session, say, of a chat outside this
    token's reach), so another token's job may name what this one must not see. A session or
    an unlimited token sees every job of its user."""
    reach = token_reach(user)
    qs = BackgroundJob.objects.filter(user=user)
    return qs if reach is None else qs.filter(limited_token_id=reach.token_id)


def job_get(*, user: User, job_id: str) -> BackgroundJob:
    """A job of ``jobs_visible``; anyone else's is 404, like a job that does not exist."""
    job = jobs_visible(user=user).filter(pk=job_id).first()
    if job is None:
        raise NotFound("Job not found.")
    return job


def worker_alive(*, max_age_seconds: int, now: datetime | None = None) -> bool:
    """A worker has beaten within ``max_age_seconds``."""
    since = (now or timezone.now()) - timedelta(seconds=max_age_seconds)
    return WorkerHeartbeat.objects.filter(beat_at__gte=since).exists()
