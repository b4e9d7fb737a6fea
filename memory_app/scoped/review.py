"""Operators' review of consolidation candidates in the admin (docs/scoped-memory.md, "Admin").

A candidate is the audit record of what consolidation or dreaming proposed and what became of
it. Review changes that outcome through the same paths the product uses:

- **approve** a pending candidate (an item of a global kind learned in a typed chat, waiting
  in that chat for consent): the item — the active end of its correction chain — moves to the
  global scope with its older versions (``memory_rescope``: same id, its search entry moved),
  and is from then on "shared from your chats" in the memory home of the chat's user. If the
  global scope already holds the same text, nothing moves: the record becomes ``duplicate`` of
  that item and the chat keeps its copy.
- **approve** a rejected candidate: it goes through consolidation's own step
  (``consolidation.apply_candidate``: redaction, the scope its kind decides, the duplicate
  check and same-subject supersede inside that scope; the approval is the consent, so a global
  kind goes to global), written by the consolidation service principal; the record takes the
  outcome (created, duplicate or superseded) and the item it points at. A rejected candidate
  whose item still waits in its chat is promoted as a pending one would be.
- **reject** a pending candidate: the item is not shared and stays in its chat, where the
  chat's bots use it and the chat's user can correct or forget it.
- **reject** a candidate that was consolidated: the decision becomes ``rejected``; an item this
  candidate wrote (created or superseded into) that is still active is archived, so agents stop
  using it while the record and the item stay auditable. An item it merely duplicated existed
  before and is left alone.

Both record who decided and when (``reviewed_by``, ``reviewed_at``: the provenance the memory
home shows for a shared item).

Both need active staff holding ``memory_app.change_memorycandidate``; a candidate of the global
scope (whose items reach everyone) also needs ``identity_app.write_global_memories``.
"""

import dataclasses

from django.db import transaction
from django.utils import timezone

from config.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from identity_app.models import User
from identity_app.permissions import global_write_require, staff_may
from memory_app.distill.extraction import Candidate
from memory_app.memories import services
from memory_app.memories.models import Memory, Status
from memory_app.memories.selectors import MAX_CHAIN_LENGTH
from memory_app.scoped import consolidation
from memory_app.scoped.models import CandidateDecision, MemoryCandidate
from memory_app.scoped.scope import GLOBAL_SCOPE, SCOPE_TYPE_CHAT, SCOPE_TYPE_GLOBAL
from memory_app.scoped.services import find_duplicate, lock_scope

REVIEW_PERM = "memory_app.change_memorycandidate"
WROTE_ITEM = (CandidateDecision.CREATED, CandidateDecision.SUPERSEDED)


def staff_may_review_candidates(actor: User) -> bool:
    return staff_may(actor, REVIEW_PERM)


def _require_review(*, actor: User, candidate: MemoryCandidate) -> None:
    if not staff_may_review_candidates(actor):
        raise PermissionDenied("Only staff with the change_memorycandidate permission may review candidates.")
    if candidate.scope_type == SCOPE_TYPE_GLOBAL:
        global_write_require(actor, operator=True)


def _locked_candidate(candidate_id: str) -> MemoryCandidate:
    candidate = MemoryCandidate.objects.select_for_update().filter(pk=str(candidate_id)[:40]).first()
    if candidate is None:
        raise NotFound("Candidate not found.")
    return candidate


@dataclasses.dataclass(frozen=True)
class ReviewOutcome:
    candidate: MemoryCandidate
    archived: str | None = None  # the item a rejection archived


def _waiting_item(candidate: MemoryCandidate) -> Memory | None:
    """The item a candidate for the global scope left waiting in its chat, if any."""
    memory = candidate.memory
    if candidate.scope_type != SCOPE_TYPE_GLOBAL or memory is None or memory.scope_type != SCOPE_TYPE_CHAT:
        return None
    return memory


def _active_end(memory: Memory) -> Memory | None:
    """The active version of ``memory``'s correction chain in its scope (it may have been
    corrected while waiting), or None when the chain ends archived or forgotten."""
    for _ in range(MAX_CHAIN_LENGTH):
        if memory.status == Status.ACTIVE:
            return memory
        if not memory.superseded_by_id:
            return None
        following = Memory.objects.filter(
            pk=memory.superseded_by_id, scope_type=memory.scope_type, scope_id=memory.scope_id
        ).first()
        if following is None:
            return None
        memory = following
    return None


