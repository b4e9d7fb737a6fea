"""Consolidation after a turn and per-session "dreaming" (docs/scoped-memory.md).

Candidates come from the shared extractor interface (``memory_app.distill.extraction``); each is
recorded as a ``MemoryCandidate`` and turned into an item in the scope its kind decides
(``scope.write_scope``) — except that what a typed chat says is not shared with everyone
without consent (``scope.chat_write_placement``): an item of a global kind stays in its chat as
``pending`` until an operator approves the candidate (``review.py``), unless the deployment sets
``MEMORY_CHAT_TO_GLOBAL=direct``. Every look at existing items — duplicates, same-subject items to
supersede, duplicates to archive — is filtered by the one scope written, so one chat never sees,
suppresses or archives another chat's items.
"""

import dataclasses
import logging
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy

from config.errors import DomainError, InvalidInput, PermissionDenied, TooLarge
from config.validation import clean_text
from identity_app.models import User
from identity_app.permissions import is_service_principal, may_write_global
from identity_app.services import user_grant_service
from memory_app.distill.extraction import Candidate, DeterministicExtractor, Extractor
from memory_app.distill.redaction import redact, redact_strings
from memory_app.distill.timebound import expiry_details, with_expiry
from memory_app.memories import services
from memory_app.memories.models import KIND_VALUES, Memory, Origin, live_q
from memory_app.memories.timing import chat_zone
from memory_app.ops.models import BackgroundJob
from memory_app.ops.services import job_enqueue, job_handler
from memory_app.scoped.errors import ErrorCode
from memory_app.scoped.models import CandidateDecision, MemoryCandidate
from memory_app.scoped.scope import (
    GLOBAL_SCOPE,
    SCOPE_TYPE_CHAT,
    SCOPE_TYPE_GLOBAL,
    chat_write_placement,
    resolve_scope_from_session,
)
from memory_app.scoped.services import (
    PENDING_REASON,
    duplicate_key,
    find_duplicate,
    lock_scope,
    recent_active_texts,
    strip_scope_clues,
)
from memory_app.threads.models import Conversation, Message, MessageRole, MessageType

logger = logging.getLogger(__name__)

SYSTEM_USERNAME = "memory-consolidation"
MAX_TURN_MESSAGES = 50
MAX_TURN_CHARS = 64 * 1024
MAX_CANDIDATES = 20
DREAM_MAX_MESSAGES = 200


@dataclass
class ConsolidationReport:
    session_id: str
    candidates: list[MemoryCandidate] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)

    def counts(self) -> dict:
        out: dict[str, int] = {}
        for candidate in self.candidates:
            out[candidate.decision] = out.get(candidate.decision, 0) + 1
        out["archived"] = len(self.archived)
        return out


def system_actor() -> User:
    """The service principal that commands and the worker consolidate as."""
    user, created = get_user_model().objects.get_or_create(username=SYSTEM_USERNAME)
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
        user_grant_service(user=user)
        user = get_user_model().objects.get(pk=user.pk)  # drop the cached permissions
    return user


def session_zone(session_id: str):
    """The time zone statements in a session are read in: that of the user its chat is bound
    to, else the server's."""
    scope = resolve_scope_from_session(session_id)
    return chat_zone(scope[1] if scope[0] == SCOPE_TYPE_CHAT else None)


def turn_text(messages: list[dict]) -> str:
    """The user/assistant text of a turn, validated and bounded."""
    if not isinstance(messages, list) or not messages:
        raise InvalidInput("messages must be a non-empty list.", code=ErrorCode.INVALID_MESSAGES)
    if len(messages) > MAX_TURN_MESSAGES:
        raise TooLarge(f"At most {MAX_TURN_MESSAGES} messages per turn.")
    parts = []
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("content"), str):
            raise InvalidInput("Each message needs a string content.", code=ErrorCode.INVALID_MESSAGES)
        if message.get("role") in (MessageRole.USER, MessageRole.ASSISTANT):
            parts.append(clean_text(message["content"], field="messages"))
    text = "\n".join(parts)
    if len(text) > MAX_TURN_CHARS:
        raise TooLarge(f"A turn may hold at most {MAX_TURN_CHARS} characters.")
    return text


def _redacted(candidate: Candidate, *, contact_info: bool) -> Candidate:
    evidence = redact_strings(candidate.evidence or {}, contact_info=contact_info)
    return dataclasses.replace(
        candidate, content=redact(candidate.content, contact_info=contact_info).text, evidence=evidence
    )


