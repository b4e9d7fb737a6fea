"""Identity-memory injection through the real context endpoint (auto-memory × runs)."""

import logging

import pytest

from identity_app.models import Role
from memory_app.automemory import injection
from memory_app.automemory.services import auto_memory_settings_update
from memory_app.runs.models import AgentRun
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
    # Each call names round 1: the switches are under test here, not the count.
    handle = make_run(alice, prompt=PROMPT)
    assert context(run_api, handle, round=1)["prompt"] == PROMPT
    AgentRun.objects.filter(pk=handle.id).update(auto_memory_use=True)
    assert "USER-MEM-6" in context(run_api, handle, round=1)["prompt"]
    auto_memory_settings_update(user=alice, changes={"use": True})
    AgentRun.objects.filter(pk=handle.id).update(auto_memory_use=False)
    assert context(run_api, handle, round=1)["prompt"] == PROMPT


def test_the_server_counts_rounds_when_the_runtime_sends_none(run_api, make_run, alice, memories):
    """A runtime that never sends ``round`` gets the identity block on its first context call
    only: the run counts its own rounds."""
    auto_memory_settings_update(user=alice, changes={"use": True})
    handle = make_run(alice, prompt=PROMPT)
    first = context(run_api, handle)
    assert first["round"] == 1 and first["identity_injected"] and "USER-MEM-6" in first["prompt"]
    for expected in (2, 3):
        later = context(run_api, handle)
        assert later["round"] == expected
        assert not later["identity_injected"] and later["prompt"] == PROMPT
    assert AgentRun.objects.get(pk=handle.id).context_rounds == 3


def test_an_explicit_round_is_still_honoured_and_counted(run_api, make_run, alice, memories):
    auto_memory_settings_update(user=alice, changes={"use": True})
    handle = make_run(alice, prompt=PROMPT)
    # An explicit later round on the first call injects nothing, and it counts as a round.
    assert not context(run_api, handle, round=2)["identity_injected"]
    assert not context(run_api, handle)["identity_injected"]
    # A runtime that restarts its prompt may ask for round 1 again.
    again = context(run_api, handle, round=1)
    assert again["round"] == 1 and again["identity_injected"]
    assert AgentRun.objects.get(pk=handle.id).context_rounds == 3


def test_a_refused_context_call_counts_no_round(run_api, make_run, alice, memories):
    auto_memory_settings_update(user=alice, changes={"use": True})
    handle = make_run(alice, prompt=PROMPT)
    assert run_api(handle.token + "x").get(f"/api/runs/{handle.id}/context").status_code == 401
    assert run_api(handle.token).get(f"/api/runs/{handle.id}/context", {"round": "0"}).status_code == 400
    assert AgentRun.objects.get(pk=handle.id).context_rounds == 0
    assert context(run_api, handle)["identity_injected"]


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
