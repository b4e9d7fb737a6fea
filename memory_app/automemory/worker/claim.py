"""Sweep and claim: which runs wait, and the claim a worker takes on one (a unique row with an
expiry, ``SKIP LOCKED`` on PostgreSQL), released, deferred or given back."""

from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from identity_app.ids import new_id
from memory_app.automemory.models import AutoMemoryClaim, AutoMemorySettings
from memory_app.runs.models import AgentRun, RunStatus, top_level_runs_q

CLAIM_SECONDS = 600  # longer than any extractor call (its timeout) plus the writes
SWEEP_BATCH = 50


def sweep_queryset(*, now: datetime, user=None):
    """Completed top-level runs, effective ``generate`` on, not processed, not claimed now."""
    generating_users = AutoMemorySettings.objects.filter(generate=True).values("user_id")
    live_claim = AutoMemoryClaim.objects.filter(run=OuterRef("pk"), expires_at__gt=now)
    qs = AgentRun.objects.filter(
        Q(auto_memory_generate=True) | Q(auto_memory_generate__isnull=True, user_id__in=generating_users),
        top_level_runs_q(),
        status=RunStatus.COMPLETED,
        auto_memory_processed_at__isnull=True,
    ).filter(~Exists(live_claim))
    if user is not None:
        qs = qs.filter(user=user)
    return qs.order_by("finished_at", "id")


def _claim_one(*, run_id: str, worker_id: str, now: datetime) -> tuple[str, int] | None:
    """Insert the claim row, or take over an expired one (conditional UPDATE, row count)."""
    token = new_id("clm")
    expires = now + timedelta(seconds=CLAIM_SECONDS)
    try:
        with transaction.atomic():
            AutoMemoryClaim.objects.create(
                run_id=run_id, token=token, worker_id=worker_id, expires_at=expires, attempts=1
            )
        return token, 1
    except IntegrityError:
        pass
    moved = AutoMemoryClaim.objects.filter(run_id=run_id, expires_at__lte=now).update(
        token=token, worker_id=worker_id, expires_at=expires, attempts=F("attempts") + 1
    )
    if moved != 1:
        return None
    return token, AutoMemoryClaim.objects.filter(run_id=run_id).values_list("attempts", flat=True).first() or 1


def runs_claim(*, worker_id: str, limit: int, now: datetime, user=None) -> list[tuple[str, str, int]]:
    """Claim up to ``limit`` runs; returns (run id, claim token, attempt number)."""
    claimed = []
    with transaction.atomic():
        # SKIP LOCKED: a run another worker is claiming right now is simply not ours.
        ids = list(
            sweep_queryset(now=now, user=user).select_for_update(skip_locked=True).values_list("pk", flat=True)[:limit]
        )
        for run_id in ids:
            got = _claim_one(run_id=run_id, worker_id=worker_id, now=now)
            if got is not None:
                claimed.append((run_id, *got))
    return claimed


def claim_release(*, run_id: str, token: str, error_class: str = "") -> None:
    """Give the run back (it stays unprocessed); attempts are kept."""
    AutoMemoryClaim.objects.filter(run_id=run_id, token=token).update(
        expires_at=timezone.now() - timedelta(seconds=1), last_error_class=error_class[:200]
    )


def claim_defer(*, run_id: str, token: str, until: datetime) -> None:
    """Keep the run away from sweeps until ``until``; a deferral is not a failed attempt."""
    AutoMemoryClaim.objects.filter(run_id=run_id, token=token).update(
        expires_at=until, worker_id="deferred", attempts=F("attempts") - 1
    )


def claim_return_unstarted(*, run_id: str, token: str) -> None:
    """Give back a claimed run that was never started: claimable at once, no attempt spent."""
    AutoMemoryClaim.objects.filter(run_id=run_id, token=token).update(
        expires_at=timezone.now() - timedelta(seconds=1), attempts=F("attempts") - 1
    )
