"""Auto-memory extraction (docs/auto-memory.md): sweep, claim, gate, redact, extract, write.

A run of a "don't remember this chat" conversation is stopped before its messages are read
(``no_memory_gate``), logged with that reason and marked processed.

A round sweeps completed top-level runs whose effective ``generate`` is on and that carry no
processed marker. Each run is claimed (``SELECT … FOR UPDATE SKIP LOCKED`` on PostgreSQL, then
a unique claim row with an expiry); the conversation is read, gated, redacted and handed to
the extractor **outside** any transaction (the extractor may call an HTTP endpoint); the
memories, the log entries and the processed marker are then written in one transaction that
re-checks the marker and the claim under a row lock. A worker that dies mid-run leaves no
memory behind and its claim expires, so the run becomes claimable again.
"""

import logging
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy

from config.errors import NotFound, PermissionDenied
from config.metrics import AUTOMEMORY_RUNS
from identity_app.ids import new_id
from identity_app.permissions import CREATE_TASK, project_require_permission
from memory_app.automemory.gates import GateInputs, GateResult, first_stop, no_memory_gate
from memory_app.automemory.models import AutoMemoryClaim, AutoMemoryLogEntry, AutoMemoryOutcome, AutoMemorySettings
from memory_app.automemory.selectors import auto_memory_settings_get, effective_flags
from memory_app.distill.extraction import Candidate, Extractor, clean_candidates, get_extractor, normalize_key
from memory_app.distill.redaction import redact
from memory_app.distill.timebound import expiry_details, with_expiry
from memory_app.memories import services
from memory_app.memories.models import Memory, Origin, Tier, live_q
from memory_app.memories.timing import user_zone
from memory_app.ops.models import BackgroundJob
from memory_app.ops.services import job_enqueue, job_handler
from memory_app.runs.models import AgentRun, RunKind, RunStatus, run_never_extracted, top_level_runs_q
from memory_app.threads.models import Conversation, Message, MessageRole, MessageType

logger = logging.getLogger(__name__)

CLAIM_SECONDS = 600  # longer than any extractor call (its timeout) plus the writes
MAX_ATTEMPTS = 3  # a run whose extraction failed this often is given up (logged as failed)
SWEEP_BATCH = 50
LEFT_COUNT_CAP = 1000  # the on-demand round reports how many runs wait, counted up to this
MAX_MESSAGES = 500
MAX_MESSAGE_CHARS = 20_000
MAX_TEXT_CHARS = 200_000
MAX_CANDIDATES = 20


@dataclass
class RunResult:
    run_id: str
    outcome: str  # an AutoMemoryOutcome, or "deferred" (idle gate: retried later) / "lost_claim"
    gate: str = ""
    reason: str = ""
    values: dict = field(default_factory=dict)
    memory_ids: list[str] = field(default_factory=list)
    superseded_ids: list[str] = field(default_factory=list)
    unchanged: int = 0
    error_class: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class RoundReport:
    """What an on-demand round did, and what it left for the background worker."""

    results: list[RunResult]
    stopped: str = ""  # "time_budget" when claimed runs were given back unstarted
    returned: int = 0  # claimed runs given back unstarted (claimable again at once)
    left: int = 0  # the caller's runs still waiting after the round (up to LEFT_COUNT_CAP)


# --- sweep and claim -----------------------------------------------------------------------
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


def _claim_release(*, run_id: str, token: str, error_class: str = "") -> None:
    """Give the run back (it stays unprocessed); attempts are kept."""
    AutoMemoryClaim.objects.filter(run_id=run_id, token=token).update(
        expires_at=timezone.now() - timedelta(seconds=1), last_error_class=error_class[:200]
    )


def _claim_defer(*, run_id: str, token: str, until: datetime) -> None:
    """Keep the run away from sweeps until ``until``; a deferral is not a failed attempt."""
    AutoMemoryClaim.objects.filter(run_id=run_id, token=token).update(
        expires_at=until, worker_id="deferred", attempts=F("attempts") - 1
    )