def apply_candidate(
    *, actor, session_id: str, source: str, extractor_name: str, candidate: Candidate, reviewed: bool = False
) -> MemoryCandidate:
    """Record ``candidate`` and write it where ``chat_write_placement`` says. ``reviewed``: an
    operator approved it, so a global kind goes to global even from a typed chat."""
    valid = candidate.kind in KIND_VALUES and bool(candidate.content.strip())
    if valid:
        placement = chat_write_placement(session_id=session_id, kind=candidate.kind, reviewed=reviewed)
        scope, target = placement.scope, placement.target
    else:
        scope = target = resolve_scope_from_session(session_id)
        placement = None
    # Secrets never enter a scoped item or the candidate audit; what goes (or waits to go) to the
    # shared global scope also loses contact details (an email is fine in the user's own chat,
    # not in everyone's context).
    candidate = _redacted(candidate, contact_info=target[0] != SCOPE_TYPE_CHAT)
    record = MemoryCandidate(
        session_id=session_id,
        source=source,
        extractor=extractor_name,
        kind=str(candidate.kind)[:16],
        content=candidate.content,
        subject_key=(candidate.subject_key or "")[:240],
        confidence=candidate.confidence,
        evidence={**(candidate.evidence or {}), **expiry_details(candidate)},
        # Where the item belongs: a pending candidate names global, its item lives in the chat.
        scope_type=target[0],
        scope_id=target[1],
    )
    if placement is None:
        record.decision, record.reason = CandidateDecision.REJECTED, "unknown kind or empty content"
        record.save(force_insert=True)
        return record
    if scope[0] == SCOPE_TYPE_GLOBAL and not may_write_global(actor):
        # A limited service token: global items would reach users outside its reach.
        record.decision, record.reason = CandidateDecision.REJECTED, "this token may not write global items"
        record.save(force_insert=True)
        return record
    with transaction.atomic():
        lock_scope(scope)
        duplicate = None
        if placement.pending:
            # Already shared with everyone: nothing to propose (the chat's bots see it anyway).
            duplicate = find_duplicate(scope=GLOBAL_SCOPE, content=candidate.content)
        duplicate = duplicate or find_duplicate(scope=scope, content=candidate.content)
        same_subject = None
        if duplicate is None and candidate.subject_key:
            same_subject = (
                Memory.objects.filter(
                    live_q(),
                    scope_type=scope[0],
                    scope_id=scope[1],
                    kind=candidate.kind,
                    metadata__subject_key=candidate.subject_key,
                )
                .order_by("-created_at", "-id")
                .first()
            )
        metadata = {"subject_key": candidate.subject_key, "extractor": extractor_name}
        # Only the system names the session: clue keys from the extractor are dropped.
        evidence = {
            **strip_scope_clues(candidate.evidence),
            **expiry_details(candidate),
            "source_session_id": session_id,
        }
        if duplicate is not None:
            record.decision, record.memory = CandidateDecision.DUPLICATE, duplicate
            record.reason = "same text already active in this scope"
        elif same_subject is not None:
            record.memory = services.memory_supersede(
                actor=actor,
                memory_id=same_subject.pk,
                content=candidate.content,
                origin=Origin.CONSOLIDATION,
                metadata=metadata,
                evidence=evidence,
                expires_at=candidate.expires_at,
                source_chat_key=placement.source_chat_key,
            )
            record.decision, record.reason = CandidateDecision.SUPERSEDED, f"newer words for {same_subject.pk}"
            if placement.pending:
                record.decision = CandidateDecision.PENDING
                record.reason = f"{PENDING_REASON}; newer words for {same_subject.pk}"
        else:
            record.memory = services.memory_create(
                actor=actor,
                tier=scope[0],
                scope_id=scope[1],
                kind=candidate.kind,
                content=candidate.content,
                origin=Origin.CONSOLIDATION,
                metadata=metadata,
                evidence=evidence,
                expires_at=candidate.expires_at,
                source_chat_key=placement.source_chat_key,
            )
            record.decision = CandidateDecision.CREATED
            if placement.pending:
                record.decision, record.reason = CandidateDecision.PENDING, PENDING_REASON
        record.save(force_insert=True)
    return record


def consolidate_text(
    *, actor: User, session_id: str, text: str, source: str, extractor: Extractor | None = None
) -> ConsolidationReport:
    if not is_service_principal(actor):
        raise PermissionDenied("Only service principals may consolidate memories.")
    # A malformed key fails before anything is written; so does a session outside the reach
    # of a limited token (a chat it does not reach: 404; a legacy session, i.e. global: 403).
    own_scope = resolve_scope_from_session(session_id)
    services.scope_require_write(actor=actor, tier=own_scope[0], scope_id=own_scope[1])
    extractor = extractor or DeterministicExtractor()
    # The extractor (possibly a remote model) only ever sees redacted text. Extraction runs
    # outside any transaction; writes follow per candidate.
    text = redact(text, contact_info=False).text
    candidates = extractor.extract(text, max_items=MAX_CANDIDATES)[:MAX_CANDIDATES]
    # "I'm in Lisbon this week": said now, in the zone of the user the chat is bound to.
    candidates = with_expiry(candidates, now=timezone.now(), zone=session_zone(session_id))
    report = ConsolidationReport(session_id=session_id)
    for candidate in candidates:
        report.candidates.append(
            apply_candidate(
                actor=actor, session_id=session_id, source=source, extractor_name=extractor.name, candidate=candidate
            )
        )
    return report


