"""One run: read, gate, redact and extract outside any transaction, then write; a failure
retried until ``MAX_ATTEMPTS``."""

import logging
from datetime import datetime, timedelta

from config.errors import NotFound, PermissionDenied
from identity_app.permissions import CREATE_TASK, project_require_permission
from memory_app.automemory.gates import GateResult, first_stop, no_memory_gate
from memory_app.automemory.models import AutoMemoryLogEntry, AutoMemoryOutcome
from memory_app.automemory.selectors import auto_memory_settings_get, effective_flags
from memory_app.automemory.worker.claim import claim_defer, claim_release
from memory_app.automemory.worker.reading import gate_inputs, run_text
from memory_app.automemory.worker.writing import RunResult, finish_without_memories, log_entry, write_memories
from memory_app.distill.extraction import Extractor, clean_candidates
from memory_app.distill.redaction import redact
from memory_app.distill.timebound import with_expiry
from memory_app.memories.timing import user_zone
from memory_app.runs.models import AgentRun, run_never_extracted

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 3  # a run whose extraction failed this often is given up (logged as failed)
MAX_CANDIDATES = 20


def run_process(*, run_id: str, token: str, attempt: int, extractor: Extractor, now: datetime) -> RunResult:
    run = AgentRun.objects.select_related("user", "conversation").get(pk=run_id)
    user_settings = auto_memory_settings_get(user=run.user)
    # Before the generate switch: a run of a chat not remembered is closed for good either way.
    private = no_memory_gate(conversation_no_memory=run_never_extracted(run))
    if private.passed and not effective_flags(run=run, user_settings=user_settings).generate:
        claim_release(run_id=run_id, token=token)  # switched off since the sweep
        return RunResult(run_id=run_id, outcome="deferred", reason="generate is off")

    if not private.passed:
        # "Don't remember this chat": its messages are never read; the run is marked processed,
        # so turning the mode off later does not extract it after all (docs/auto-memory.md).
        return finish_without_memories(
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
        return finish_without_memories(run_id=run_id, token=token, result=foreign)
    text = run_text(run, now=now)
    stop: GateResult | None = first_stop(gate_inputs(run, text=text, now=now), user_settings)
    if stop is not None and stop.gate == "idle":
        # Not final yet: the run stays unprocessed; the claim is kept as a deferral until the
        # run will be idle long enough, so waiting runs do not fill every round's batch.
        ready_at = (run.finished_at or now) + timedelta(minutes=user_settings.min_idle_minutes)
        claim_defer(run_id=run_id, token=token, until=ready_at)
        if not AutoMemoryLogEntry.objects.filter(run_ref=run.pk, gate="idle").exists():
            log_entry(run, AutoMemoryOutcome.SKIPPED, gate="idle", reason=stop.reason, details=stop.values)
        return RunResult(run_id=run_id, outcome="deferred", gate="idle", reason=stop.reason, values=stop.values)
    if stop is not None:
        return finish_without_memories(
            run_id=run_id,
            token=token,
            result=RunResult(
                run_id=run_id, outcome=AutoMemoryOutcome.SKIPPED, gate=stop.gate, reason=stop.reason, values=stop.values
            ),
        )

    skipped = RunResult(run_id=run_id, outcome=AutoMemoryOutcome.SKIPPED)
    if not run.project_id:
        skipped.reason = "run has no project; auto-memory writes project memories only"
        return finish_without_memories(run_id=run_id, token=token, result=skipped)
    try:
        project_require_permission(user=run.user, project_id=run.project_id, permission=CREATE_TASK)
    except (NotFound, PermissionDenied):
        skipped.reason = "the run's user may not write memories of this project"
        return finish_without_memories(run_id=run_id, token=token, result=skipped)

    redacted = redact(text, contact_info=user_settings.redact_contact_info)
    try:
        # Outside any transaction: this may be an HTTP call to a model.
        raw = extractor.extract(redacted.text, max_items=MAX_CANDIDATES)
    except Exception as exc:
        return run_failed(run_id=run_id, token=token, attempt=attempt, exc=exc)
    candidates = clean_candidates(raw, contact_info=user_settings.redact_contact_info)
    # "this week", "到周五为止": relative to when the run's conversation happened, in the user's zone.
    candidates = with_expiry(candidates, now=run.finished_at or now, zone=user_zone(run.user))
    try:
        return write_memories(run_id=run_id, token=token, candidates=candidates, extractor_name=extractor.name)
    except (NotFound, PermissionDenied):
        # Membership changed between the check and the write: nothing was written.
        skipped.reason = "the run's user may not write memories of this project"
        return finish_without_memories(run_id=run_id, token=token, result=skipped)


def run_failed(*, run_id: str, token: str, attempt: int, exc: Exception) -> RunResult:
    """Log the failure (error class only: a message may quote conversation text) and either
    give the run back for a later round or, after ``MAX_ATTEMPTS``, give it up."""
    error_class = type(exc).__name__[:200]
    logger.warning("auto-memory run failed", extra={"run_id": run_id, "error_class": error_class})
    result = RunResult(run_id=run_id, outcome=AutoMemoryOutcome.FAILED, error_class=error_class)
    if attempt >= MAX_ATTEMPTS:
        result.reason = f"failed {attempt} times; given up"
        return finish_without_memories(run_id=run_id, token=token, result=result)
    result.reason = f"failed (attempt {attempt} of {MAX_ATTEMPTS}); will retry"
    run = AgentRun.objects.filter(pk=run_id).first()
    if run is not None:
        log_entry(run, AutoMemoryOutcome.FAILED, reason=result.reason, error_class=error_class)
    claim_release(run_id=run_id, token=token, error_class=error_class)
    return result
