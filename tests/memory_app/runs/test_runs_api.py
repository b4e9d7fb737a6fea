from datetime import timedelta

import pytest
from django.utils import timezone

from memory_app.runs.leases import hash_run_token
from memory_app.runs.models import AgentRun
from memory_app.threads.models import Conversation, Message, ToolCall

pytestmark = pytest.mark.django_db


def _conversation(client, user="alice", **extra):
    response = client.post("/api/conversations", {"user": user, "title": "Trip", **extra}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def _run(client, conversation_id, user="alice", **extra):
    body = {
        "user": user,
        "conversation_id": conversation_id,
        "request_id": "req-1",
        "kind": "chat",
        "worker_id": "w1",
        "lease_seconds": 60,
        "prompt": "hi",
        "goal": None,
        "parent_run_id": None,
        "project_id": None,
        **extra,
    }
    response = client.post("/api/runs", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_service_creates_conversation_message_and_run(api, svc, alice):
    client = api(svc)
    conv = _conversation(client)
    run = _run(client, conv["id"])
    assert run["status"] == "running" and run["run_token"] and run["lease_expires_at"]
    message = client.post(
        f"/api/conversations/{conv['id']}/messages",
        {
            "role": "assistant",
            "type": "text",
            "content": "done",
            "metadata": {"k": 1},
            "attachments": [],
            "run_id": run["id"],
            "tool_calls": [{"name": "web", "input": {"q": 1}, "output": "ok", "status": "ok", "error": ""}],
        },
        format="json",
    )
    assert message.status_code == 201, message.content
    assert ToolCall.objects.filter(message_id=message.json()["id"], name="web").count() == 1
    stored = AgentRun.objects.get(pk=run["id"])
    # Only the hash is stored.
    assert stored.run_token_hash == hash_run_token(run["run_token"])
    assert run["run_token"] not in str(AgentRun.objects.filter(pk=run["id"]).values().first())


def test_users_cannot_write_conversations_or_runs(api, alice, svc):
    client = api(alice)
    assert client.post("/api/conversations", {"user": "alice"}, format="json").status_code == 403
    conv = _conversation(api(svc))
    before = Message.objects.count()
    assert (
        client.post(
            f"/api/conversations/{conv['id']}/messages", {"role": "user", "content": "x"}, format="json"
        ).status_code
        == 403
    )
    assert (
        client.post(
            "/api/runs",
            {"user": "alice", "conversation_id": conv["id"], "request_id": "r", "worker_id": "w"},
            format="json",
        ).status_code
        == 403
    )
    assert Message.objects.count() == before and AgentRun.objects.count() == 0


def test_users_read_only_their_own_conversations_and_runs(api, svc, alice, mallory):
    service = api(svc)
    conv = _conversation(service)
    run = _run(service, conv["id"])
    service.post(
        f"/api/conversations/{conv['id']}/messages", {"role": "user", "content": "alice says hi"}, format="json"
    )
    owner = api(alice)
    assert [c["id"] for c in owner.get("/api/conversations").json()["results"]] == [conv["id"]]
    assert owner.get(f"/api/conversations/{conv['id']}/messages").json()["results"][0]["content"] == "alice says hi"
    assert owner.get(f"/api/runs/{run['id']}").json()["lease_state"] == "held"
    assert "run_token" not in owner.get(f"/api/runs/{run['id']}").json()
    other = api(mallory)
    assert other.get("/api/conversations").json()["results"] == []
    assert other.get("/api/runs").json()["results"] == []
    for path in (
        f"/api/conversations/{conv['id']}",
        f"/api/conversations/{conv['id']}/messages",
        f"/api/runs/{run['id']}",
    ):
        assert other.get(path).status_code == 404


def test_conversation_for_foreign_parent_or_project_is_refused(api, svc, alice, mallory, project):
    service = api(svc)
    mallory_conv = _conversation(service, user="mallory")
    response = service.post("/api/conversations", {"user": "alice", "parent_id": mallory_conv["id"]}, format="json")
    assert response.status_code == 404
    response = service.post("/api/conversations", {"user": "mallory", "project_id": project.pk}, format="json")
    assert response.status_code == 404
    assert Conversation.objects.filter(owner=alice).count() == 0


def test_run_for_another_users_conversation_is_refused(api, svc, alice, mallory):
    service = api(svc)
    conv = _conversation(service, user="alice")
    response = service.post(
        "/api/runs",
        {"user": "mallory", "conversation_id": conv["id"], "request_id": "r", "worker_id": "w"},
        format="json",
    )
    assert response.status_code == 404
    assert AgentRun.objects.count() == 0


def test_heartbeat_and_finish_with_run_token(api, svc, alice, run_api):
    conv = _conversation(api(svc))
    run = _run(api(svc), conv["id"], lease_seconds=10)
    client = run_api(run["run_token"])
    beat = client.post(f"/api/runs/{run['id']}/heartbeat", {"lease_seconds": 120}, format="json")
    assert beat.status_code == 200, beat.content
    assert AgentRun.objects.get(pk=run["id"]).lease_expires_at > timezone.now() + timedelta(seconds=100)
    done = client.post(
        f"/api/runs/{run['id']}/finish", {"status": "completed", "usage": {"duration_s": 3}}, format="json"
    )
    assert done.status_code == 200, done.content
    stored = AgentRun.objects.get(pk=run["id"])
    assert (stored.status, stored.usage["duration_s"], stored.lease_expires_at) == ("completed", 3, None)
    again = client.post(f"/api/runs/{run['id']}/heartbeat", {}, format="json")
    assert (again.status_code, again.json()["error"]["code"]) == (403, "run_not_running")


def test_claim_takes_over_expired_lease_and_invalidates_old_token(api, svc, alice, run_api):
    service = api(svc)
    conv = _conversation(service)
    run = _run(service, conv["id"])
    held = service.post(f"/api/runs/{run['id']}/claim", {"worker_id": "w2", "lease_seconds": 60}, format="json")
    assert (held.status_code, held.json()["error"]["code"]) == (409, "lease_held")
    AgentRun.objects.filter(pk=run["id"]).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    claimed = service.post(f"/api/runs/{run['id']}/claim", {"worker_id": "w2", "lease_seconds": 60}, format="json")
    assert claimed.status_code == 200, claimed.content
    new = claimed.json()
    assert new["run_token"] != run["run_token"] and new["worker_id"] == "w2" and new["lease_generation"] == 2
    old = run_api(run["run_token"]).post(f"/api/runs/{run['id']}/heartbeat", {}, format="json")
    assert old.status_code == 401
    assert run_api(new["run_token"]).post(f"/api/runs/{run['id']}/heartbeat", {}, format="json").status_code == 200


def test_same_worker_may_reclaim_its_own_lease(api, svc, alice):
    service = api(svc)
    run = _run(service, _conversation(service)["id"])
    assert service.post(f"/api/runs/{run['id']}/claim", {"worker_id": "w1"}, format="json").status_code == 200


def test_finished_run_cannot_be_claimed(api, svc, alice, run_api):
    service = api(svc)
    run = _run(service, _conversation(service)["id"])
    run_api(run["run_token"]).post(f"/api/runs/{run['id']}/finish", {"status": "failed"}, format="json")
    response = service.post(f"/api/runs/{run['id']}/claim", {"worker_id": "w9"}, format="json")
    assert (response.status_code, response.json()["error"]["code"]) == (409, "run_finished")


def test_expired_lease_cannot_heartbeat(api, svc, alice, run_api):
    service = api(svc)
    run = _run(service, _conversation(service)["id"])
    AgentRun.objects.filter(pk=run["id"]).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    response = run_api(run["run_token"]).post(f"/api/runs/{run['id']}/heartbeat", {}, format="json")
    assert (response.status_code, response.json()["error"]["code"]) == (403, "lease_lost")


@pytest.mark.parametrize(
    "header",
    ["Run nope", "Run run_x.1.abc", "Run ", "Token abc", "Run a b"],
)
def test_forged_run_tokens_are_refused(api, svc, alice, header):
    from rest_framework.test import APIClient

    service = api(svc)
    run = _run(service, _conversation(service)["id"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    assert client.get(f"/api/runs/{run['id']}/context").status_code in (401, 403)
    assert client.post(f"/api/runs/{run['id']}/finish", {"status": "completed"}, format="json").status_code in (
        401,
        403,
    )
    assert AgentRun.objects.get(pk=run["id"]).status == "running"


def test_token_with_right_prefix_but_wrong_secret_is_refused(api, svc, alice, run_api):
    service = api(svc)
    run = _run(service, _conversation(service)["id"])
    forged = run["run_token"].rsplit(".", 1)[0] + ".forgedsecret"
    assert run_api(forged).get(f"/api/runs/{run['id']}/context").status_code == 401


def test_run_token_only_acts_for_its_own_run(api, svc, alice, run_api):
    service = api(svc)
    first = _run(service, _conversation(service)["id"])
    second = _run(service, _conversation(service)["id"])
    response = run_api(first["run_token"]).post(
        f"/api/runs/{second['id']}/finish", {"status": "completed"}, format="json"
    )
    assert (response.status_code, response.json()["error"]["code"]) == (403, "run_not_authorized")
    assert AgentRun.objects.get(pk=second["id"]).status == "running"


def test_run_token_does_not_authenticate_user_endpoints(api, svc, alice, run_api):
    service = api(svc)
    run = _run(service, _conversation(service)["id"])
    client = run_api(run["run_token"])
    assert client.get("/api/users/me/workspace/MEMORY.md").status_code == 401
    assert client.put("/api/users/me/settings", {"enable_memory": False}, format="json").status_code == 401
    assert client.get("/api/conversations").status_code == 401


def test_user_token_does_not_authenticate_run_endpoints(api, svc, alice):
    service = api(svc)
    run = _run(service, _conversation(service)["id"])
    owner = api(alice)
    assert owner.get(f"/api/runs/{run['id']}/context").status_code in (401, 403)
    assert owner.post(f"/api/runs/{run['id']}/tools/remember_memory", {"content": "x"}, format="json").status_code in (
        401,
        403,
    )


@pytest.mark.parametrize(
    "extra,code",
    [
        ({"kind": "wizard"}, 400),
        ({"lease_seconds": 0}, 400),
        ({"lease_seconds": 999999}, 400),
        ({"worker_id": ""}, 400),
        ({"user": "nobody"}, 404),
        ({"kind": "subagent"}, 400),
        ({"unknown": 1}, 400),
        ({"prompt": 12}, 400),
    ],
)
def test_bad_run_input_is_refused(api, svc, alice, extra, code):
    service = api(svc)
    conv = _conversation(service)
    body = {"user": "alice", "conversation_id": conv["id"], "request_id": "r", "worker_id": "w", **extra}
    assert service.post("/api/runs", body, format="json").status_code == code
    assert AgentRun.objects.count() == 0


def test_subagent_run_needs_parent_of_same_user(api, svc, alice, mallory):
    service = api(svc)
    conv = _conversation(service)
    parent = _run(service, conv["id"])
    child = _run(service, conv["id"], kind="subagent", parent_run_id=parent["id"])
    assert child["parent_run_id"] == parent["id"]
    mallory_parent = _run(service, _conversation(service, user="mallory")["id"], user="mallory")
    response = service.post(
        "/api/runs",
        {
            "user": "alice",
            "conversation_id": conv["id"],
            "request_id": "r",
            "worker_id": "w",
            "kind": "subagent",
            "parent_run_id": mallory_parent["id"],
        },
        format="json",
    )
    assert response.status_code == 404


def test_message_input_limits(api, svc, alice):
    service = api(svc)
    conv = _conversation(service)
    url = f"/api/conversations/{conv['id']}/messages"
    for body in (
        {"role": "robot", "content": "x"},
        {"role": "user", "type": "weird"},
        {"role": "user", "metadata": []},
        {"role": "user", "metadata": {"k": "v" * 20000}},
        {"role": "user", "tool_calls": [{"name": "x", "secret": 1}]},
        {"role": "user", "tool_calls": "nope"},
    ):
        assert service.post(url, body, format="json").status_code == 400, body
    assert Message.objects.count() == 0


def test_owner_archives_conversation_and_it_leaves_history(api, svc, alice, mallory, make_run, run_api):
    from memory_app.threads import services

    thread = services.conversation_create(actor=svc, username="alice", title="old")
    services.message_create(actor=svc, conversation_id=thread.pk, role="user", content="archived needle")
    handle = make_run(alice)
    search = f"/api/runs/{handle.id}/tools/search_thread_messages"
    assert len(run_api(handle.token).post(search, {"query": "needle"}, format="json").json()["results"]) == 1
    assert (
        api(mallory).patch(f"/api/conversations/{thread.pk}", {"status": "archived"}, format="json").status_code == 404
    )
    response = api(alice).patch(
        f"/api/conversations/{thread.pk}", {"status": "archived", "title": "Old"}, format="json"
    )
    assert response.status_code == 200 and response.json()["status"] == "archived"
    assert run_api(handle.token).post(search, {"query": "needle"}, format="json").json()["results"] == []
    assert api(alice).patch(f"/api/conversations/{thread.pk}", {"status": "gone"}, format="json").status_code == 400
    assert Conversation.objects.get(pk=thread.pk).status == "archived"
