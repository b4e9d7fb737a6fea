"""Run tokens and the lease check (docs/runs.md): the one place that decides whether a run token
may act for its run right now.

A run token is ``<run_id>.<lease_generation>.<secret>``; only its SHA-256 is stored. Creating
or claiming a run issues a new token bound to (run, worker, lease generation) and replaces
the stored hash, so a token from before a take-over no longer authenticates anything.
"""

import functools
import hashlib
import hmac
import secrets
from dataclasses import dataclass, field, replace

from django.utils import timezone

from config.errors import PermissionDenied
from memory_app.notes.selectors import enable_memory_subquery
from memory_app.runs.errors import ErrorCode
from memory_app.runs.models import AgentRun, RunStatus

FINISHED_STATUSES = (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED)


class RunNotAuthorized(PermissionDenied):
    code = ErrorCode.RUN_NOT_AUTHORIZED


class LeaseLost(PermissionDenied):
    code = ErrorCode.LEASE_LOST


class RunNotRunning(PermissionDenied):
    code = ErrorCode.RUN_NOT_RUNNING


def hash_run_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_run_token(run_id: str, generation: int) -> str:
    return f"{run_id}.{generation}.{secrets.token_urlsafe(32)}"


@dataclass(frozen=True)
class RunCredential:
    """What a valid ``Authorization: Run <token>`` proves: this run, this lease generation."""

    run_id: str
    user_id: int
    generation: int
    token_hash: str
    # The run row as this request's authentication read it (with user, conversation and the
    # memory switch), for that same request only; a credential kept across requests
    # (the MCP session's) must drop it (``without_row``): the row would go stale.
    run: AgentRun | None = field(default=None, compare=False, repr=False)


def run_authenticate(token: str):
    """``(user, credential)`` when ``token`` is the current token of its run, else None."""
    parts = token.split(".")
    if len(parts) != 3 or not parts[1].isdigit() or len(token) > 300:
        return None
    run_id, generation = parts[0], int(parts[1])
    try:
        run = _run_lookup().get(pk=run_id)  # get(), not first(): no ORDER BY to build and plan
    except AgentRun.DoesNotExist:
        return None
    if run.lease_generation != generation:
        return None
    token_hash = hash_run_token(token)
    if not run.run_token_hash or not hmac.compare_digest(run.run_token_hash, token_hash):
        return None
    credential = RunCredential(
        run_id=run_id, user_id=run.user_id, generation=generation, token_hash=token_hash, run=run
    )
    return run.user, credential


@functools.cache
def _run_lookup():
    """The run with its user, conversation and the user's memory switch, built once
    per process (resolving the subquery costs more than running it); only filtered clones of it
    are evaluated. The user's ``run_agents`` grant is not read here: the run's user is the
    person it works for, and the paths a run token reaches (tools, context) do not ask for it;
    ``is_service_principal`` reads it if one does."""
    return AgentRun.objects.select_related("user", "conversation").annotate(
        stored_enable_memory=enable_memory_subquery()
    )


def without_row(credential: RunCredential) -> RunCredential:
    """The credential without the run row read at authentication, to keep beyond the request."""
    return replace(credential, run=None)


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
