"""Reads of runs: the runs a caller may see, with their lease state."""

from django.db.models import Q
from django.db.models.functions import Left
from django.utils import timezone

from config.errors import InvalidInput, NotFound
from identity_app.models import User
from identity_app.permissions import is_service_principal, reach_q
from memory_app.runs.errors import ErrorCode
from memory_app.runs.models import AgentRun, RunStatus


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
    raise InvalidInput("lease state must be held, expired or released.", code=ErrorCode.INVALID_LEASE_STATE)


def runs_visible(*, user: User):
    """Runs a caller may read: their own; service principals read all within the reach of
    their token."""
    qs = AgentRun.objects.select_related("conversation", "user", "project")
    qs = qs if is_service_principal(user) else qs.filter(user=user)
    return qs.filter(reach_q(user, user_field="user", project_field="project"))


def runs_list(*, user: User, text_chars: int):
    """``runs_visible`` for a list: only the first ``text_chars`` characters of ``prompt`` and
    ``goal`` are loaded (``prompt_head``, ``goal_head``)."""
    return (
        runs_visible(user=user)
        .annotate(prompt_head=Left("prompt", text_chars), goal_head=Left("goal", text_chars))
        .defer("prompt", "goal")
        .order_by("-created_at", "-id")
    )


def run_get(*, user: User, run_id: str, own_only: bool = False) -> AgentRun:
    """A run the caller may read, else 404. ``own_only``: the caller's own runs only, even for
    service principals (settings that belong to the run's user, like auto-memory flags)."""
    qs = (
        AgentRun.objects.select_related("conversation", "user", "project")
        .filter(user=user)
        .filter(reach_q(user, user_field="user", project_field="project"))
        if own_only
        else runs_visible(user=user)
    )
    run = qs.filter(pk=str(run_id)[:40]).first()
    if run is None:
        raise NotFound("Run not found.")
    return run
