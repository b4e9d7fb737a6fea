"""Background jobs and worker heartbeats (docs/deploy.md).

A job is queued by an API call and run by ``memory_worker`` (it polls every second or so), or,
where no worker is expected (``JOBS_IN_PROCESS``), by a thread of the process that queued it,
started after the commit. Either way the job is claimed first, by a conditional UPDATE, so
it runs once; the handler runs outside any transaction and its result is written by a second
conditional UPDATE that only the claiming worker can make. Handlers register themselves by
kind (``job_handler``) in the package that owns the work.
"""

import functools
import logging
import os
import socket
import threading
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from config.errors import DomainError, PermissionDenied
from config.metrics import BACKGROUND_JOBS
from identity_app.models import User
from identity_app.permissions import token_reach, token_reach_attach
from memory_app.ops.errors import ErrorCode
from memory_app.ops.models import BackgroundJob, JobStatus, WorkerHeartbeat

logger = logging.getLogger(__name__)

JOB_LEASE_SECONDS = 900  # well above the longest job (the on-demand round: ≤ 120 s + one extractor call)
MAX_JOB_ATTEMPTS = 3  # a job whose worker died this often is given up
JOB_KEEP_DAYS = 7  # finished jobs are deleted after this
PRUNE_BATCH = 1000
HEARTBEAT_KEEP_DAYS = 1

JobHandler = Callable[[BackgroundJob], dict]
_handlers: dict[str, JobHandler] = {}


_labels: dict[str, object] = {}


def job_handler(kind: str, *, label: object = None) -> Callable[[JobHandler], JobHandler]:
    """Register ``func(job) -> dict`` (the job's JSON result) as the handler of ``kind``;
    ``label``: what the job does, in words (a lazy translation), for the admin."""

    def register(func: JobHandler) -> JobHandler:
        _handlers[kind] = func
        if label is not None:
            _labels[kind] = label
        return func

    return register


def job_kind_words(kind: str) -> str:
    """A job's kind in the reader's words (the kind itself for one without a label)."""
    return str(_labels.get(kind, kind))


def job_kinds() -> list[tuple[str, str]]:
    """(kind, words) of every job registered with a label, for the admin's filter."""
    return sorted(((kind, job_kind_words(kind)) for kind in _labels), key=lambda pair: pair[1])


def job_enqueue(*, kind: str, user: User, payload: dict | None = None, dedupe_key: str = "") -> BackgroundJob:
    """Queue a job, or return the one of this user, kind and key that is still queued."""
    if kind not in _handlers:
        raise ValueError(f"no handler for job kind {kind!r}")
    reach = token_reach(user)
    if reach is not None:
        dedupe_key = f"{dedupe_key}#token:{reach.token_id}"  # never hand one token another's job
    for _ in range(3):
        try:
            with transaction.atomic():
                job = BackgroundJob.objects.create(
                    kind=kind,
                    user=user,
                    limited_token_id=reach.token_id if reach else None,
                    payload=payload or {},
                    dedupe_key=dedupe_key,
                )
        except IntegrityError:
            queued = BackgroundJob.objects.filter(
                user=user,
                kind=kind,
                dedupe_key=dedupe_key,
                status=JobStatus.QUEUED,
            ).first()
            if queued is not None:
                return queued
            continue  # the queued one was claimed meanwhile: queue a new one
        if settings.JOBS_IN_PROCESS:
            transaction.on_commit(functools.partial(_start_in_process, job.pk))
        return job
    raise IntegrityError("could not queue the job")


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _start_in_process(job_id: str) -> None:
    threading.Thread(target=_run_in_thread, args=(job_id,), name=f"job-{job_id}", daemon=True).start()


def _run_in_thread(job_id: str) -> None:
    worker_id = f"inprocess:{default_worker_id()}"
    try:
        job = job_claim_one(job_id=job_id, worker_id=worker_id)
        if job is not None:
            job_run(job=job, worker_id=worker_id)
        # Jobs a stopped process left behind (their lease expired) are taken over here too.
        jobs_run_pending(worker_id=worker_id, limit=5)
    except Exception as exc:
        logger.warning("in-process job runner failed", extra={"job_id": job_id, "error_class": type(exc).__name__})
    finally:
        connection.close()  # this thread's own connection


def _claimable(now: datetime) -> Q:
    return Q(status=JobStatus.QUEUED) | Q(status=JobStatus.RUNNING, lease_expires_at__lte=now)


def _claim(*, job_id: str, worker_id: str, now: datetime) -> bool:
    moved = BackgroundJob.objects.filter(_claimable(now), pk=job_id).update(
        status=JobStatus.RUNNING,
        worker_id=worker_id,
        lease_expires_at=now + timedelta(seconds=JOB_LEASE_SECONDS),
        attempts=F("attempts") + 1,
        started_at=now,
    )
    return moved == 1


