"""Reading a run: its conversation's messages as one text (bounded), and the gates' inputs."""

from datetime import datetime

from django.db.models import Q

from memory_app.automemory.gates import GateInputs
from memory_app.runs.models import AgentRun, RunKind, top_level_runs_q
from memory_app.threads.models import Message, MessageRole, MessageType

MAX_MESSAGES = 500
MAX_MESSAGE_CHARS = 20_000
MAX_TEXT_CHARS = 200_000


def _run_messages_q(run: AgentRun, now: datetime) -> Q:
    """The run's messages: those tagged with it, untagged ones written while it ran, and the
    user's turn that started it."""
    start = run.started_at or run.created_at
    end = run.finished_at or now
    messages = Q(run=run) | Q(run__isnull=True, created_at__gte=start, created_at__lte=end)
    turn = _starting_turn_id(run, start)
    return messages | Q(pk=turn) if turn is not None else messages


def _starting_turn_id(run: AgentRun, start: datetime) -> int | None:
    """The user message that started the run. A runtime posts the user's turn and then creates
    the run, so that message is older than the run and untagged: the thread's latest untagged
    user text before the start, unless another top-level run of the thread was created after
    it (then it was that run's turn)."""
    turn = (
        Message.objects.filter(
            conversation_id=run.conversation_id,
            run__isnull=True,
            role=MessageRole.USER,
            type=MessageType.TEXT,
            created_at__lt=start,
        )
        .order_by("-created_at", "-id")
        .values("pk", "created_at")
        .first()
    )
    if turn is None:
        return None
    answered_before = (
        AgentRun.objects.filter(
            top_level_runs_q(),
            conversation_id=run.conversation_id,
            created_at__gte=turn["created_at"],
            created_at__lt=run.created_at,
        )
        .exclude(pk=run.pk)
        .exists()
    )
    return None if answered_before else turn["pk"]


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def run_text(run: AgentRun, *, now: datetime) -> str:
    """The run's conversation as plain text (user/assistant text only), bounded."""
    contents = list(
        Message.objects.filter(_run_messages_q(run, now), conversation_id=run.conversation_id)
        .filter(role__in=[MessageRole.USER, MessageRole.ASSISTANT], type=MessageType.TEXT)
        .order_by("created_at", "id")
        .values_list("content", flat=True)[:MAX_MESSAGES]
    )
    parts = [run.prompt, run.goal or ""] if run.prompt not in contents else [run.goal or ""]
    parts += contents
    text = "\n".join(part[:MAX_MESSAGE_CHARS] for part in parts if part)
    return text[:MAX_TEXT_CHARS]


def gate_inputs(run: AgentRun, *, text: str, now: datetime) -> GateInputs:
    usage = run.usage if isinstance(run.usage, dict) else {}
    duration = _number(usage.get("duration_s"))
    if duration is None and run.started_at and run.finished_at:
        duration = (run.finished_at - run.started_at).total_seconds()
    inter_run = Message.objects.filter(
        _run_messages_q(run, now), conversation_id=run.conversation_id, type=MessageType.INTER_RUN
    ).count()
    coordinator = AgentRun.objects.filter(parent_run=run, kind=RunKind.COORDINATOR).count()
    if run.parent_run_id and AgentRun.objects.filter(pk=run.parent_run_id, kind=RunKind.COORDINATOR).exists():
        coordinator += 1
    return GateInputs(
        idle_seconds=(now - run.finished_at).total_seconds() if run.finished_at else None,
        duration_seconds=duration,
        length_chars=len(text),
        inter_run_messages=inter_run,
        coordinator_subtasks=coordinator,
        quota_remaining_pct=_number(usage.get("quota_remaining_pct")),
    )