def _claim_return_unstarted(*, run_id: str, token: str) -> None:
    """Give back a claimed run that was never started: claimable at once, no attempt spent."""
    AutoMemoryClaim.objects.filter(run_id=run_id, token=token).update(
        expires_at=timezone.now() - timedelta(seconds=1), attempts=F("attempts") - 1
    )


# --- reading a run -------------------------------------------------------------------------
def _run_messages_q(run: AgentRun, now: datetime) -> Q:
    """The run's messages: those tagged with it, untagged ones written while it ran, and the
    user's turn that started it."""
    start = run.started_at or run.created_at
    end = run.finished_at or now
    messages = Q(run=run) | Q(run__isnull=True, created_at__gte=start, created_at__lte=end)
    turn = _starting_turn_id(run, start)
    return messages | Q(pk=turn) if turn is not None else messages


def _starting_turn_id(run: AgentRun, start: datetime) -> int | None:
    """The user message that started the run. A runtime posts the user's turn and then creates
    the run, so that message is older than the run and untagged: the thread's latest untagged
    user text before the start, unless another top-level run of the thread was created after
    it (then it was that run's turn)."""
    turn = (
        Message.objects.filter(
            conversation_id=run.conversation_id,
            run__isnull=True,
            role=MessageRole.USER,
            type=MessageType.TEXT,
            created_at__lt=start,
        )
        .order_by("-created_at", "-id")
        .values("pk", "created_at")
        .first()
    )
    if turn is None:
        return None
    answered_before = (
        AgentRun.objects.filter(
            top_level_runs_q(),
            conversation_id=run.conversation_id,
            created_at__gte=turn["created_at"],
            created_at__lt=run.created_at,
        )
        .exclude(pk=run.pk)
        .exists()
    )
    return None if answered_before else turn["pk"]


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def run_text(run: AgentRun, *, now: datetime) -> str:
    """The run's conversation as plain text (user/assistant text only), bounded."""
    contents = list(
        Message.objects.filter(_run_messages_q(run, now), conversation_id=run.conversation_id)
        .filter(role__in=[MessageRole.USER, MessageRole.ASSISTANT], type=MessageType.TEXT)
        .order_by("created_at", "id")
        .values_list("content", flat=True)[:MAX_MESSAGES]
    )
    parts = [run.prompt, run.goal or ""] if run.prompt not in contents else [run.goal or ""]
    parts += contents
    text = "\n".join(part[:MAX_MESSAGE_CHARS] for part in parts if part)
    return text[:MAX_TEXT_CHARS]


def gate_inputs(run: AgentRun, *, text: str, now: datetime) -> GateInputs:
    usage = run.usage if isinstance(run.usage, dict) else {}
    duration = _number(usage.get("duration_s"))
    if duration is None and run.started_at and run.finished_at:
        duration = (run.finished_at - run.started_at).total_seconds()
    inter_run = Message.objects.filter(
        _run_messages_q(run, now), conversation_id=run.conversation_id, type=MessageType.INTER_RUN
    ).count()
    coordinator = AgentRun.objects.filter(parent_run=run, kind=RunKind.COORDINATOR).count()
    if run.parent_run_id and AgentRun.objects.filter(pk=run.parent_run_id, kind=RunKind.COORDINATOR).exists():
        coordinator += 1
    return GateInputs(
        idle_seconds=(now - run.finished_at).total_seconds() if run.finished_at else None,
        duration_seconds=duration,
        length_chars=len(text),
        inter_run_messages=inter_run,
        coordinator_subtasks=coordinator,
        quota_remaining_pct=_number(usage.get("quota_remaining_pct")),
    )


