"""Writing what a run came to: the log entries, the processed marker, and the memories (with
supersedes), in one transaction that re-checks the marker and the claim under a row lock."""

from dataclasses import asdict, dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from memory_app.automemory.gates import no_memory_gate
from memory_app.automemory.models import AutoMemoryClaim, AutoMemoryLogEntry, AutoMemoryOutcome
from memory_app.distill.extraction import Candidate, normalize_key
from memory_app.distill.timebound import expiry_details
from memory_app.memories import services
from memory_app.memories.models import Memory, Origin, Tier, live_q
from memory_app.runs.models import AgentRun, run_never_extracted
from memory_app.threads.models import Conversation


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


def log_entry(run: AgentRun, outcome: str, **fields) -> AutoMemoryLogEntry:
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


def finish_without_memories(*, run_id: str, token: str, result: RunResult) -> RunResult:
    with transaction.atomic():
        run = _lock_for_finish(run_id, token)
        if run is None:
            return RunResult(run_id=run_id, outcome="lost_claim")
        log_entry(
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


def write_memories(*, run_id: str, token: str, candidates: list[Candidate], extractor_name: str) -> RunResult:
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
            log_entry(run, AutoMemoryOutcome.SKIPPED, gate=stop.gate, reason=stop.reason, details=stop.values)
            _mark_processed(run)
            return RunResult(
                run_id=run_id, outcome=AutoMemoryOutcome.SKIPPED, gate=stop.gate, reason=stop.reason, values=stop.values
            )
        for candidate in candidates:
            expiry = expiry_details(candidate)
            if candidate.expires_at is not None and candidate.expires_at <= timezone.now():
                # Said while the run went on, no longer true by now: nothing to remember.
                log_entry(
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
                log_entry(run, AutoMemoryOutcome.UNCHANGED, memory_id=older.pk, content=candidate.content)
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
                log_entry(run, AutoMemoryOutcome.EXTRACTED, memory_id=memory.pk, content=memory.content, **noted)
            else:
                memory = services.memory_supersede(
                    memory_id=older.pk, tier=Tier.PROJECT, project_id=run.project_id, **write
                )
                result.superseded_ids.append(older.pk)
                log_entry(
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
            log_entry(run, AutoMemoryOutcome.SKIPPED, reason=result.reason)
        elif not result.memory_ids:
            result.outcome = AutoMemoryOutcome.UNCHANGED
        _mark_processed(run)
    return result
