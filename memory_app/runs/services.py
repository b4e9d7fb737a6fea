"""Writes of runs: create (with the first lease and its run token), claim, heartbeat, finish,
the assistant's run over MCP, and the count of a run's context rounds.

Every write owns its transaction; a claim is one conditional UPDATE (docs/runs.md)."""

from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from config.errors import Conflict, InvalidInput, NotFound
from config.validation import validate_json_container
from identity_app.chat_reach import chat_require_reach
from identity_app.models import User
from identity_app.permissions import (
    CREATE_TASK,
    is_service_principal,
    project_require_permission,
    reach_require_project,
    require_service_principal,
    token_reach,
)
from identity_app.selectors import user_get_acting
from identity_app.session_keys import InvalidSessionKey
from memory_app.runs.errors import ErrorCode
from memory_app.runs.leases import (
    FINISHED_STATUSES,
    LeaseLost,
    RunCredential,
    RunNotAuthorized,
    hash_run_token,
    new_run_token,
    run_check_lease,
)
from memory_app.runs.models import TOP_LEVEL_RUN_KINDS, AgentRun, RunKind, RunStatus
from memory_app.runs.selectors import runs_visible
from memory_app.threads.models import Conversation, ConversationSource, ConversationStatus
from memory_app.threads.selectors import conversation_is_main_thread, conversations_visible

MIN_LEASE_SECONDS = 5
MAX_LEASE_SECONDS = 3600
MAX_USAGE_BYTES = 8 * 1024


def _lease_seconds(value) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not MIN_LEASE_SECONDS <= value <= MAX_LEASE_SECONDS:
        raise InvalidInput(
            f"lease_seconds must be an integer between {MIN_LEASE_SECONDS} and {MAX_LEASE_SECONDS}.",
            code=ErrorCode.INVALID_LEASE,
        )
    return value


def _worker_id(value) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 200:
        raise InvalidInput(
            "worker_id must be a non-empty string of at most 200 characters.", code=ErrorCode.INVALID_WORKER
        )
    return value.strip()


def _require_chat_in_reach(*, actor: User, session_key: str, user_id: int) -> None:
    """A run token reads its conversation's chat items: whoever starts or takes over a run
    must reach that chat for the run's user (a token limited to alice, say, never a group
    chat an unlimited principal gave one of her conversations). Out of reach: 404, as a chat
    that does not exist. A malformed key (written before keys were checked) has no scope and
    gives its runs no items, so it needs no reach."""
    if not session_key:
        return
    try:
        chat_require_reach(actor=actor, session_key=session_key, acting_for_id=user_id)
    except InvalidSessionKey:
        return


@dataclass(frozen=True)
class IssuedRun:
    run: AgentRun
    run_token: str


def run_create(
    *,
    actor: User,
    username: str,
    conversation_id: str,
    request_id: str,
    kind: str = RunKind.CHAT,
    worker_id: str,
    lease_seconds: int = 60,
    prompt: str = "",
    goal: str | None = None,
    parent_run_id: str | None = None,
    project_id: str | None = None,
) -> IssuedRun:
    """Create a running run on behalf of ``username`` and issue its first run token."""
    require_service_principal(actor)
    user = user_get_acting(actor=actor, username=username)
    if kind not in RunKind.values:
        raise InvalidInput(f"kind must be one of {', '.join(RunKind.values)}.", code=ErrorCode.INVALID_KIND)
    if not isinstance(request_id, str) or not request_id.strip() or len(request_id) > 100:
        raise InvalidInput("request_id must be a non-empty string of at most 100 characters.", code=ErrorCode.INVALID)
    worker_id, lease_seconds = _worker_id(worker_id), _lease_seconds(lease_seconds)
    conversation = conversations_visible(user=actor).filter(pk=conversation_id, owner=user).first()
    if conversation is None:
        raise NotFound("Conversation not found for this user.")
    _require_chat_in_reach(actor=actor, session_key=conversation.session_key, user_id=user.pk)
    if conversation.status != ConversationStatus.ACTIVE:
        raise Conflict("The conversation is not active.", code=ErrorCode.CONVERSATION_NOT_ACTIVE)
    if kind in TOP_LEVEL_RUN_KINDS:
        # A main-agent run gets MEMORY.md, the memory tools and identity injection; a
        # sub-agent must never pass for one.
        if parent_run_id:
            raise InvalidInput(
                f"A {kind} run cannot have parent_run_id; use kind=subagent.", code=ErrorCode.PARENT_NOT_ALLOWED
            )
        if not conversation_is_main_thread(conversation):
            raise InvalidInput(
                f"A {kind} run cannot execute on a sub-agent or agent-call thread.", code=ErrorCode.SUBAGENT_THREAD
            )
    parent = None
    if parent_run_id:
        parent = runs_visible(user=actor).filter(pk=parent_run_id, user=user).first()
        if parent is None:
            raise NotFound("Parent run not found for this user.")
    if kind == RunKind.SUBAGENT and parent is None:
        raise InvalidInput("A subagent run needs parent_run_id.", code=ErrorCode.PARENT_REQUIRED)
    project = None
    if project_id:
        project = project_require_permission(user=user, project_id=project_id, permission=CREATE_TASK)
    elif conversation.project_id:
        project = conversation.project
    reach_require_project(actor, project.pk if project else None)
    issued = _running_run(
        actor=actor,
        user=user,
        conversation=conversation,
        project=project,
        request_id=request_id.strip(),
        kind=kind,
        parent_run=parent,
        prompt=prompt or "",
        goal=goal,
        worker_id=worker_id,
        lease_seconds=lease_seconds,
    )
    with transaction.atomic(durable=True):
        issued.run.save(force_insert=True)
    return issued


