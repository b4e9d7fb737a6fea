"""The main story, end to end through the HTTP API only: what an agent is asked to remember in
one thread is in the context of the user's next run in a new thread, and never in a sub-agent's.
"""

import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

NOTE = "remember that I prefer short answers"


def _run_client(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Run {token}")
    return client


def _start_run(bot, *, thread: str, request_id: str, kind: str = "chat", parent: str | None = None) -> dict:
    body = {"user": "alice", "conversation_id": thread, "request_id": request_id, "kind": kind, "worker_id": "w1"}
    if parent:
        body["parent_run_id"] = parent
    response = bot.post("/api/runs", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def _memory_text(context: dict) -> str:
    return "".join(s["content"] for s in context["sections"] if s["name"] == "memory")


def test_a_remembered_line_reaches_the_next_run_but_not_its_sub_agent(api, svc, alice, workspace_root):
    bot = api(svc)

    # Thread 1: the user asks, the agent calls remember_memory, the run finishes.
    first_thread = bot.post("/api/conversations", {"user": "alice", "title": "first"}, format="json").json()["id"]
    first = _start_run(bot, thread=first_thread, request_id="req-1")
    first_api = _run_client(first["run_token"])
    saved = first_api.post(f"/api/runs/{first['id']}/tools/remember_memory", {"content": NOTE}, format="json")
    assert saved.status_code == 200 and saved.json()["result"] == "appended", saved.content
    assert first_api.post(f"/api/runs/{first['id']}/finish", {"status": "completed"}, format="json").status_code == 200

    # Thread 2: a new top-level run sees the line in its context.
    second_thread = bot.post("/api/conversations", {"user": "alice", "title": "second"}, format="json").json()["id"]
    second = _start_run(bot, thread=second_thread, request_id="req-2")
    context = _run_client(second["run_token"]).get(f"/api/runs/{second['id']}/context").json()
    assert context["memory_enabled"] is True
    assert NOTE in _memory_text(context)

    # Its sub-agent gets neither the line nor the memory tools.
    sub = _start_run(bot, thread=second_thread, request_id="req-3", kind="subagent", parent=second["id"])
    sub_api = _run_client(sub["run_token"])
    sub_context = sub_api.get(f"/api/runs/{sub['id']}/context").json()
    assert sub_context["memory_enabled"] is False and sub_context["tools"] == []
    assert NOTE not in str(sub_context)
    refused = sub_api.post(
        f"/api/runs/{sub['id']}/tools/search_thread_messages", {"query": "short answers"}, format="json"
    )
    assert refused.status_code == 403

    # The finished first run can no longer read or write anything.
    assert first_api.get(f"/api/runs/{first['id']}/context").status_code == 403
    late = first_api.post(f"/api/runs/{first['id']}/tools/remember_memory", {"content": "late"}, format="json")
    assert late.status_code == 403
    again = _run_client(second["run_token"]).get(f"/api/runs/{second['id']}/context").json()
    assert NOTE in _memory_text(again) and "late" not in _memory_text(again)
