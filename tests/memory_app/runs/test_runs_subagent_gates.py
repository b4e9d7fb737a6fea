"""Sub-agents never pass for main-agent runs; an expired lease or a finished run gets no context."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from memory_app.notes import services as notes_services
from memory_app.runs import services as run_services
from memory_app.runs.models import AgentRun, run_is_top_level
from memory_app.threads import services as thread_services
from tests.memory_app.runs.helpers import memory_path

pytestmark = pytest.mark.django_db


@pytest.fixture
def memory_file(alice):
    notes_services.workspace_file_write(user=alice, name="MEMORY.md", content="- MARK-MEMORY-SECRET\n")


def _create(client, conversation_id, **extra):
    body = {"user": "alice", "conversation_id": conversation_id, "request_id": "r", "worker_id": "w1", **extra}
    return client.post("/api/runs", body, format="json")


@pytest.mark.parametrize("kind", ["chat", "resume"])
def test_chat_or_resume_run_with_a_parent_run_is_refused(api, svc, alice, make_run, kind):
    parent = make_run(alice)
    before = AgentRun.objects.count()
    response = _create(api(svc), parent.run.conversation_id, kind=kind, parent_run_id=parent.id)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "parent_not_allowed"
    assert AgentRun.objects.count() == before


@pytest.mark.parametrize("kind", ["chat", "resume"])
@pytest.mark.parametrize("thread", ["agent_call", "agent_evaluation", "subagent", "child"])
def test_chat_or_resume_run_on_a_subagent_thread_is_refused(api, svc, alice, kind, thread):
    if thread == "child":
        parent = thread_services.conversation_create(actor=svc, username="alice", title="main")
        conv = thread_services.conversation_create(actor=svc, username="alice", title="child", parent_id=parent.pk)
    else:
        conv = thread_services.conversation_create(actor=svc, username="alice", title="t", source=thread)
    response = _create(api(svc), conv.pk, kind=kind)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "subagent_thread"
    assert AgentRun.objects.count() == 0


def test_subagent_run_on_a_child_thread_is_still_allowed_and_gets_no_memory(
    api, svc, alice, make_run, run_api, memory_file
):
    parent = make_run(alice)
    child = thread_services.conversation_create(
        actor=svc, username="alice", title="child", parent_id=parent.run.conversation_id
    )
    response = _create(api(svc), child.pk, kind="subagent", parent_run_id=parent.id)
    assert response.status_code == 201, response.content
    token = response.json()["run_token"]
    ctx = run_api(token).get(f"/api/runs/{response.json()['id']}/context").json()
    assert ctx["tools"] == [] and "MARK-MEMORY-SECRET" not in json.dumps(ctx)


def test_a_chat_run_with_a_parent_is_not_top_level_even_if_stored(
    make_run, alice, run_api, memory_file, workspace_root
):
    """Defence in depth: a row that slipped past run_create still gets no memory and no tools."""
    parent = make_run(alice)
    handle = make_run(alice)
    AgentRun.objects.filter(pk=handle.id).update(parent_run=parent.run)
    run = AgentRun.objects.get(pk=handle.id)
    assert run.kind == "chat" and run_is_top_level(run) is False
    ctx = run_api(handle.token).get(f"/api/runs/{handle.id}/context").json()
    assert ctx["tools"] == [] and ctx["memory_enabled"] is False
    assert "MARK-MEMORY-SECRET" not in json.dumps(ctx)
    before = memory_path(workspace_root, alice).read_bytes()
    response = run_api(handle.token).post(
        f"/api/runs/{handle.id}/tools/remember_memory", {"content": "x"}, format="json"
    )
    assert response.status_code == 403 and response.json()["error"]["code"] == "not_top_level_run"
    assert memory_path(workspace_root, alice).read_bytes() == before


def test_expired_lease_gets_no_context(make_run, alice, run_api, memory_file):
    handle = make_run(alice)
    AgentRun.objects.filter(pk=handle.id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    response = run_api(handle.token).get(f"/api/runs/{handle.id}/context")
    assert response.status_code == 403, response.content
    assert response.json()["error"]["code"] == "lease_lost"
    assert "MARK-MEMORY-SECRET" not in response.content.decode()


def test_finished_run_and_taken_over_token_get_no_context(svc, make_run, alice, run_api, memory_file):
    finished = make_run(alice)
    run_services.run_finish(credential=finished.credential, status="completed")
    response = run_api(finished.token).get(f"/api/runs/{finished.id}/context")
    assert response.status_code in (401, 403) and "MARK-MEMORY-SECRET" not in response.content.decode()

    taken = make_run(alice, worker_id="w1")
    AgentRun.objects.filter(pk=taken.id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    run_services.run_claim(actor=svc, run_id=taken.id, worker_id="w2")
    response = run_api(taken.token).get(f"/api/runs/{taken.id}/context")
    assert response.status_code in (401, 403) and "MARK-MEMORY-SECRET" not in response.content.decode()