# --- writing -------------------------------------------------------------------------------
def _log(run: AgentRun, outcome: str, **fields) -> AutoMemoryLogEntry:
    return AutoMemoryLogEntry.objects.create(
        user_id=run.user_id,
        run=run,
        run_ref=run.pk,
        project_id_ref=run.project_id or "",
        outcome=outcome,
        **fields,
    )


def _lock_for_finish(run_id: str, token: str) -> AgentRun | None:
    """Inside a transaction: the run, locked, if it is still unprocessed and still ours."""
    run = AgentRun.objects.select_for_update().filter(pk=run_id, auto_memory_processed_at__isnull=True).first()
    if run is None or not AutoMemoryClaim.objects.select_for_update().filter(run_id=run_id, token=token).exists():
        return None
    return run


def _mark_processed(run: AgentRun) -> None:
    AgentRun.objects.filter(pk=run.pk, auto_memory_processed_at__isnull=True).update(
        auto_memory_processed_at=timezone.now()
    )
    AutoMemoryClaim.objects.filter(run_id=run.pk).delete()


def _finish_without_memories(*, run_id: str, token: str, result: RunResult) -> RunResult:
    with transaction.atomic():
        run = _lock_for_finish(run_id, token)
        if run is None:
            return RunResult(run_id=run_id, outcome="lost_claim")
        _log(
            run,
            result.outcome,
            gate=result.gate,
            reason=result.reason[:300],
            details=result.values,
            error_class=result.error_class,
        )
        _mark_processed(run)
    return result


def _older_auto_memory(*, project_id: str | None, subject_key: str) -> Memory | None:
    """The latest active, unexpired auto memory of the same target in this project (bounded:
    one row); an expired one is not corrected but left to expire, and the new statement stands
    on its own."""
    return (
        Memory.objects.filter(
            live_q(),
            scope_type=Tier.PROJECT,
            project_id=project_id,
            origin=Origin.AUTO,
            metadata__subject_key=subject_key,
        )
        .order_by("-created_at", "-id")
        .first()
    )


def _write_memories(*, run_id: str, token: str, candidates: list[Candidate], extractor_name: str) -> RunResult:
    result = RunResult(run_id=run_id, outcome=AutoMemoryOutcome.EXTRACTED)
    with transaction.atomic():
        run = _lock_for_finish(run_id, token)
        if run is None:
            return RunResult(run_id=run_id, outcome="lost_claim")
        # The chat may have been put in "don't remember this chat" mode while the extractor
        # ran: the mode is set, and the chat's runs stamped, under the conversation's row lock,
        # so the run and its chat are read again once that lock is ours.
        list(Conversation.objects.select_for_update().filter(pk=run.conversation_id).values_list("pk"))
        run = AgentRun.objects.select_related("user", "conversation").get(pk=run.pk)
        if run_never_extracted(run):
            stop = no_memory_gate(conversation_no_memory=True)
            _log(run, AutoMemoryOutcome.SKIPPED, gate=stop.gate, reason=stop.reason, details=stop.values)
            _mark_processed(run)
            return RunResult(
                run_id=run_id, outcome=AutoMemoryOutcome.SKIPPED, gate=stop.gate, reason=stop.reason, values=stop.values
            )
        for candidate in candidates:
            expiry = expiry_details(candidate)
            if candidate.expires_at is not None and candidate.expires_at <= timezone.now():
                # Said while the run went on, no longer true by now: nothing to remember.
                _log(
                    run,
                    AutoMemoryOutcome.SKIPPED,
                    reason=f"already expired ({candidate.expiry_phrase})"[:300],
                    details=expiry,
                    content=candidate.content,
                )
                continue
            older = _older_auto_memory(project_id=run.project_id, subject_key=candidate.subject_key)
            if older is not None and normalize_key(older.content) == normalize_key(candidate.content):
                result.unchanged += 1
                _log(run, AutoMemoryOutcome.UNCHANGED, memory_id=older.pk, content=candidate.content)
                continue
            write: dict[str, Any] = {
                "actor": run.user,
                "content": candidate.content,
                "kind": candidate.kind,
                "origin": Origin.AUTO,
                "metadata": {"subject_key": candidate.subject_key, "run_id": run.pk, "extractor": extractor_name},
                "evidence": {
                    "run_id": run.pk,
                    "conversation_id": run.conversation_id,
                    "extractor": extractor_name,
                    "confidence": candidate.confidence,
                },
                "source_thread_id": run.conversation_id,
                "expires_at": candidate.expires_at,
            }
            # The log says which words set the expiry ("this week", "到周五为止").
            noted = {"details": expiry, "reason": f"expires: {candidate.expiry_phrase}"[:300]} if expiry else {}
            if older is None:
                memory = services.memory_create(tier=Tier.PROJECT, project_id=run.project_id, **write)
                _log(run, AutoMemoryOutcome.EXTRACTED, memory_id=memory.pk, content=memory.content, **noted)
            else:
                memory = services.memory_supersede(
                    memory_id=older.pk, tier=Tier.PROJECT, project_id=run.project_id, **write
                )
                result.superseded_ids.append(older.pk)
                _log(
                    run,
                    AutoMemoryOutcome.SUPERSEDED,
                    memory_id=memory.pk,
                    superseded_memory_id=older.pk,
                    content=memory.content,
                    **noted,
                )
            result.memory_ids.append(memory.pk)
        if not candidates:
            result = RunResult(run_id=run_id, outcome=AutoMemoryOutcome.SKIPPED, reason="nothing to extract")
            _log(run, AutoMemoryOutcome.SKIPPED, reason=result.reason)
        elif not result.memory_ids:
            result.outcome = AutoMemoryOutcome.UNCHANGED
        _mark_processed(run)
    return result


