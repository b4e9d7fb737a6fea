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
from django.utils.translation import gettext as _

from config.errors import Conflict, DomainError, InvalidInput, NotFound, PermissionDenied
from identity_app.chat_reach import chat_of_session
from identity_app.models import ChatBinding, User
from identity_app.permissions import global_write_require, staff_may
from memory_app.distill.extraction import Candidate
from memory_app.memories import services
from memory_app.memories.models import Memory, Status
from memory_app.memories.selectors import MAX_CHAIN_LENGTH
from memory_app.scoped import consolidation
from memory_app.scoped.errors import ErrorCode
from memory_app.scoped.models import CandidateDecision, MemoryCandidate
from memory_app.scoped.scope import GLOBAL_SCOPE, SCOPE_TYPE_CHAT, SCOPE_TYPE_GLOBAL, scope_for_kind
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
    for _step in range(MAX_CHAIN_LENGTH):
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
            code=ErrorCode.NOT_ACTIVE,
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
            raise Conflict(f"Candidate {candidate.pk} is already {candidate.decision}.", code=ErrorCode.ALREADY_DECIDED)
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
            raise InvalidInput(
                f"Candidate {candidate.pk} cannot be approved: {record.reason}.", code=ErrorCode.NOT_APPROVABLE
            )
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
            raise Conflict(f"Candidate {candidate.pk} is already rejected.", code=ErrorCode.ALREADY_DECIDED)
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


# --- what a decision will do, said before it is made --------------------------------------------
APPROVE, REJECT = "approve", "reject"


@dataclasses.dataclass
class ChatOwner:
    """The chat a candidate was learned in and the user it is bound to (None: bound to nobody,
    e.g. a group chat)."""

    chat_key: str
    user: User | None = None
    name: str = ""  # the name that user gave the chat


def chat_owners(candidates) -> dict[str, ChatOwner]:
    """For each candidate (by id): its chat and whose chat it is, in one query."""
    keys: dict[str, str] = {}
    for candidate in candidates:
        try:
            keys[candidate.pk] = chat_of_session(candidate.session_id) or ""
        except DomainError:
            keys[candidate.pk] = ""
    bindings = {
        b.chat_key: b for b in ChatBinding.objects.filter(chat_key__in=set(keys.values()) - {""}).select_related("user")
    }
    return {
        pk: ChatOwner(
            chat_key=key,
            user=bindings[key].user if key in bindings else None,
            name=bindings[key].display_name if key in bindings else "",
        )
        for pk, key in keys.items()
    }


@dataclasses.dataclass
class ReviewPreview:
    """What deciding ``decision`` on a candidate will do, for the confirmation page: whose chat
    it came from, the exact text that would be shared and where, and who would then see it;
    ``possible`` is False (with ``blocked``) when the decision would be refused."""

    candidate: MemoryCandidate
    decision: str
    owner: ChatOwner
    text: str = ""  # the text that is shared (approve) or stays in its chat (reject)
    to_scope: str = ""  # approve: "global" or "chat" (where the text goes)
    shares: bool = False  # approve: shared with everyone
    archives: Memory | None = None  # reject: the active item this candidate wrote, archived
    possible: bool = True
    blocked: str = ""  # why not (the services' own words)
    waiting: bool = False  # a pending candidate whose item waits in its chat


def review_preview(*, candidate: MemoryCandidate, decision: str, owner: ChatOwner) -> ReviewPreview:
    """Read-only: what ``candidate_approve`` / ``candidate_reject`` would do now."""
    preview = ReviewPreview(candidate=candidate, decision=decision, owner=owner, text=candidate.content)
    waiting = (
        _waiting_item(candidate)
        if candidate.decision in (CandidateDecision.PENDING, CandidateDecision.REJECTED)
        else None
    )
    item = _active_end(waiting) if waiting is not None else None
    preview.waiting = waiting is not None
    if decision == APPROVE:
        if waiting is not None:
            if item is None:
                preview.possible = False
                preview.blocked = _("its item is no longer active in its chat; nothing to share")
            else:
                preview.text, preview.to_scope, preview.shares = item.content, SCOPE_TYPE_GLOBAL, True
        elif candidate.decision == CandidateDecision.REJECTED:
            preview.to_scope = scope_for_kind(candidate.kind)
            preview.shares = preview.to_scope == SCOPE_TYPE_GLOBAL
        else:
            preview.possible = False
            preview.blocked = _("it is already decided: %(decision)s") % {"decision": candidate.get_decision_display()}
        return preview
    if candidate.decision == CandidateDecision.REJECTED:
        preview.possible, preview.blocked = False, _("it is already rejected")
        return preview
    if item is not None:
        preview.text = item.content
    memory = candidate.memory
    if candidate.decision in WROTE_ITEM and memory is not None and memory.status == Status.ACTIVE:
        preview.archives = memory
    return preview


def review_previews(*, candidate_ids, decision: str) -> list[ReviewPreview]:
    """The previews of the candidates ``candidate_ids`` (at most ``MAX_REVIEW_ROWS``), oldest first."""
    candidates = list(
        MemoryCandidate.objects.filter(pk__in=list(candidate_ids)[:MAX_REVIEW_ROWS])
        .select_related("memory")
        .order_by("created_at", "id")
    )
    owners = chat_owners(candidates)
    return [review_preview(candidate=c, decision=decision, owner=owners[c.pk]) for c in candidates]


MAX_REVIEW_ROWS = 50


def everyone_count() -> int:
    """Who an item shared with everyone reaches: the active accounts (users and services)."""
    return User.objects.filter(is_active=True).count()
