"""Context section 5 (scoped items) through the real runs API and context endpoint."""

import pytest

from memory_app.scoped.services import scoped_item_create

pytestmark = pytest.mark.django_db

A = "milky:private:10001"
B = "milky:private:20002"


def start_run(api, svc, user, session_key):
    client = api(svc)
    conversation = client.post(
        "/api/conversations", {"user": user.username, "title": "t", "session_key": session_key}, format="json"
    )
    assert conversation.status_code == 201, conversation.content
    run = client.post(
        "/api/runs",
        {
            "user": user.username,
            "conversation_id": conversation.json()["id"],
            "request_id": "r1",
            "kind": "chat",
            "worker_id": "w1",
            "prompt": "hi",
        },
        format="json",
    )
    assert run.status_code == 201, run.content
    return run.json()


def run_context(run, query):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Run {run['run_token']}")
    response = client.get(f"/api/runs/{run['id']}/context", {"query": query})
    assert response.status_code == 200, response.content
    return response.json()


def test_scoped_section_is_low_trust_cascade_of_own_chat_then_global(api, svc, alice):
    scoped_item_create(actor=svc, session_id=A, kind="preference", content="CHAT-A prefers oolong tea")
    scoped_item_create(actor=svc, session_id=B, kind="preference", content="CHAT-B prefers black tea")
    scoped_item_create(actor=svc, session_id=A, kind="procedure", content="GLOBAL tea kettle is descaled monthly")
    body = run_context(start_run(api, svc, alice, f"{A}:cron:nightly"), "tea")
    sections = {s["name"]: s for s in body["sections"]}
    scoped = sections["scoped_memory"]
    assert scoped["trust"] == "low"
    assert "CHAT-A" in scoped["content"] and "GLOBAL" in scoped["content"]
    assert "CHAT-B" not in str(body)
    assert scoped["content"].index("CHAT-A") < scoped["content"].index("GLOBAL")


def test_legacy_session_gets_only_global(api, svc, alice):
    scoped_item_create(actor=svc, session_id=A, kind="preference", content="CHAT-A likes green tea")
    scoped_item_create(actor=svc, session_id="milky:10001", kind="procedure", content="GLOBAL tea rule")
    body = run_context(start_run(api, svc, alice, "milky:10001"), "tea")
    text = str(body)
    assert "GLOBAL tea rule" in text and "CHAT-A" not in text


def test_no_session_key_means_no_scoped_section(api, svc, alice):
    scoped_item_create(actor=svc, session_id=A, kind="preference", content="CHAT-A likes tea")
    body = run_context(start_run(api, svc, alice, ""), "tea")
    assert "scoped_memory" not in [s["name"] for s in body["sections"]]


def test_a_subagent_of_a_chat_run_gets_no_scoped_section(api, svc, alice):
    scoped_item_create(actor=svc, session_id=A, kind="fact", content="alice chat fact: allergic to peanuts")
    scoped_item_create(actor=svc, session_id=A, kind="procedure", content="GLOBAL peanuts policy")
    parent = start_run(api, svc, alice, A)
    assert "alice chat fact" in str(run_context(parent, "peanuts"))
    sub = api(svc).post(
        "/api/runs",
        {
            "user": alice.username,
            "conversation_id": parent["conversation_id"],
            "request_id": "r2",
            "kind": "subagent",
            "worker_id": "w1",
            "parent_run_id": parent["id"],
        },
        format="json",
    )
    assert sub.status_code == 201, sub.content
    body = run_context(sub.json(), "peanuts")
    assert "scoped_memory" not in [s["name"] for s in body["sections"]]
    assert "peanuts" not in str(body)