# --- one run, one round --------------------------------------------------------------------
def run_process(*, run_id: str, token: str, attempt: int, extractor: Extractor, now: datetime) -> RunResult:
    run = AgentRun.objects.select_related("user", "conversation").get(pk=run_id)
    user_settings = auto_memory_settings_get(user=run.user)
    # Before the generate switch: a run of a chat not remembered is closed for good either way.
    private = no_memory_gate(conversation_no_memory=run_never_extracted(run))
    if private.passed and not effective_flags(run=run, user_settings=user_settings).generate:
        _claim_release(run_id=run_id, token=token)  # switched off since the sweep
        return RunResult(run_id=run_id, outcome="deferred", reason="generate is off")

    if not private.passed:
        # "Don't remember this chat": its messages are never read; the run is marked processed,
        # so turning the mode off later does not extract it after all (docs/auto-memory.md).
        return _finish_without_memories(
            run_id=run_id,
            token=token,
            result=RunResult(
                run_id=run_id,
                outcome=AutoMemoryOutcome.SKIPPED,
                gate=private.gate,
                reason=private.reason,
                values=private.values,
            ),
        )
    if run.conversation.owner_id != run.user_id:
        # Never read another user's thread on this user's behalf.
        foreign = RunResult(
            run_id=run_id, outcome=AutoMemoryOutcome.SKIPPED, reason="the run's thread belongs to another user"
        )
        return _finish_without_memories(run_id=run_id, token=token, result=foreign)
    text = run_text(run, now=now)
    stop: GateResult | None = first_stop(gate_inputs(run, text=text, now=now), user_settings)
    if stop is not None and stop.gate == "idle":
        # Not final yet: the run stays unprocessed; the claim is kept as a deferral until the
        # run will be idle long enough, so waiting runs do not fill every round's batch.
        ready_at = (run.finished_at or now) + timedelta(minutes=user_settings.min_idle_minutes)
        _claim_defer(run_id=run_id, token=token, until=ready_at)
        if not AutoMemoryLogEntry.objects.filter(run_ref=run.pk, gate="idle").exists():
            _log(run, AutoMemoryOutcome.SKIPPED, gate="idle", reason=stop.reason, details=stop.values)
        return RunResult(run_id=run_id, outcome="deferred", gate="idle", reason=stop.reason, values=stop.values)
    if stop is not None:
        return _finish_without_memories(
            run_id=run_id,
            token=token,
            result=RunResult(
                run_id=run_id, outcome=AutoMemoryOutcome.SKIPPED, gate=stop.gate, reason=stop.reason, values=stop.values
            ),
        )

    skipped = RunResult(run_id=run_id, outcome=AutoMemoryOutcome.SKIPPED)
    if not run.project_id:
        skipped.reason = "run has no project; auto-memory writes project memories only"
        return _finish_without_memories(run_id=run_id, token=token, result=skipped)
    try:
        project_require_permission(user=run.user, project_id=run.project_id, permission=CREATE_TASK)
    except (NotFound, PermissionDenied):
        skipped.reason = "the run's user may not write memories of this project"
        return _finish_without_memories(run_id=run_id, token=token, result=skipped)

    redacted = redact(text, contact_info=user_settings.redact_contact_info)
    try:
        # Outside any transaction: this may be an HTTP call to a model.
        raw = extractor.extract(redacted.text, max_items=MAX_CANDIDATES)
    except Exception as exc:
        return _run_failed(run_id=run_id, token=token, attempt=attempt, exc=exc)
    candidates = clean_candidates(raw, contact_info=user_settings.redact_contact_info)
    # "this week", "到周五为止": relative to when the run's conversation happened, in the user's zone.
    candidates = with_expiry(candidates, now=run.finished_at or now, zone=user_zone(run.user))
    try:
        return _write_memories(run_id=run_id, token=token, candidates=candidates, extractor_name=extractor.name)
    except (NotFound, PermissionDenied):
        # Membership changed between the check and the write: nothing was written.
        skipped.reason = "the run's user may not write memories of this project"
        return _finish_without_memories(run_id=run_id, token=token, result=skipped)