def _within_project(actor: User) -> bool:
    """``AgentRun.within_project`` for a run ``actor`` starts or takes over: its token is limited
    to projects."""
    reach = token_reach(actor)
    return reach is not None and reach.project_ids is not None


def _running_run(*, actor, user, conversation, lease_seconds: int, **fields) -> IssuedRun:
    """A new running run (not saved yet) holding its first lease, and that lease's token."""
    now = timezone.now()
    run = AgentRun(
        user=user,
        created_by=actor,
        conversation=conversation,
        not_remembered=conversation.no_memory,
        status=RunStatus.RUNNING,
        lease_expires_at=now + timedelta(seconds=lease_seconds),
        lease_generation=1,
        started_at=now,
        within_project=_within_project(actor),
        **fields,
    )
    token = new_run_token(run.pk, 1)
    run.run_token_hash = hash_run_token(token)
    run.full_clean()
    return IssuedRun(run, token)


ASSISTANT_THREAD_TITLE = "Assistant (MCP)"


def assistant_run_open(
    *, actor: User, username: str, worker_id: str, lease_seconds: int = 60, request_id: str
) -> IssuedRun:
    """A top-level chat run for an assistant connected over MCP (docs/mcp.md), in the user's
    assistant thread (created on first use, then reused, so sessions do not pile up threads).

    A service principal opens it for ``username`` under the rules of ``conversation_create``
    and ``run_create`` (its token's reach included). Anyone else opens it only for themselves:
    such a run reaches their own notes file and history, which they read and edit anyway. The
    run has no messages to learn from, so auto-memory neither extracts from it nor injects into it.
    """
    if is_service_principal(actor):
        user = user_get_acting(actor=actor, username=username)
    elif username == actor.get_username():
        user = actor
    else:
        raise NotFound("Only service principals open runs for other users.")
    worker_id, lease_seconds = _worker_id(worker_id), _lease_seconds(lease_seconds)
    reach_require_project(actor, None)
    with transaction.atomic(durable=True):
        thread = (
            conversations_visible(user=actor)
            .filter(
                owner=user,
                source=ConversationSource.API,
                title=ASSISTANT_THREAD_TITLE,
                status=ConversationStatus.ACTIVE,
                parent__isnull=True,
                project__isnull=True,
            )
            .order_by("created_at", "id")
            .first()
        )
        if thread is None:
            thread = Conversation(owner=user, source=ConversationSource.API, title=ASSISTANT_THREAD_TITLE)
            thread.full_clean()
            thread.save(force_insert=True)
        issued = _running_run(
            actor=actor,
            user=user,
            conversation=thread,
            request_id=request_id,
            kind=RunKind.CHAT,
            worker_id=worker_id,
            lease_seconds=lease_seconds,
            auto_memory_generate=False,
            auto_memory_use=False,
        )
        issued.run.save(force_insert=True)
    return issued


