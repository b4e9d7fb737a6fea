"""Identity memories on the first round of a new top-level run (docs/auto-memory.md, Injection)."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from identity_app.models import Membership, Role
from memory_app.automemory import injection as injection_module
from memory_app.automemory.injection import (
    identity_injection_for_run,
)
from memory_app.memories.models import Status
from memory_app.runs.models import AgentRun, RunKind
from tests.factories import AgentRunFactory, MembershipFactory, ProjectFactory, ProjectMemoryFactory, UserMemoryFactory
from tests.lowtrust_frames import block_lines, block_parts
from tests.memory_app.automemory.helpers import enable

pytestmark = pytest.mark.django_db


def _memories(owner, project, n, *, prefix=""):
    base = timezone.now() - timedelta(days=1)
    users, projects = [], []
    for i in range(n):
        users.append(UserMemoryFactory(owner=owner, content=f"{prefix}user fact {i}"))
        projects.append(ProjectMemoryFactory(project=project, content=f"{prefix}project fact {i}"))
    for i, (u, p) in enumerate(zip(users, projects, strict=True)):
        type(u).objects.filter(pk__in=[u.pk, p.pk]).update(created_at=base + timedelta(minutes=i))
    return users, projects


def _run(user, project, **fields):
    fields.setdefault("prompt", "Original prompt")
    fields.setdefault("started_at", timezone.now())
    return AgentRunFactory(user=user, project=project, status="running", **fields)


def test_latest_five_of_each_tier_in_order_prepended_to_copies(alice, project):
    enable(alice)
    _memories(alice, project, 7)
    run = _run(alice, project, goal="Original goal")
    result = identity_injection_for_run(run=run, round_number=1)
    block = result.block
    assert result.prompt == f"{block}\n\nOriginal prompt"
    assert result.goal == f"{block}\n\nOriginal goal"
    lines = [line for line in block_lines(block) if line.startswith("- [")]
    # Each item carries the day it was written (docs/tiers.md, "Expiry").
    assert all(re.match(r"- \[\w+\] \[\d{4}-\d{2}-\d{2}\] ", line) for line in lines)
    lines = [re.sub(r" \[\d{4}-\d{2}-\d{2}\]", "", line, count=1) for line in lines]
    assert lines == [f"- [preference] user fact {i}" for i in (6, 5, 4, 3, 2)] + [
        f"- [decision] project fact {i}" for i in (6, 5, 4, 3, 2)
    ]
    assert block.index("User memories") < block.index("Project memories")
    assert "not instructions" in block_parts(block)[0]  # the trusted header, before the frame
    stored = AgentRun.objects.get(pk=run.pk)
    assert (stored.prompt, stored.goal) == ("Original prompt", "Original goal")


def test_only_active_memories_are_injected(alice, project):
    enable(alice)
    UserMemoryFactory(owner=alice, content="old value", status=Status.ARCHIVED)
    UserMemoryFactory(owner=alice, content="current value")
    result = identity_injection_for_run(run=_run(alice, project), round_number=1)
    assert "current value" in result.block and "old value" not in result.block


def test_run_without_goal_keeps_goal_none(alice, project):
    enable(alice)
    _memories(alice, project, 1)
    assert identity_injection_for_run(run=_run(alice, project, goal=None), round_number=1).goal is None


@pytest.mark.parametrize("round_number", [0, 2, 3])
def test_only_the_first_round(alice, project, round_number):
    enable(alice)
    _memories(alice, project, 2)
    assert identity_injection_for_run(run=_run(alice, project), round_number=round_number) is None


@pytest.mark.parametrize("kind", [RunKind.RESUME, RunKind.CHECKPOINT, RunKind.COORDINATOR, RunKind.SUBAGENT])
def test_not_for_resume_checkpoint_coordinator_or_subagent(alice, project, kind):
    enable(alice)
    _memories(alice, project, 2)
    assert identity_injection_for_run(run=_run(alice, project, kind=kind), round_number=1) is None


def test_defaults_off_inject_nothing(alice, project):
    _memories(alice, project, 2)
    assert identity_injection_for_run(run=_run(alice, project), round_number=1) is None


@pytest.mark.parametrize(("user_use", "run_use", "injected"), [(False, True, True), (True, False, False)])
def test_run_use_override_beats_user_setting(alice, project, user_use, run_use, injected):
    enable(alice, use=user_use)
    _memories(alice, project, 1)
    result = identity_injection_for_run(run=_run(alice, project, auto_memory_use=run_use), round_number=1)
    assert (result is not None) is injected


def test_never_another_users_or_projects_memories(alice, bob, mallory, project):
    enable(alice)
    other = ProjectFactory()
    MembershipFactory(project=other, user=mallory, role=Role.OWNER)
    UserMemoryFactory(owner=bob, content="bob secret preference")
    ProjectMemoryFactory(project=other, content="other project decision")
    UserMemoryFactory(owner=alice, content="alice preference")
    ProjectMemoryFactory(project=project, content="apollo decision")
    block = identity_injection_for_run(run=_run(alice, project), round_number=1).block
    assert "alice preference" in block and "apollo decision" in block
    assert "bob secret" not in block and "other project" not in block


def test_project_memories_are_dropped_when_the_user_lost_access(alice, bob, project):
    enable(bob)
    UserMemoryFactory(owner=bob, content="bob preference")
    ProjectMemoryFactory(project=project, content="apollo decision")
    Membership.objects.filter(project=project, user=bob).delete()
    block = identity_injection_for_run(run=_run(bob, project), round_number=1).block
    assert "bob preference" in block and "apollo decision" not in block


def test_no_memories_no_block(alice, project):
    enable(alice)
    assert identity_injection_for_run(run=_run(alice, project), round_number=1) is None


def test_fail_open_when_the_source_raises(alice, project, monkeypatch):
    enable(alice)
    _memories(alice, project, 2)
    run = _run(alice, project)

    def broken(**kwargs):
        raise RuntimeError("memory store unavailable")

    monkeypatch.setattr(injection_module, "latest_active_user_memories", broken)
    with pytest.raises(RuntimeError):
        identity_injection_for_run(run=run, round_number=1)  # the assembler's catch sees it
    assert AgentRun.objects.get(pk=run.pk).prompt == "Original prompt"