def jobs_claim(*, worker_id: str, limit: int, now: datetime | None = None) -> list[BackgroundJob]:
    """Claim up to ``limit`` queued jobs (and running ones whose lease expired), oldest first."""
    now = now or timezone.now()
    if not BackgroundJob.objects.filter(_claimable(now)).exists():
        return []  # the common case, polled every second: no write transaction (SQLite's lock)
    with transaction.atomic():
        # SKIP LOCKED: a job another worker is claiming right now is simply not ours.
        ids = list(
            BackgroundJob.objects.filter(_claimable(now))
            .order_by("created_at", "id")
            .select_for_update(skip_locked=True)
            .values_list("pk", flat=True)[:limit]
        )
        claimed = [job_id for job_id in ids if _claim(job_id=job_id, worker_id=worker_id, now=now)]
    return list(
        BackgroundJob.objects.select_related("user", "limited_token")
        .filter(pk__in=claimed)
        .order_by("created_at", "id")
    )


def job_claim_one(*, job_id: str, worker_id: str) -> BackgroundJob | None:
    if not _claim(job_id=job_id, worker_id=worker_id, now=timezone.now()):
        return None
    return BackgroundJob.objects.select_related("user", "limited_token").get(pk=job_id)


def _finish(
    *, job: BackgroundJob, worker_id: str, status: str, result: dict | None = None, error: dict | None = None
) -> bool:
    done = BackgroundJob.objects.filter(pk=job.pk, worker_id=worker_id, status=JobStatus.RUNNING).update(
        status=status, result=result, error=error, finished_at=timezone.now(), lease_expires_at=None
    )
    if done:
        BACKGROUND_JOBS.labels(kind=job.kind, status=status).inc()
    else:
        logger.warning("background job taken over before it finished", extra={"job_id": job.pk, "kind": job.kind})
    return bool(done)


class TokenNotActive(PermissionDenied):
    code = ErrorCode.TOKEN_NOT_ACTIVE


def _acting_user(job: BackgroundJob) -> None:
    """The job acts as its user, within the reach of the limited token it was asked for with,
    and only while that user and token still may act."""
    if not job.user.is_active:
        raise PermissionDenied("The account that queued this job is inactive.")
    token = job.limited_token
    if token is not None:
        if token.state(timezone.now()) != "active":
            raise TokenNotActive("The token that queued this job was revoked or has expired.")
        token_reach_attach(job.user, token)


def job_run(*, job: BackgroundJob, worker_id: str) -> str:
    """Run a claimed job and record its outcome; returns the final status."""
    if job.attempts > MAX_JOB_ATTEMPTS:
        error = {"code": "worker_stopped", "message": "The job was interrupted too often; it was given up."}
        _finish(job=job, worker_id=worker_id, status=JobStatus.FAILED, error=error)
        return JobStatus.FAILED
    handler = _handlers.get(job.kind)
    try:
        _acting_user(job)
        if handler is None:
            raise LookupError(f"no handler for job kind {job.kind!r}")
        result = handler(job)
    except DomainError as exc:
        # A refusal of the domain (e.g. a token's reach changed): its code and message are
        # written for the caller.
        error = {"code": exc.code, "message": exc.message}
        _finish(job=job, worker_id=worker_id, status=JobStatus.FAILED, error=error)
        return JobStatus.FAILED
    except Exception as exc:
        # The class only: a message may quote conversation text.
        logger.warning(
            "background job failed", extra={"job_id": job.pk, "kind": job.kind, "error_class": type(exc).__name__}
        )
        error = {"code": "job_failed", "message": "The job failed."}
        _finish(job=job, worker_id=worker_id, status=JobStatus.FAILED, error=error)
        return JobStatus.FAILED
    _finish(job=job, worker_id=worker_id, status=JobStatus.DONE, result=result)
    return JobStatus.DONE


def jobs_run_pending(*, worker_id: str, limit: int = 10) -> int:
    """Claim and run up to ``limit`` jobs; returns how many ran."""
    jobs = jobs_claim(worker_id=worker_id, limit=limit)
    for job in jobs:
        job_run(job=job, worker_id=worker_id)
    return len(jobs)


def jobs_prune(*, now: datetime | None = None) -> int:
    """Delete finished jobs older than ``JOB_KEEP_DAYS`` (a bounded batch)."""
    cutoff = (now or timezone.now()) - timedelta(days=JOB_KEEP_DAYS)
    ids = list(
        BackgroundJob.objects.filter(status__in=[JobStatus.DONE, JobStatus.FAILED], finished_at__lt=cutoff).values_list(
            "pk", flat=True
        )[:PRUNE_BATCH]
    )
    return BackgroundJob.objects.filter(pk__in=ids).delete()[0]


def worker_heartbeat(*, worker_id: str, started_at: datetime, now: datetime | None = None) -> None:
    """Record that this worker is alive (every loop of ``memory_worker``)."""
    now = now or timezone.now()
    if WorkerHeartbeat.objects.filter(pk=worker_id).update(beat_at=now):
        return
    WorkerHeartbeat.objects.update_or_create(worker_id=worker_id, defaults={"started_at": started_at, "beat_at": now})
    # A new worker: forget the ones long gone (each process has its own id).
    WorkerHeartbeat.objects.filter(beat_at__lt=now - timedelta(days=HEARTBEAT_KEEP_DAYS)).delete()


def worker_heartbeat_end(*, worker_id: str) -> None:
    """A worker that stops cleanly says so at once."""
    WorkerHeartbeat.objects.filter(pk=worker_id).delete()