def run_claim(*, actor: User, run_id: str, worker_id: str, lease_seconds: int = 60) -> IssuedRun:
    """Take over a run whose lease expired (or renew one's own): one conditional UPDATE, so of
    two racing workers exactly one wins. The previous token stops working."""
    require_service_principal(actor)
    worker_id, lease_seconds = _worker_id(worker_id), _lease_seconds(lease_seconds)
    with transaction.atomic(durable=True):
        current = (
            runs_visible(user=actor)
            .filter(pk=run_id)
            .values("lease_generation", "status", "user_id", "conversation__session_key")
            .first()
        )
        if current is None:
            raise NotFound("Run not found.")
        _require_chat_in_reach(
            actor=actor, session_key=current["conversation__session_key"], user_id=current["user_id"]
        )
        if current["status"] in FINISHED_STATUSES:
            raise Conflict(f"The run is {current['status']}.", code=ErrorCode.RUN_FINISHED)
        generation = current["lease_generation"] + 1
        token = new_run_token(run_id, generation)
        now = timezone.now()
        claimable = Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lte=now) | Q(worker_id=worker_id)
        updated = (
            AgentRun.objects.filter(claimable, pk=run_id, lease_generation=current["lease_generation"])
            .filter(status__in=[RunStatus.QUEUED, RunStatus.RUNNING])
            .update(
                worker_id=worker_id,
                lease_expires_at=now + timedelta(seconds=lease_seconds),
                lease_generation=F("lease_generation") + 1,
                run_token_hash=hash_run_token(token),
                status=RunStatus.RUNNING,
                within_project=_within_project(actor),  # the reach of whoever holds it now
                updated_at=now,
            )
        )
        if updated != 1:
            raise Conflict("The run's lease is held by another worker.", code=ErrorCode.LEASE_HELD)
    return IssuedRun(AgentRun.objects.get(pk=run_id), token)


def run_heartbeat(*, credential: RunCredential, lease_seconds: int = 60) -> AgentRun:
    lease_seconds = _lease_seconds(lease_seconds)
    now = timezone.now()
    with transaction.atomic(durable=True):
        run = AgentRun.objects.select_for_update().filter(pk=credential.run_id).first()
        if run is None:
            raise RunNotAuthorized("This run token is not valid for this run.")
        run_check_lease(run=run, credential=credential, now=now)
        run.lease_expires_at = now + timedelta(seconds=lease_seconds)
        run.save(update_fields=["lease_expires_at", "updated_at"])
    return run


def run_context_round_next(*, run_id: str) -> int:
    """Count one more context assembly of the run and return its number (1 = the first).

    One UPDATE and the read of its result in one transaction: the row lock the UPDATE takes
    (PostgreSQL) or the write lock (SQLite) makes concurrent calls count one after the other, so
    exactly one of them is round 1. A lost increment after a crash costs nothing, so PostgreSQL
    does not wait for the commit to reach the disk.
    """
    with transaction.atomic():
        connection = transaction.get_connection()
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL synchronous_commit TO OFF")
        AgentRun.objects.filter(pk=run_id).update(context_rounds=F("context_rounds") + 1)
        return AgentRun.objects.filter(pk=run_id).values_list("context_rounds", flat=True).get()


def run_finish(*, credential: RunCredential, status: str, usage: dict | None = None) -> AgentRun:
    """Finish a run. The token must still be the run's current one; an expired lease that
    nobody took over may still report its outcome."""
    if status not in FINISHED_STATUSES:
        raise InvalidInput("status must be completed, failed or cancelled.", code=ErrorCode.INVALID_STATUS)
    usage = validate_json_container(usage, field="usage", code=ErrorCode.INVALID_USAGE, max_bytes=MAX_USAGE_BYTES)
    now = timezone.now()
    with transaction.atomic(durable=True):
        run = AgentRun.objects.select_for_update().filter(pk=credential.run_id).first()
        if run is None:
            raise RunNotAuthorized("This run token is not valid for this run.")
        try:
            run_check_lease(run=run, credential=credential, now=now)
        except LeaseLost:
            if run.lease_generation != credential.generation:
                raise
        run.status = status
        run.finished_at = now
        run.usage = {**(run.usage or {}), **usage}
        run.lease_expires_at = None
        run.save(update_fields=["status", "finished_at", "usage", "lease_expires_at", "updated_at"])
    return run
