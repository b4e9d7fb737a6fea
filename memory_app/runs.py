"""Runs and leases (SPEC §5): create, claim, heartbeat, finish, and the run-token check.

A run token is ``<run_id>.<lease_generation>.<secret>``; only its SHA-256 is stored. Creating
or claiming a run issues a new token bound to (run, worker, lease generation) and replaces
the stored hash, so a token from before a take-over no longer authenticates anything.
"""

import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Left
from django.utils import timezone

from config.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from identity_app.permissions import CREATE_TASK, is_service_principal, project_require_permission
from memory_app.conversations import conversation_is_main_thread
from memory_app.models import AgentRun, Conversation, ConversationStatus, RunKind, RunStatus
from memory_app.models.runs import TOP_LEVEL_RUN_KINDS

MIN_LEASE_SECONDS = 5
MAX_LEASE_SECONDS = 3600
MAX_USAGE_BYTES = 8 * 1024
FINISHED_STATUSES = (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED)


class RunNotAuthorized(PermissionDenied):
    code = "run_not_authorized"


class LeaseLost(PermissionDenied):
    code = "lease_lost"


class RunNotRunning(PermissionDenied):
    code = "run_not_running"


def hash_run_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _new_token(run_id: str, generation: int) -> str:
    return f"{run_id}.{generation}.{secrets.token_urlsafe(32)}"


@dataclass(frozen=True)
class RunCredential:
    """What a valid ``Authorization: Run <token>`` proves: this run, this lease generation."""

    run_id: str
    user_id: int
    generation: int
    token_hash: str


def run_authenticate(token: str):
    """``(user, credential)`` when ``token`` is the current token of its run, else None."""
    parts = token.split(".")
    if len(parts) != 3 or not parts[1].isdigit() or len(token) > 300:
        return None
    run_id, generation = parts[0], int(parts[1])
    run = (
        AgentRun.objects.select_related("user")
        .only("id", "user", "lease_generation", "run_token_hash")
        .filter(pk=run_id)
        .first()
    )
    if run is None or run.lease_generation != generation:
        return None
    token_hash = hash_run_token(token)
    if not run.run_token_hash or not hmac.compare_digest(run.run_token_hash, token_hash):
        return None
    credential = RunCredential(run_id=run_id, user_id=run.user_id, generation=generation, token_hash=token_hash)
    return run.user, credential


def run_credential_from_token(token: str) -> RunCredential | None:
    found = run_authenticate(token)
    return found[1] if found else None


def credential_require_run(*, credential: RunCredential | None, run_id: str) -> RunCredential:
    """A run token only ever acts for its own run."""
    if credential is None or credential.run_id != run_id:
        raise RunNotAuthorized("This run token is not valid for this run.")
    return credential


def run_check_lease(*, run: AgentRun, credential: RunCredential, now=None) -> None:
    """The lease-owner check shared by every run-token operation: the token is the current
    one of the run, the run is running and its lease has not expired."""
    now = now or timezone.now()
    if run.pk != credential.run_id or run.user_id != credential.user_id:
        raise RunNotAuthorized("This run token is not valid for this run.")
    if run.lease_generation != credential.generation or not hmac.compare_digest(
        run.run_token_hash or "", credential.token_hash
    ):
        raise LeaseLost("The run was claimed by another worker; this token is no longer valid.")
    if run.status != RunStatus.RUNNING:
        raise RunNotRunning(f"The run is {run.status}, not running.")
    if run.lease_expires_at is None or run.lease_expires_at <= now:
        raise LeaseLost("The run's lease has expired; claim it again.")


def _require_service(actor: AbstractBaseUser) -> None:
    if not is_service_principal(actor):
        raise PermissionDenied("Only service principals may do this.", code="service_principal_required")


def _lease_seconds(value) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not MIN_LEASE_SECONDS <= value <= MAX_LEASE_SECONDS:
        raise InvalidInput(
            f"lease_seconds must be an integer between {MIN_LEASE_SECONDS} and {MAX_LEASE_SECONDS}.",
            code="invalid_lease",
        )
    return value


def _worker_id(value) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 200:
        raise InvalidInput("worker_id must be a non-empty string of at most 200 characters.", code="invalid_worker")
    return value.strip()


def user_by_username(username) -> AbstractBaseUser:
    if not isinstance(username, str) or not username:
        raise InvalidInput("user must be a username.", code="unknown_user")
    user = get_user_model().objects.filter(username=username, is_active=True).first()
    if user is None:
        raise InvalidInput(f"No active user named {username!r}.", code="unknown_user")
    return user


@dataclass(frozen=True)
class IssuedRun:
    run: AgentRun
    run_token: str


