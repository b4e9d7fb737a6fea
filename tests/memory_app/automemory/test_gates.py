"""Each gate stops a run (logged with the values compared) and passes at its boundary."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memory_app.automemory import gates, worker
from memory_app.automemory.models import AutoMemoryClaim, AutoMemoryLogEntry
from memory_app.automemory.worker import round_run
from memory_app.runs.models import AgentRun, RunKind
from memory_app.threads.models import MessageType
from tests.factories import CompletedRunFactory, MessageFactory
from tests.memory_app.automemory.helpers import LONG_TALK, auto_memories, enable, finished_run


# --- the pure functions --------------------------------------------------------------------
def test_idle_gate_stops_below_and_passes_at_boundary():
    assert not gates.idle_gate(idle_seconds=599, min_idle_minutes=10).passed
    assert gates.idle_gate(idle_seconds=600, min_idle_minutes=10).passed
    assert not gates.idle_gate(idle_seconds=None, min_idle_minutes=10).passed
    assert gates.idle_gate(idle_seconds=0, min_idle_minutes=0).passed
    stop = gates.idle_gate(idle_seconds=30, min_idle_minutes=10)
    assert (stop.gate, stop.values) == ("idle", {"idle_seconds": 30, "min_idle_seconds": 600})


def test_duration_gate_stops_below_and_passes_at_boundary():
    assert not gates.duration_gate(duration_seconds=29.9, min_duration_seconds=30).passed
    assert gates.duration_gate(duration_seconds=30, min_duration_seconds=30).passed
    assert not gates.duration_gate(duration_seconds=None, min_duration_seconds=30).passed
    assert gates.duration_gate(duration_seconds=None, min_duration_seconds=0).passed


def test_length_gate_stops_below_and_passes_at_boundary():
    assert not gates.length_gate(length_chars=199, min_length_chars=200).passed
    assert gates.length_gate(length_chars=200, min_length_chars=200).passed
    assert gates.length_gate(length_chars=0, min_length_chars=0).passed


def test_external_context_gate_stops_on_either_source():
    assert gates.external_context_gate(inter_run_messages=0, coordinator_subtasks=0).passed
    assert not gates.external_context_gate(inter_run_messages=1, coordinator_subtasks=0).passed
    assert not gates.external_context_gate(inter_run_messages=0, coordinator_subtasks=2).passed


def test_quota_gate_stops_below_and_passes_at_boundary():
    assert not gates.quota_gate(quota_remaining_pct=19.5, min_quota_remaining_pct=20).passed
    assert gates.quota_gate(quota_remaining_pct=20, min_quota_remaining_pct=20).passed
    assert gates.quota_gate(quota_remaining_pct=None, min_quota_remaining_pct=20).passed
    assert gates.quota_gate(quota_remaining_pct=0, min_quota_remaining_pct=0).passed


def test_gates_run_in_the_fixed_order():
    class T:
        min_idle_minutes, min_duration_seconds, min_length_chars, min_quota_remaining_pct = 10, 30, 200, 20

    everything_bad = gates.GateInputs(
        idle_seconds=1,
        duration_seconds=1,
        length_chars=1,
        inter_run_messages=1,
        coordinator_subtasks=1,
        quota_remaining_pct=1,
    )
    order = []
    inputs = everything_bad
    for gate in gates.GATE_ORDER:
        stop = gates.first_stop(inputs, T)
        order.append(stop.gate)
        fix = {
            "idle": {"idle_seconds": 10**6},
            "duration": {"duration_seconds": 10**6},
            "length": {"length_chars": 10**6},
            "external_context": {"inter_run_messages": 0, "coordinator_subtasks": 0},
            "quota": {"quota_remaining_pct": 100},
        }[gate]
        inputs = gates.GateInputs(**{**inputs.__dict__, **fix})
    assert tuple(order) == gates.GATE_ORDER
    assert gates.first_stop(inputs, T) is None


# --- through the worker --------------------------------------------------------------------


def _round():
    return round_run(worker_id="test")


def _only_log(run):
    entries = list(AutoMemoryLogEntry.objects.filter(run_ref=run.pk))
    assert len(entries) == 1, entries
    return entries[0]


@pytest.mark.django_db
def test_idle_gate_stops_run_and_keeps_it_for_later(alice, project):
    enable(alice)
    run = finished_run(user=alice, project=project, finished_at=timezone.now() - timedelta(minutes=3))
    results = _round()
    assert [r.outcome for r in results] == ["deferred"]
    entry = _only_log(run)
    assert (entry.outcome, entry.gate) == ("skipped", "idle")
    assert entry.details["min_idle_seconds"] == 600 and 170 < entry.details["idle_seconds"] < 200
    run.refresh_from_db()
    assert run.auto_memory_processed_at is None and not auto_memories().exists()
    # Deferred until it is idle long enough: later rounds before that do not even look at it.
    assert round_run(worker_id="test", now=timezone.now() + timedelta(minutes=6)) == []
    assert AutoMemoryLogEntry.objects.filter(run_ref=run.pk).count() == 1
    # Once settled, the run is extracted (the wait was not counted as a failed attempt).
    [result] = round_run(worker_id="test", now=timezone.now() + timedelta(minutes=7, seconds=5))
    assert result.outcome == "extracted"
    assert auto_memories(project).count() == 2
    assert not AutoMemoryClaim.objects.exists()


@pytest.mark.django_db
def test_waiting_runs_do_not_fill_the_batch(alice, bob, project):
    enable(alice, min_idle_minutes=60 * 24)
    enable(bob)
    waiting = [finished_run(user=alice, project=project) for _ in range(3)]
    ready = finished_run(user=bob, project=project, finished_at=timezone.now() - timedelta(minutes=30))
    assert {r.outcome for r in round_run(worker_id="test", limit=3)} == {"deferred"}
    [result] = round_run(worker_id="test", limit=3)
    assert (result.run_id, result.outcome) == (ready.pk, "extracted")
    assert all(AgentRun.objects.get(pk=r.pk).auto_memory_processed_at is None for r in waiting)


@pytest.mark.django_db
def test_idle_boundary_passes(alice, project):
    enable(alice, min_idle_minutes=1)
    finished_run(user=alice, project=project, finished_at=timezone.now() - timedelta(seconds=61))
    assert [r.outcome for r in _round()] == ["extracted"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("setup", "gate", "values"),
    [
        ({"usage": {"duration_s": 29, "quota_remaining_pct": 80}}, "duration", {"duration_seconds": 29.0}),
        ({"usage": {"duration_s": 60, "quota_remaining_pct": 19}}, "quota", {"quota_remaining_pct": 19.0}),
    ],
)
def test_duration_and_quota_gates_stop_and_mark_processed(alice, project, setup, gate, values):
    enable(alice)
    run = finished_run(user=alice, project=project, **setup)
    results = _round()
    assert [(r.outcome, r.gate) for r in results] == [("skipped", gate)]
    entry = _only_log(run)
    assert (entry.outcome, entry.gate) == ("skipped", gate)
    assert values.items() <= entry.details.items()
    run.refresh_from_db()
    assert run.auto_memory_processed_at is not None
    assert not auto_memories().exists()


@pytest.mark.django_db
def test_duration_from_timestamps_when_usage_has_none(alice, project):
    enable(alice, min_duration_seconds=601)
    run = finished_run(user=alice, project=project, usage={})
    assert [(r.outcome, r.gate) for r in _round()] == [("skipped", "duration")]
    assert _only_log(run).details["duration_seconds"] == 600.0


@pytest.mark.django_db
def test_duration_and_quota_boundaries_pass(alice, project):
    enable(alice)
    finished_run(user=alice, project=project, usage={"duration_s": 30, "quota_remaining_pct": 20})
    assert [r.outcome for r in _round()] == ["extracted"]


@pytest.mark.django_db
def test_length_gate_stops_short_conversation_and_boundary_passes(alice, project):
    enable(alice, min_length_chars=len(LONG_TALK) + 1)
    run = finished_run(user=alice, project=project, prompt="")
    assert [(r.outcome, r.gate) for r in _round()] == [("skipped", "length")]
    assert _only_log(run).details == {"length_chars": len(LONG_TALK), "min_length_chars": len(LONG_TALK) + 1}
    assert not auto_memories().exists()
    enable(alice, min_length_chars=len(LONG_TALK))
    finished_run(user=alice, project=project, prompt="")
    assert [r.outcome for r in _round()] == ["extracted"]


@pytest.mark.django_db
def test_inter_run_message_stops_run(alice, project):
    enable(alice)
    run = finished_run(user=alice, project=project)
    MessageFactory(run=run, type=MessageType.INTER_RUN, content="from run B")
    assert [(r.outcome, r.gate) for r in _round()] == [("skipped", "external_context")]
    assert _only_log(run).details == {"inter_run_messages": 1, "coordinator_subtasks": 0}
    assert not auto_memories().exists()


@pytest.mark.django_db
def test_coordinator_subtask_stops_run(alice, project):
    enable(alice)
    run = finished_run(user=alice, project=project)
    CompletedRunFactory(
        user=alice, project=project, kind=RunKind.COORDINATOR, parent_run=run, conversation=run.conversation
    )
    assert [(r.outcome, r.gate) for r in _round()] == [("skipped", "external_context")]
    assert _only_log(run).details == {"inter_run_messages": 0, "coordinator_subtasks": 1}


@pytest.mark.django_db
def test_run_dispatched_by_a_coordinator_is_never_extracted(alice, project):
    # It has a parent: not a top-level run, so the sweep never takes it (and nothing is logged
    # for it); the external-context gate still sees a coordinator parent if it ever were taken.
    enable(alice)
    coordinator = CompletedRunFactory(user=alice, project=project, kind=RunKind.COORDINATOR)
    run = finished_run(user=alice, project=project, parent_run=coordinator)
    assert _round() == []
    assert not AutoMemoryLogEntry.objects.filter(run_id=run.pk).exists()
    assert worker.gate_inputs(run, text="x", now=timezone.now()).coordinator_subtasks == 1