def _reviewed(candidate: MemoryCandidate, *, actor: User, reason: str) -> None:
    candidate.reason = reason[:300]
    candidate.reviewed_by, candidate.reviewed_at = actor, timezone.now()
    candidate.save(update_fields=["decision", "memory", "reason", "reviewed_by", "reviewed_at"])


def _promote(*, actor: User, candidate: MemoryCandidate, waiting: Memory) -> ReviewOutcome:
    """Share the item ``candidate`` left waiting in its chat with everyone (inside the caller's
    transaction, the candidate locked)."""
    item = _active_end(waiting)
    if item is None:
        raise Conflict(
            f"Candidate {candidate.pk}: its item is no longer active in its chat; nothing to share.",
            code="not_active",
        )
    by = f"approved by {actor.get_username()} on review"
    lock_scope(GLOBAL_SCOPE)
    duplicate = find_duplicate(scope=GLOBAL_SCOPE, content=item.content)
    if duplicate is not None:
        candidate.decision, candidate.memory = CandidateDecision.DUPLICATE, duplicate
        _reviewed(candidate, actor=actor, reason=f"{by}; the same text was already shared ({duplicate.pk})")
        return ReviewOutcome(candidate=candidate)
    promoted = services.memory_rescope(
        actor=consolidation.system_actor(),
        memory_id=item.pk,
        from_scope=(item.scope_type, item.scope_id),
        to_scope=GLOBAL_SCOPE,
    )
    candidate.decision, candidate.memory = CandidateDecision.CREATED, promoted
    _reviewed(candidate, actor=actor, reason=f"{by}; shared with everyone from {item.scope_id}")
    return ReviewOutcome(candidate=candidate)


def candidate_approve(*, actor: User, candidate_id: str) -> ReviewOutcome:
    """Share a pending candidate's item with everyone; consolidate a rejected candidate now,
    as consolidation would have with consent."""
    with transaction.atomic():
        candidate = _locked_candidate(candidate_id)
        _require_review(actor=actor, candidate=candidate)
        if candidate.decision in (CandidateDecision.PENDING, CandidateDecision.REJECTED):
            waiting = _waiting_item(candidate)
            if waiting is not None:
                return _promote(actor=actor, candidate=candidate, waiting=waiting)
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
            reviewed=True,
        )
        if record.decision == CandidateDecision.REJECTED:
            # Nothing written; the transaction rolls the second record back.
            raise InvalidInput(f"Candidate {candidate.pk} cannot be approved: {record.reason}.", code="not_approvable")
        # One record per candidate: the original takes the outcome, the fresh one goes.
        candidate.decision, candidate.memory = record.decision, record.memory
        _reviewed(
            candidate, actor=actor, reason=f"approved by {actor.get_username()} on review; {record.reason}".rstrip("; ")
        )
        MemoryCandidate.objects.filter(pk=record.pk).delete()
    return ReviewOutcome(candidate=candidate)


def candidate_reject(*, actor: User, candidate_id: str) -> ReviewOutcome:
    """Record the rejection; archive the still-active item this candidate wrote."""
    with transaction.atomic():
        candidate = _locked_candidate(candidate_id)
        _require_review(actor=actor, candidate=candidate)
        if candidate.decision == CandidateDecision.REJECTED:
            raise Conflict(f"Candidate {candidate.pk} is already rejected.", code="already_decided")
        archived = None
        memory = candidate.memory
        if candidate.decision == CandidateDecision.PENDING:
            candidate.decision = CandidateDecision.REJECTED
            _reviewed(
                candidate,
                actor=actor,
                reason=f"rejected by {actor.get_username()} on review; not shared, it stays in its chat",
            )
            return ReviewOutcome(candidate=candidate)
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
        _reviewed(candidate, actor=actor, reason=f"rejected by {actor.get_username()} on review; {note}")
    return ReviewOutcome(candidate=candidate, archived=archived)