def run_create(
    *,
    actor: AbstractBaseUser,
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
    _require_service(actor)
    user = user_by_username(username)
    if kind not in RunKind.values:
        raise InvalidInput(f"kind must be one of {', '.join(RunKind.values)}.", code="invalid_kind")
    if not isinstance(request_id, str) or not request_id.strip() or len(request_id) > 100:
        raise InvalidInput("request_id must be a non-empty string of at most 100 characters.", code="invalid")
    worker_id, lease_seconds = _worker_id(worker_id), _lease_seconds(lease_seconds)
    conversation = Conversation.objects.filter(pk=conversation_id, owner=user).first()
    if conversation is None:
        raise NotFound("Conversation not found for this user.")
    if conversation.status != ConversationStatus.ACTIVE:
        raise Conflict("The conversation is not active.", code="conversation_not_active")
    if kind in TOP_LEVEL_RUN_KINDS:
        # A main-agent run gets MEMORY.md, the memory tools and identity injection; a
        # sub-agent must never pass for one.
        if parent_run_id:
            raise InvalidInput(f"A {kind} run cannot have parent_run_id; use kind=subagent.", code="parent_not_allowed")
        if not conversation_is_main_thread(conversation):
            raise InvalidInput(
                f"A {kind} run cannot execute on a sub-agent or agent-call thread.", code="subagent_thread"
            )
    parent = None
    if parent_run_id:
        parent = AgentRun.objects.filter(pk=parent_run_id, user=user).first()
        if parent is None:
            raise NotFound("Parent run not found for this user.")
    if kind == RunKind.SUBAGENT and parent is None:
        raise InvalidInput("A subagent run needs parent_run_id.", code="parent_required")
    project = None
    if project_id:
        project = project_require_permission(user=user, project_id=project_id, permission=CREATE_TASK)
    elif conversation.project_id:
        project = conversation.project
    now = timezone.now()
    run = AgentRun(
        user=user,
        created_by=actor,
        conversation=conversation,
        project=project,
        request_id=request_id.strip(),
        kind=kind,
        parent_run=parent,
        status=RunStatus.RUNNING,
        prompt=prompt or "",
        goal=goal,
        worker_id=worker_id,
        lease_expires_at=now + timedelta(seconds=lease_seconds),
        lease_generation=1,
        started_at=now,
    )
    token = _new_token(run.pk, 1)
    run.run_token_hash = hash_run_token(token)
    run.full_clean()
    with transaction.atomic(durable=True):
        run.save(force_insert=True)
    return IssuedRun(run, token)


def run_claim(*, actor: AbstractBaseUser, run_id: str, worker_id: str, lease_seconds: int = 60) -> IssuedRun:
    """Take over a run whose lease expired (or renew one's own): one conditional UPDATE, so of
    two racing workers exactly one wins. The previous token stops working."""
    _require_service(actor)
    worker_id, lease_seconds = _worker_id(worker_id), _lease_seconds(lease_seconds)
    with transaction.atomic(durable=True):
        current = AgentRun.objects.filter(pk=run_id).values("lease_generation", "status").first()
        if current is None:
            raise NotFound("Run not found.")
        if current["status"] in FINISHED_STATUSES:
            raise Conflict(f"The run is {current['status']}.", code="run_finished")
        generation = current["lease_generation"] + 1
        token = _new_token(run_id, generation)
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
                updated_at=now,
            )
        )
        if updated != 1:
            raise Conflict("The run's lease is held by another worker.", code="lease_held")
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


def _validate_usage(usage) -> dict:
    if usage is None:
        return {}
    if not isinstance(usage, dict):
        raise InvalidInput("usage must be a JSON object.", code="invalid_usage")
    if len(json.dumps(usage, ensure_ascii=False).encode("utf-8")) > MAX_USAGE_BYTES:
        raise InvalidInput(f"usage is larger than {MAX_USAGE_BYTES} bytes.", code="too_large")
    return usage


def run_finish(*, credential: RunCredential, status: str, usage: dict | None = None) -> AgentRun:
    """Finish a run. The token must still be the run's current one; an expired lease that
    nobody took over may still report its outcome."""
    if status not in FINISHED_STATUSES:
        raise InvalidInput("status must be completed, failed or cancelled.", code="invalid_status")
    usage = _validate_usage(usage)
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


# --- reads ------------------------------------------------------------------------------
def run_lease_state(run: AgentRun) -> str:
    """``held`` (running, lease live), ``expired`` (running, claimable) or ``released``."""
    if run.status != RunStatus.RUNNING:
        return "released"
    if run.lease_expires_at is None or run.lease_expires_at <= timezone.now():
        return "expired"
    return "held"


def runs_with_lease_state(qs, state: str, *, now=None):
    """``qs`` narrowed to runs whose ``run_lease_state`` is ``state`` (the same rule as a query)."""
    now = now or timezone.now()
    running = Q(status=RunStatus.RUNNING)
    live = Q(lease_expires_at__isnull=False, lease_expires_at__gt=now)
    if state == "held":
        return qs.filter(running & live)
    if state == "expired":
        return qs.filter(running).exclude(live)
    if state == "released":
        return qs.exclude(running)
    raise InvalidInput("lease state must be held, expired or released.", code="invalid_lease_state")


def runs_visible(*, user: AbstractBaseUser):
    """Runs a caller may read: their own; service principals read all."""
    qs = AgentRun.objects.select_related("conversation", "user", "project")
    return qs if is_service_principal(user) else qs.filter(user=user)


def runs_list(*, user: AbstractBaseUser, text_chars: int):
    """``runs_visible`` for a list: only the first ``text_chars`` characters of ``prompt`` and
    ``goal`` are loaded (``prompt_head``, ``goal_head``)."""
    return (
        runs_visible(user=user)
        .annotate(prompt_head=Left("prompt", text_chars), goal_head=Left("goal", text_chars))
        .defer("prompt", "goal")
        .order_by("-created_at", "-id")
    )


def run_get(*, user: AbstractBaseUser, run_id: str, own_only: bool = False) -> AgentRun:
    """A run the caller may read, else 404. ``own_only``: the caller's own runs only, even for
    service principals (settings that belong to the run's user, like auto-memory flags)."""
    qs = AgentRun.objects.select_related("conversation", "user", "project").filter(user=user) if own_only else runs_visible(user=user)
    run = qs.filter(pk=str(run_id)[:40]).first()
    if run is None:
        raise NotFound("Run not found.")
    return run
