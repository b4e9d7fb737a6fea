"""Extraction: project tier only, provenance, dedupe, supersede by target, claims, failures."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from identity_app.models import Membership, Role
from memory_app.automemory import worker
from memory_app.automemory.models import AutoMemoryClaim, AutoMemoryLogEntry
from memory_app.automemory.worker import round_run, runs_claim
from memory_app.memories.models import Memory, Status, Tier
from memory_app.runs.models import AgentRun, RunKind, RunStatus
from memory_app.threads.models import MessageRole
from tests.factories import MembershipFactory, MessageFactory, ProjectFactory, ProjectMemoryFactory
from tests.memory_app.automemory.helpers import all_stored_text, auto_memories, enable, finished_run

pytestmark = pytest.mark.django_db


def _round(**kwargs):
    return round_run(worker_id="test", **kwargs)


def test_extracts_project_memories_with_provenance(alice, project):
    enable(alice)
    run = finished_run(user=alice, project=project)
    [result] = _round()
    assert result.outcome == "extracted" and len(result.memory_ids) == 2
    memories = list(auto_memories().order_by("created_at", "id"))
    assert [(m.scope_type, m.project_id, m.kind, m.status) for m in memories] == [
        (Tier.PROJECT, project.pk, "decision", Status.ACTIVE),
        (Tier.PROJECT, project.pk, "convention", Status.ACTIVE),
    ]
    assert memories[0].content == "We decided to use PostgreSQL 16 for billing."
    for m in memories:
        assert m.origin == "auto" and m.source_thread_id == run.conversation_id
        assert m.evidence["run_id"] == run.pk and m.metadata["run_id"] == run.pk
        assert m.metadata["subject_key"] and m.created_by_id == alice.pk
    assert not Memory.objects.filter(scope_type=Tier.USER).exists()
    run.refresh_from_db()
    assert run.auto_memory_processed_at is not None
    assert not AutoMemoryClaim.objects.exists()
    log = AutoMemoryLogEntry.objects.filter(run_ref=run.pk)
    assert sorted(log.values_list("outcome", flat=True)) == ["extracted", "extracted"]
    assert set(log.values_list("memory_id", flat=True)) == set(result.memory_ids)


def test_chinese_statements_are_extracted(alice, project):
    enable(alice, min_length_chars=10)
    finished_run(
        user=alice, project=project, text="我们决定使用 Redis 做缓存。我们总是先写测试再写代码。今天天气不错。"
    )
    _round()
    assert sorted(auto_memories().values_list("kind", flat=True)) == ["convention", "decision"]


def test_defaults_off_extract_nothing(alice, project):
    run = finished_run(user=alice, project=project)
    assert _round() == []
    run.refresh_from_db()
    assert run.auto_memory_processed_at is None
    assert not auto_memories().exists() and not AutoMemoryLogEntry.objects.exists()


def test_run_override_on_beats_user_off(alice, project):
    enable(alice, generate=False)
    finished_run(user=alice, project=project, auto_memory_generate=True)
    assert [r.outcome for r in _round()] == ["extracted"]


def test_run_override_off_beats_user_on(alice, project):
    enable(alice)
    run = finished_run(user=alice, project=project, auto_memory_generate=False)
    assert _round() == []
    run.refresh_from_db()
    assert run.auto_memory_processed_at is None and not auto_memories().exists()


@pytest.mark.parametrize(
    "fields",
    [
        {"kind": RunKind.SUBAGENT},
        {"kind": RunKind.COORDINATOR},
        {"kind": RunKind.CHECKPOINT},
        {"status": RunStatus.RUNNING},
        {"status": RunStatus.FAILED},
    ],
)
def test_only_completed_top_level_runs_are_swept(alice, project, fields):
    enable(alice)
    finished_run(user=alice, project=project, **fields)
    assert _round() == []
    assert not auto_memories().exists()


@pytest.mark.parametrize("kind", [RunKind.CHAT, RunKind.RESUME])
def test_a_run_with_a_parent_is_never_swept_whatever_its_kind(alice, project, kind):
    """The sweep asks the one top-level rule (no parent run), not the kind alone: a chat run
    that has a parent is a sub-agent, and nothing is extracted from it."""
    enable(alice)
    parent = finished_run(user=alice, project=project, text="")
    child = finished_run(user=alice, project=project, kind=kind, parent_run=parent)
    AgentRun.objects.filter(pk=parent.pk).update(auto_memory_processed_at=timezone.now())
    assert _round() == []
    assert not auto_memories().exists()
    assert not AutoMemoryLogEntry.objects.filter(run_id=child.pk).exists()
    assert AgentRun.objects.get(pk=child.pk).auto_memory_processed_at is None


def test_resume_runs_are_swept(alice, project):
    enable(alice)
    finished_run(user=alice, project=project, kind=RunKind.RESUME)
    assert [r.outcome for r in _round()] == ["extracted"]


def test_processing_twice_adds_nothing(alice, project):
    enable(alice)
    run = finished_run(user=alice, project=project)
    _round()
    before = sorted(auto_memories().values_list("id", "content", "status"))
    assert _round() == []  # processed marker: not swept again
    # Even with the marker cleared the same statements add nothing.
    AgentRun.objects.filter(pk=run.pk).update(auto_memory_processed_at=None)
    [result] = _round()
    assert result.outcome == "unchanged" and result.unchanged == 2
    assert sorted(auto_memories().values_list("id", "content", "status")) == before


def test_same_target_supersedes_older_auto_memory(alice, project):
    enable(alice, min_length_chars=10)
    finished_run(user=alice, project=project, text="We use PostgreSQL for billing.")
    _round()
    [old] = auto_memories()
    finished_run(user=alice, project=project, text="We decided to use MySQL for billing.")
    [result] = _round()
    old.refresh_from_db()
    [new] = auto_memories().filter(status=Status.ACTIVE)
    assert old.status == Status.SUPERSEDED and old.superseded_by_id == new.pk
    assert new.content == "We decided to use MySQL for billing." and new.kind == "decision"
    assert result.superseded_ids == [old.pk]
    entry = AutoMemoryLogEntry.objects.get(outcome="superseded")
    assert (entry.memory_id, entry.superseded_memory_id) == (new.pk, old.pk)


def test_within_one_run_the_last_statement_of_a_target_wins(alice, project):
    enable(alice, min_length_chars=10)
    finished_run(user=alice, project=project, text="We use Redis for caching. Later: we use Memcached for caching.")
    _round()
    assert list(auto_memories().values_list("content", flat=True)) == ["Later: we use Memcached for caching."]


def test_manual_memories_are_never_superseded(alice, project):
    enable(alice, min_length_chars=10)
    manual = ProjectMemoryFactory(
        project=project, content="We use PostgreSQL for billing.", metadata={"subject_key": "target:billing"}
    )
    finished_run(user=alice, project=project, text="We use MySQL for billing.")
    _round()
    manual.refresh_from_db()
    assert manual.status == Status.ACTIVE
    assert auto_memories(project).count() == 1


def test_same_target_in_another_project_is_not_superseded(alice, project):
    enable(alice, min_length_chars=10)
    other = ProjectFactory()
    MembershipFactory(project=other, user=alice, role=Role.OWNER)
    finished_run(user=alice, project=other, text="We use PostgreSQL for billing.")
    _round()
    finished_run(user=alice, project=project, text="We use MySQL for billing.")
    _round()
    assert auto_memories(other).get().status == Status.ACTIVE
    assert auto_memories(project).get().content == "We use MySQL for billing."


def test_writes_only_to_the_runs_project(alice, bob, project):
    enable(alice)
    other = ProjectFactory()
    MembershipFactory(project=other, user=alice, role=Role.OWNER)
    finished_run(user=alice, project=project)
    _round()
    assert auto_memories().count() == auto_memories(project).count() == 2
    assert not Memory.objects.filter(project=other).exists()
    assert not Memory.objects.filter(scope_type__in=[Tier.USER, Tier.CHAT, Tier.GLOBAL]).exists()


def test_run_without_project_extracts_nothing_and_is_logged(alice):
    enable(alice)
    run = finished_run(user=alice, project=None)
    [result] = _round()
    assert result.outcome == "skipped" and "no project" in result.reason
    assert not Memory.objects.exists()
    entry = AutoMemoryLogEntry.objects.get(run_ref=run.pk)
    assert entry.outcome == "skipped" and "no project" in entry.reason
    run.refresh_from_db()
    assert run.auto_memory_processed_at is not None


@pytest.mark.parametrize("change", ["viewer", "removed"])
def test_user_without_create_task_gets_nothing_written(alice, bob, project, change):
    enable(bob)
    run = finished_run(user=bob, project=project)
    membership = Membership.objects.get(project=project, user=bob)
    if change == "viewer":
        membership.role = Role.VIEWER
        membership.save()
    else:
        membership.delete()
    [result] = _round()
    assert result.outcome == "skipped" and "may not write" in result.reason
    assert not Memory.objects.exists()
    assert AutoMemoryLogEntry.objects.get(run_ref=run.pk).outcome == "skipped"


def test_a_crashed_worker_leaves_the_run_claimable(alice, project):
    enable(alice)
    run = finished_run(user=alice, project=project)
    # A worker claims and dies before writing anything.
    [(run_id, _token, attempt)] = runs_claim(worker_id="dead", limit=10, now=timezone.now())
    assert (run_id, attempt) == (run.pk, 1)
    assert _round() == []  # the live claim keeps others away
    assert not auto_memories().exists()
    # After the claim expired another worker takes over and finishes.
    later = timezone.now() + timedelta(seconds=worker.CLAIM_SECONDS + 1)
    [result] = round_run(worker_id="alive", now=later)
    assert result.outcome == "extracted"
    assert auto_memories().count() == 2 and not AutoMemoryClaim.objects.exists()


def test_a_failure_while_writing_leaves_no_half_written_memories(alice, project, monkeypatch):
    """The worker dies between two memory writes (fault injected into the write path)."""
    enable(alice)
    run = finished_run(user=alice, project=project)
    from memory_app.memories import services

    real_create = services.memory_create
    calls = []

    def create_then_crash(**kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("worker killed")
        return real_create(**kwargs)

    monkeypatch.setattr(services, "memory_create", create_then_crash)
    [result] = _round()
    assert (result.outcome, result.error_class) == ("failed", "RuntimeError")
    assert len(calls) == 2
    assert not Memory.objects.exists()
    assert list(AutoMemoryLogEntry.objects.values_list("outcome", "error_class")) == [("failed", "RuntimeError")]
    assert "worker killed" not in all_stored_text()
    run.refresh_from_db()
    assert run.auto_memory_processed_at is None
    monkeypatch.setattr(services, "memory_create", real_create)
    [result] = _round()
    assert result.outcome == "extracted" and auto_memories().count() == 2


def test_a_run_that_keeps_killing_its_worker_is_given_up(alice, project):
    enable(alice)
    run = finished_run(user=alice, project=project)
    moment = timezone.now()
    for _ in range(worker.MAX_ATTEMPTS):  # claimed, then the worker dies every time
        assert len(runs_claim(worker_id="doomed", limit=10, now=moment)) == 1
        moment += timedelta(seconds=worker.CLAIM_SECONDS + 1)
    [result] = round_run(worker_id="next", now=moment)
    assert result.outcome == "failed" and "given up" in result.reason
    run.refresh_from_db()
    assert run.auto_memory_processed_at is not None
    assert not Memory.objects.exists()
    assert AutoMemoryLogEntry.objects.get(run_ref=run.pk).outcome == "failed"


def test_run_whose_thread_belongs_to_another_user_is_not_read(alice, mallory, project):
    enable(alice)
    run = finished_run(user=alice, project=project)
    run.conversation.owner = mallory
    run.conversation.save()
    [result] = _round()
    assert result.outcome == "skipped" and "another user" in result.reason
    assert not Memory.objects.exists()


def test_assistant_messages_are_read_and_tool_output_is_not(alice, project):
    enable(alice, min_length_chars=10)
    run = finished_run(
        user=alice, project=project, text="We decided to ship on Fridays for releases.", role=MessageRole.ASSISTANT
    )
    from memory_app.threads.models import MessageType

    MessageFactory(
        run=run,
        role=MessageRole.TOOL,
        type=MessageType.TOOL_RESULT,
        content="We use a leaked tool output for everything.",
    )
    _round()
    assert list(auto_memories().values_list("content", flat=True)) == ["We decided to ship on Fridays for releases."]


def test_round_is_bounded(alice, project):
    enable(alice)
    for _ in range(3):
        finished_run(user=alice, project=project)
    assert len(_round(limit=2)) == 2
    assert len(_round(limit=2)) == 1


def test_memory_worker_command_once(alice, project, capsys):
    enable(alice)
    finished_run(user=alice, project=project)
    call_command("memory_worker", "--once")
    assert "1 runs (extracted=1)" in capsys.readouterr().out
    assert auto_memories().count() == 2


@pytest.mark.parametrize("args", [["--once", "--interval", "0"], ["--once", "--batch", "0"]])
def test_memory_worker_command_rejects_bad_arguments(args):
    from django.core.management import CommandError

    with pytest.raises(CommandError):
        call_command("memory_worker", *args)


def test_untagged_messages_belong_to_the_run_that_was_running(alice, project):
    from memory_app.threads.models import Message

    enable(alice, min_length_chars=10)
    now = timezone.now()
    first = finished_run(
        user=alice,
        project=project,
        text="",
        prompt="",
        started_at=now - timedelta(hours=3),
        finished_at=now - timedelta(hours=2),
    )
    second = finished_run(
        user=alice,
        project=project,
        text="",
        prompt="",
        conversation=first.conversation,
        started_at=now - timedelta(minutes=70),
        finished_at=now - timedelta(minutes=60),
    )
    for content, at in (
        ("We use Redis for caching.", now - timedelta(minutes=150)),
        ("We use Kafka for events.", now - timedelta(minutes=65)),
    ):
        message = MessageFactory(conversation=first.conversation, content=content)
        Message.objects.filter(pk=message.pk).update(created_at=at)
    results = {r.run_id: r for r in _round()}
    assert set(results) == {first.pk, second.pk}
    by_run = {m.evidence["run_id"]: m.content for m in auto_memories()}
    assert by_run == {first.pk: "We use Redis for caching.", second.pk: "We use Kafka for events."}