def _run_failed(*, run_id: str, token: str, attempt: int, exc: Exception) -> RunResult:
    """Log the failure (error class only: a message may quote conversation text) and either
    give the run back for a later round or, after ``MAX_ATTEMPTS``, give it up."""
    error_class = type(exc).__name__[:200]
    logger.warning("auto-memory run failed", extra={"run_id": run_id, "error_class": error_class})
    result = RunResult(run_id=run_id, outcome=AutoMemoryOutcome.FAILED, error_class=error_class)
    if attempt >= MAX_ATTEMPTS:
        result.reason = f"failed {attempt} times; given up"
        return _finish_without_memories(run_id=run_id, token=token, result=result)
    result.reason = f"failed (attempt {attempt} of {MAX_ATTEMPTS}); will retry"
    run = AgentRun.objects.filter(pk=run_id).first()
    if run is not None:
        _log(run, AutoMemoryOutcome.FAILED, reason=result.reason, error_class=error_class)
    _claim_release(run_id=run_id, token=token, error_class=error_class)
    return result


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
                _claim_return_unstarted(run_id=unstarted_id, token=unstarted_token)
            report.stopped = "time_budget"
            report.returned = len(claimed) - index
            break
        if attempt > MAX_ATTEMPTS:
            # Taken over after the claim expired too often: a run that kills its worker.
            crashed = RunResult(
                run_id=run_id, outcome=AutoMemoryOutcome.FAILED, reason="worker stopped while processing; given up"
            )
            report.results.append(_finish_without_memories(run_id=run_id, token=token, result=crashed))
            continue
        try:
            report.results.append(
                run_process(run_id=run_id, token=token, attempt=attempt, extractor=extractor, now=now)
            )
        except Exception as exc:
            report.results.append(_run_failed(run_id=run_id, token=token, attempt=attempt, exc=exc))
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
