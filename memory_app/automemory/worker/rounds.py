"""A round: claim a batch and process each run (the background worker's, or a user's
on-demand one, queued as a job)."""

import time
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext_lazy

from config.metrics import AUTOMEMORY_RUNS
from memory_app.automemory.models import AutoMemoryOutcome
from memory_app.automemory.worker.claim import SWEEP_BATCH, claim_return_unstarted, runs_claim, sweep_queryset
from memory_app.automemory.worker.run import MAX_ATTEMPTS, run_failed, run_process
from memory_app.automemory.worker.writing import RunResult, finish_without_memories
from memory_app.distill.extraction import Extractor, get_extractor
from memory_app.ops.models import BackgroundJob
from memory_app.ops.services import job_enqueue, job_handler

LEFT_COUNT_CAP = 1000  # the on-demand round reports how many runs wait, counted up to this


@dataclass
class RoundReport:
    """What an on-demand round did, and what it left for the background worker."""

    results: list[RunResult]
    stopped: str = ""  # "time_budget" when claimed runs were given back unstarted
    returned: int = 0  # claimed runs given back unstarted (claimable again at once)
    left: int = 0  # the caller's runs still waiting after the round (up to LEFT_COUNT_CAP)


def _round(
    *,
    worker_id: str,
    limit: int,
    user,
    extractor: Extractor | None,
    now: datetime | None,
    budget_seconds: float | None,
) -> RoundReport:
    """Claim up to ``limit`` runs and process each; with ``budget_seconds``, no run is started
    once that much time has passed (a started run finishes: at most one extractor timeout
    more), and the claimed runs not started are given back."""
    started = time.monotonic()
    now = now or timezone.now()
    extractor = extractor or get_extractor()
    report = RoundReport(results=[])
    claimed = runs_claim(worker_id=worker_id, limit=limit, now=now, user=user)
    for index, (run_id, token, attempt) in enumerate(claimed):
        if budget_seconds is not None and index > 0 and time.monotonic() - started >= budget_seconds:
            for unstarted_id, unstarted_token, _ in claimed[index:]:
                claim_return_unstarted(run_id=unstarted_id, token=unstarted_token)
            report.stopped = "time_budget"
            report.returned = len(claimed) - index
            break
        if attempt > MAX_ATTEMPTS:
            # Taken over after the claim expired too often: a run that kills its worker.
            crashed = RunResult(
                run_id=run_id, outcome=AutoMemoryOutcome.FAILED, reason="worker stopped while processing; given up"
            )
            report.results.append(finish_without_memories(run_id=run_id, token=token, result=crashed))
            continue
        try:
            report.results.append(
                run_process(run_id=run_id, token=token, attempt=attempt, extractor=extractor, now=now)
            )
        except Exception as exc:
            report.results.append(run_failed(run_id=run_id, token=token, attempt=attempt, exc=exc))
    for result in report.results:
        AUTOMEMORY_RUNS.labels(outcome=result.outcome, gate=result.gate or "none").inc()
    return report


def round_run(
    *,
    worker_id: str,
    limit: int = SWEEP_BATCH,
    user=None,
    extractor: Extractor | None = None,
    now: datetime | None = None,
) -> list[RunResult]:
    """One bounded round of the background worker: claim up to ``limit`` runs, process each."""
    return _round(
        worker_id=worker_id, limit=limit, user=user, extractor=extractor, now=now, budget_seconds=None
    ).results


def auto_memory_round_for_user(*, user, extractor: Extractor | None = None) -> RoundReport:
    """The on-demand round (a background job, ``auto_memory_round_request``): one round over
    the user's runs, bounded twice: at most ``AUTO_MEMORY_MANUAL_ROUND_LIMIT`` runs, and no
    run started after ``AUTO_MEMORY_MANUAL_ROUND_SECONDS``. What is left stays claimable for
    the sweeping worker (or the next call)."""
    report = _round(
        worker_id=f"manual:{user.pk}",
        limit=settings.AUTO_MEMORY_MANUAL_ROUND_LIMIT,
        user=user,
        extractor=extractor,
        now=None,
        budget_seconds=settings.AUTO_MEMORY_MANUAL_ROUND_SECONDS,
    )
    report.left = sweep_queryset(now=timezone.now(), user=user).values("pk")[:LEFT_COUNT_CAP].count()
    return report


AUTO_MEMORY_ROUND_JOB = "auto_memory_round"


def auto_memory_round_request(*, user) -> BackgroundJob:
    """``POST /api/users/me/auto-memory/run``: queue the user's on-demand round (or return the
    one still queued)."""
    return job_enqueue(kind=AUTO_MEMORY_ROUND_JOB, user=user)


@job_handler(AUTO_MEMORY_ROUND_JOB, label=gettext_lazy("an on-demand auto-memory round"))
def auto_memory_round_job(job: BackgroundJob) -> dict:
    report = auto_memory_round_for_user(user=job.user)
    return {"processed": [r.as_dict() for r in report.results], "stopped": report.stopped, "left": report.left}
