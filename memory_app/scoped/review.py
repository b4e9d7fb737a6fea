"""Operators' review of consolidation candidates in the admin (docs/scoped-memory.md, "Admin").

A candidate is the audit record of what consolidation or dreaming proposed and what became of
it. Review changes that outcome through the same paths the product uses:

- **approve** a rejected candidate: it goes through consolidation's own step
  (``consolidation.apply_candidate``: redaction, the scope its kind decides, the duplicate
  check and same-subject supersede inside that scope), written by the
  consolidation service principal; the record takes the outcome (created, duplicate or
  superseded) and the item it points at.
- **reject** a candidate that was consolidated: the decision becomes ``rejected``; an item this
  candidate wrote (created or superseded into) that is still active is archived, so agents stop
  using it while the record and the item stay auditable. An item it merely duplicated existed
  before and is left alone.

Both need active staff holding ``memory_app.change_memorycandidate``; a candidate of the global
scope (whose items reach everyone) also needs ``identity_app.write_global_memories``.
"""

import dataclasses

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from config.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from identity_app.permissions import WRITE_GLOBAL_PERM, staff_may
from memory_app.automemory.extraction import Candidate
from memory_app.memories import services
from memory_app.memories.models import Status
from memory_app.scoped import consolidation
from memory_app.scoped.models import CandidateDecision, MemoryCandidate
from memory_app.scoped.scope import SCOPE_TYPE_GLOBAL

REVIEW_PERM = "memory_app.change_memorycandidate"
WROTE_ITEM = (CandidateDecision.CREATED, CandidateDecision.SUPERSEDED)


def staff_may_review_candidates(actor: AbstractBaseUser) -> bool:
    return staff_may(actor, REVIEW_PERM)


def _require_review(*, actor: AbstractBaseUser, candidate: MemoryCandidate) -> None:
    if not staff_may_review_candidates(actor):
        raise PermissionDenied("Only staff with the change_memorycandidate permission may review candidates.")
    if candidate.scope_type == SCOPE_TYPE_GLOBAL and not staff_may(actor, WRITE_GLOBAL_PERM):
        raise PermissionDenied(
            "Global items reach everyone: reviewing a global candidate also takes the "
            "identity_app.write_global_memories permission."
        )


def _locked_candidate(candidate_id: str) -> MemoryCandidate:
    candidate = MemoryCandidate.objects.select_for_update().filter(pk=str(candidate_id)[:40]).first()
    if candidate is None:
        raise NotFound("Candidate not found.")
    return candidate


@dataclasses.dataclass(frozen=True)
class ReviewOutcome:
    candidate: MemoryCandidate
    archived: str | None = None  # the item a rejection archived


def candidate_approve(*, actor: AbstractBaseUser, candidate_id: str) -> ReviewOutcome:
    """Consolidate a rejected candidate now, as consolidation would have."""
    with transaction.atomic():
        candidate = _locked_candidate(candidate_id)
        _require_review(actor=actor, candidate=candidate)
        if candidate.decision != CandidateDecision.REJECTED:
            raise Conflict(f"Candidate {candidate.pk} is already {candidate.decision}.", code="already_decided")
        writer = consolidation.system_actor()
        record = consolidation.apply_candidate(
            actor=writer,
            session_id=candidate.session_id,
            source=candidate.source,
            extractor_name=candidate.extractor,
            candidate=Candidate(
                kind=candidate.kind,
                content=candidate.content,
                subject_key=candidate.subject_key,
                confidence=candidate.confidence,
                evidence=dict(candidate.evidence or {}),
            ),
        )
        if record.decision == CandidateDecision.REJECTED:
            # Nothing written; the transaction rolls the second record back.
            raise InvalidInput(f"Candidate {candidate.pk} cannot be approved: {record.reason}.", code="not_approvable")
        # One record per candidate: the original takes the outcome, the fresh one goes.
        candidate.decision, candidate.memory = record.decision, record.memory
        candidate.reason = f"approved by {actor.get_username()} on review; {record.reason}".rstrip("; ")[:300]
        candidate.save(update_fields=["decision", "memory", "reason"])
        MemoryCandidate.objects.filter(pk=record.pk).delete()
    return ReviewOutcome(candidate=candidate)


def candidate_reject(*, actor: AbstractBaseUser, candidate_id: str) -> ReviewOutcome:
    """Record the rejection; archive the still-active item this candidate wrote."""
    with transaction.atomic():
        candidate = _locked_candidate(candidate_id)
        _require_review(actor=actor, candidate=candidate)
        if candidate.decision == CandidateDecision.REJECTED:
            raise Conflict(f"Candidate {candidate.pk} is already rejected.", code="already_decided")
        archived = None
        memory = candidate.memory
        if candidate.decision in WROTE_ITEM and memory is not None and memory.status == Status.ACTIVE:
            # Pinned to the candidate's scope: an item moved elsewhere since is not touched.
            try:
                if services.memory_archive(
                    actor=consolidation.system_actor(),
                    memory_id=memory.pk,
                    tier=candidate.scope_type,
                    scope_id=candidate.scope_id,
                ):
                    archived = memory.pk
            except NotFound:
                pass
        note = "its item was archived" if archived else "no item of its own was active"
        candidate.decision = CandidateDecision.REJECTED
        candidate.reason = f"rejected by {actor.get_username()} on review; {note}"[:300]
        candidate.save(update_fields=["decision", "reason"])
    return ReviewOutcome(candidate=candidate, archived=archived)