def consolidate_turn(
    *, actor: User, session_id: str, messages: list[dict], extractor: Extractor | None = None
) -> ConsolidationReport:
    return consolidate_text(
        actor=actor, session_id=session_id, text=turn_text(messages), source="consolidate", extractor=extractor
    )


def _session_text(session_id: str) -> str:
    rows = list(
        Message.objects.filter(
            conversation__session_key=session_id,
            role__in=[MessageRole.USER, MessageRole.ASSISTANT],
            type=MessageType.TEXT,
        )
        .order_by("-created_at", "-id")
        .values_list("content", flat=True)[:DREAM_MAX_MESSAGES]
    )
    return "\n".join(reversed(rows))[-MAX_TURN_CHARS:]


def archive_duplicates(*, actor: User, scope: tuple[str, str]) -> list[str]:
    """Archive older active items of ``scope`` that duplicate a newer one (``duplicate_key``)."""
    seen: set[str] = set()
    doomed: list[str] = []
    for memory_id, content in recent_active_texts(scope):
        key = duplicate_key(content)
        if not key:
            continue
        if key in seen:
            doomed.append(memory_id)
        seen.add(key)
    archived = []
    for memory_id in doomed:
        # memory_archive re-checks the row under its lock, pinned to this scope: a row moved
        # to another chat meanwhile is never archived there.
        if services.memory_archive(actor=actor, memory_id=memory_id, tier=scope[0], scope_id=scope[1]):
            archived.append(memory_id)
    return archived


def dream_session(*, actor: User, session_id: str, extractor: Extractor | None = None) -> ConsolidationReport:
    """One dreaming pass over a session's recent history.

    New candidates go to the scopes their kinds decide; archiving only ever touches the
    session's own chat scope (a legacy session has none, and global knowledge is shared, so
    one session's pass never archives it).
    """
    report = consolidate_text(
        actor=actor, session_id=session_id, text=_session_text(session_id), source="dream", extractor=extractor
    )
    own_scope = resolve_scope_from_session(session_id)
    if own_scope[0] == SCOPE_TYPE_CHAT:
        report.archived = archive_duplicates(actor=actor, scope=own_scope)
    return report


def sessions_to_dream(*, limit: int = 100) -> list[str]:
    """Session keys with conversations, most recently active first (bounded)."""
    rows = (
        Conversation.objects.exclude(session_key="")
        .order_by("-updated_at")
        .values_list("session_key", flat=True)[: limit * 5]
    )
    out: list[str] = []
    for key in rows:
        if key not in out:
            out.append(key)
        if len(out) >= limit:
            break
    return out


def dream_round(
    *, sessions: list[str] | None = None, limit: int = 100
) -> dict[str, "ConsolidationReport | DomainError"]:
    """One dreaming pass over ``sessions`` (default: the most recently active ones).

    Used by ``manage.py dream`` and by ``memory_worker --dream``. A failing session is
    reported and does not stop the others.
    """
    actor = system_actor()
    results: dict[str, ConsolidationReport | DomainError] = {}
    for key in (sessions or sessions_to_dream(limit=limit))[:limit]:
        try:
            results[key] = dream_session(actor=actor, session_id=key)
        except DomainError as exc:
            results[key] = exc
    return results


DREAM_JOB = "dream"


def dream_request(*, actor: User, session_id: str) -> BackgroundJob:
    """``POST /api/memory/dream``: check now what the pass checks (a service principal that
    may write the session's own scope), then queue the pass, or return the one still queued
    for this session."""
    if not is_service_principal(actor):
        raise PermissionDenied("Only service principals may consolidate memories.")
    own_scope = resolve_scope_from_session(session_id)
    services.scope_require_write(actor=actor, tier=own_scope[0], scope_id=own_scope[1])
    return job_enqueue(kind=DREAM_JOB, user=actor, payload={"session_id": session_id}, dedupe_key=session_id)


@job_handler(DREAM_JOB, label=gettext_lazy("looking back over a chat (dreaming)"))
def dream_job(job: BackgroundJob) -> dict:
    """The result names what was decided, never the text: a forgotten memory must not live
    on in a job's result."""
    report = dream_session(actor=job.user, session_id=job.payload["session_id"])
    return {
        "session_id": report.session_id,
        "counts": report.counts(),
        "candidates": [
            {
                "id": candidate.pk,
                "decision": candidate.decision,
                "kind": candidate.kind,
                "scope_type": candidate.scope_type,
                "scope_id": candidate.scope_id,
                "memory_id": candidate.memory_id,
            }
            for candidate in report.candidates
        ],
        "archived": report.archived,
    }
