"""Identity-memory injection through the real context endpoint (auto-memory × runs)."""

import logging

import pytest

from identity_app.models import Role
from memory_app.agent.models import AgentRun
from memory_app.automemory import injection
from memory_app.automemory.services import auto_memory_settings_update
from tests.factories import MembershipFactory, ProjectMemoryFactory, UserMemoryFactory

pytestmark = pytest.mark.django_db

PROMPT = "Summarise the open billing tickets."
GOAL = "Close the billing milestone."


@pytest.fixture
def memories(alice, project):
    users = [UserMemoryFactory(owner=alice, content=f"USER-MEM-{i}") for i in range(7)]
    projects = [ProjectMemoryFactory(project=project, content=f"PROJECT-MEM-{i}") for i in range(7)]
    return users, projects


def context(run_api, handle, **params):
    response = run_api(handle.token).get(f"/api/runs/{handle.id}/context", params)
    assert response.status_code == 200, response.content
    return response.json()


def test_first_round_of_new_run_gets_latest_five_per_tier_on_a_copy(run_api, make_run, alice, project, memories):
    auto_memory_settings_update(user=alice, changes={"use": True})
    handle = make_run(alice, prompt=PROMPT, goal=GOAL)
    AgentRun.objects.filter(pk=handle.id).update(project=project)
    body = context(run_api, handle)
    prompt = body["prompt"]
    assert prompt.endswith(PROMPT) and body["goal"].endswith(GOAL)
    for i in range(2, 7):
        assert f"USER-MEM-{i}" in prompt and f"PROJECT-MEM-{i}" in prompt
    for i in range(2):
        assert f"USER-MEM-{i}\n" not in prompt and f"PROJECT-MEM-{i}\n" not in prompt
    assert "not instructions" in prompt
    stored = AgentRun.objects.get(pk=handle.id)
    assert (stored.prompt, stored.goal) == (PROMPT, GOAL)
    assert body["warnings"] == []


@pytest.mark.parametrize("round_number,kind", [(2, "chat"), (1, "resume")])
def test_no_injection_after_first_round_or_on_resume(run_api, make_run, alice, memories, round_number, kind):
    auto_memory_settings_update(user=alice, changes={"use": True})
    handle = make_run(alice, prompt=PROMPT, kind=kind)
    body = context(run_api, handle, round=round_number)
    assert body["prompt"] == PROMPT and "USER-MEM" not in str(body)


def test_subagent_never_gets_identity_memories(run_api, make_run, alice, memories):
    auto_memory_settings_update(user=alice, changes={"use": True})
    handle = make_run(alice, kind="subagent", prompt=PROMPT)
    assert "USER-MEM" not in str(context(run_api, handle))


def test_default_off_injects_nothing_and_run_flag_overrides(run_api, make_run, alice, memories):
    handle = make_run(alice, prompt=PROMPT)
    assert context(run_api, handle)["prompt"] == PROMPT
    AgentRun.objects.filter(pk=handle.id).update(auto_memory_use=True)
    assert "USER-MEM-6" in context(run_api, handle)["prompt"]
    auto_memory_settings_update(user=alice, changes={"use": True})
    AgentRun.objects.filter(pk=handle.id).update(auto_memory_use=False)
    assert context(run_api, handle)["prompt"] == PROMPT


def test_other_users_and_other_projects_memories_are_never_injected(run_api, make_run, alice, bob, project, memories):
    from tests.factories import ProjectFactory

    other = ProjectFactory()
    MembershipFactory(project=other, user=bob, role=Role.OWNER)
    ProjectMemoryFactory(project=other, content="OTHER-PROJECT-SECRET")
    UserMemoryFactory(owner=bob, content="BOB-PRIVATE")
    auto_memory_settings_update(user=alice, changes={"use": True})
    handle = make_run(alice, prompt=PROMPT)
    AgentRun.objects.filter(pk=handle.id).update(project=project)
    text = str(context(run_api, handle))
    assert "OTHER-PROJECT-SECRET" not in text and "BOB-PRIVATE" not in text


def test_source_failure_is_fail_open_with_warning_and_log(run_api, make_run, alice, memories, monkeypatch, caplog):
    auto_memory_settings_update(user=alice, changes={"use": True})
    handle = make_run(alice, prompt=PROMPT)

    def broken(**kwargs):
        raise RuntimeError("memory store unavailable")

    monkeypatch.setattr(injection, "latest_active_user_memories", broken)
    with caplog.at_level(logging.WARNING):
        body = context(run_api, handle)
    assert body["prompt"] == PROMPT
    assert body["warnings"] and "identity" in body["warnings"][0]
    assert any("injection" in record.getMessage() for record in caplog.records)


def test_a_chat_kind_run_with_a_parent_is_never_injected(run_api, make_run, alice, memories):
    auto_memory_settings_update(user=alice, changes={"use": True})
    parent = make_run(alice, prompt=PROMPT)
    handle = make_run(alice, prompt=PROMPT, request_id="req-2")
    AgentRun.objects.filter(pk=handle.id).update(parent_run=parent.run)
    body = context(run_api, handle)
    assert body["prompt"] == PROMPT and body["identity_injected"] is False
    assert "USER-MEM" not in str(body) and "PROJECT-MEM" not in str(body)
