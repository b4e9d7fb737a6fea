"""The five gates a completed run passes before anything is extracted (docs/auto-memory.md), in this order.

Before them, ``no_memory_gate`` stops every run of a "don't remember this chat" conversation
without reading its messages; it has no threshold and cannot be turned off.

Each gate is a small pure function of the values it compares and its threshold (0 disables
it), returning a ``GateResult`` that names the gate and keeps the compared values for the log.
"""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class GateResult:
    gate: str
    passed: bool
    reason: str = ""
    values: dict = field(default_factory=dict)


def _result(gate: str, passed: bool, reason: str, **values) -> GateResult:
    return GateResult(gate=gate, passed=passed, reason="" if passed else reason, values=values)


NO_MEMORY_GATE = "no_memory"


def no_memory_gate(*, conversation_no_memory: bool) -> GateResult:
    """The run's conversation is in "don't remember this chat" mode: nothing is taken from it.
    Checked when the run is processed, so the mode at that moment counts."""
    return _result(
        NO_MEMORY_GATE,
        not conversation_no_memory,
        "the conversation is in “don't remember this chat” mode",
        conversation_no_memory=conversation_no_memory,
    )


def idle_gate(*, idle_seconds: float | None, min_idle_minutes: int) -> GateResult:
    """The run finished at least N minutes ago (the conversation has settled)."""
    required = min_idle_minutes * 60
    passed = min_idle_minutes == 0 or (idle_seconds is not None and idle_seconds >= required)
    return _result("idle", passed, "run finished too recently", idle_seconds=idle_seconds, min_idle_seconds=required)


def duration_gate(*, duration_seconds: float | None, min_duration_seconds: int) -> GateResult:
    """The run lasted at least N seconds."""
    passed = min_duration_seconds == 0 or (duration_seconds is not None and duration_seconds >= min_duration_seconds)
    return _result(
        "duration",
        passed,
        "run too short",
        duration_seconds=duration_seconds,
        min_duration_seconds=min_duration_seconds,
    )


def length_gate(*, length_chars: int, min_length_chars: int) -> GateResult:
    """The conversation of the run holds at least N characters."""
    passed = length_chars >= min_length_chars
    return _result(
        "length", passed, "conversation too short", length_chars=length_chars, min_length_chars=min_length_chars
    )


def external_context_gate(*, inter_run_messages: int, coordinator_subtasks: int) -> GateResult:
    """A run that received inter-run messages or coordinator sub-tasks is skipped: what it
    says may come from another run or user, not from this conversation. Always on."""
    passed = inter_run_messages == 0 and coordinator_subtasks == 0
    return _result(
        "external_context",
        passed,
        "run received external context",
        inter_run_messages=inter_run_messages,
        coordinator_subtasks=coordinator_subtasks,
    )


def quota_gate(*, quota_remaining_pct: float | None, min_quota_remaining_pct: int) -> GateResult:
    """At least N percent of the user's quota remained when the run finished.

    A run that reported no quota figure passes (nothing to compare; the runtime has no quota).
    """
    passed = (
        min_quota_remaining_pct == 0 or quota_remaining_pct is None or quota_remaining_pct >= min_quota_remaining_pct
    )
    return _result(
        "quota",
        passed,
        "remaining quota too low",
        quota_remaining_pct=quota_remaining_pct,
        min_quota_remaining_pct=min_quota_remaining_pct,
    )


GATE_ORDER = ("idle", "duration", "length", "external_context", "quota")


@dataclass(frozen=True)
class GateInputs:
    idle_seconds: float | None
    duration_seconds: float | None
    length_chars: int
    inter_run_messages: int
    coordinator_subtasks: int
    quota_remaining_pct: float | None


def first_stop(inputs: GateInputs, thresholds) -> GateResult | None:
    """Run the gates in order; the first that stops the run, or None when all pass."""
    checks = (
        lambda: idle_gate(idle_seconds=inputs.idle_seconds, min_idle_minutes=thresholds.min_idle_minutes),
        lambda: duration_gate(
            duration_seconds=inputs.duration_seconds, min_duration_seconds=thresholds.min_duration_seconds
        ),
        lambda: length_gate(length_chars=inputs.length_chars, min_length_chars=thresholds.min_length_chars),
        lambda: external_context_gate(
            inter_run_messages=inputs.inter_run_messages, coordinator_subtasks=inputs.coordinator_subtasks
        ),
        lambda: quota_gate(
            quota_remaining_pct=inputs.quota_remaining_pct,
            min_quota_remaining_pct=thresholds.min_quota_remaining_pct,
        ),
    )
    for check in checks:
        result = check()
        if not result.passed:
            return result
    return None
