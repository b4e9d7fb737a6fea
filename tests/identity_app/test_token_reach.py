"""A service token limited to some users and/or projects: outside them every service route
answers as if the user, project, chat, conversation or run did not exist, and nothing changes.

Setup: alice (in reach) and bob (outside) share Apollo; bob alone is in Zeus; the service
principal is a member of both projects. Alice's private chat A and bob's B are bound."""

import json

import pytest
from rest_framework.test import APIClient

from identity_app.models import ChatBinding, Membership, Role
from identity_app.services import token_issue
from memory_app.automemory.services import auto_memory_settings_update
from memory_app.memories.models import Memory
from memory_app.runs.models import AgentRun
from memory_app.scoped.models import MemoryCandidate
from memory_app.scoped.services import scoped_item_create
from memory_app.threads.models import Conversation, Message
from tests.factories import (
    ChatBindingFactory,
    MembershipFactory,
    ProjectFactory,
    ProjectMemoryFactory,
)

pytestmark = pytest.mark.django_db

A = "milky:private:10001"  # alice's
B = "milky:private:20002"  # bob's
GROUP = "milky:group:30003"  # bound to nobody
LEGACY = "milky:10001"  # resolves to the global scope


@pytest.fixture
def world(alice, bob, svc, project, make_run):
    zeus = ProjectFactory(name="Zeus")
    MembershipFactory(project=zeus, user=bob, role=Role.OWNER)
    for p in (project, zeus):
        MembershipFactory(project=p, user=svc, role=Role.MEMBER)
    ChatBindingFactory(chat_key=A, user=alice)
    b_binding = ChatBindingFactory(chat_key=B, user=bob)
    # Through the service (by the unlimited principal), so that search indexes them.
    for chat, text in ((B, "bob likes liquorice"), (GROUP, "the group likes Mondays"), (A, "alice likes peanuts")):
        scoped_item_create(actor=svc, session_id=chat, kind="preference", content=text)
    ProjectMemoryFactory(project=zeus, content="zeus uses postgres")
    bob_run = make_run(bob, request_id="bob-1").run
    bob_zeus_run = make_run(bob, request_id="bob-2", project_id=zeus.pk).run
    alice_run = make_run(alice, request_id="alice-1").run
    alice_apollo_run = make_run(alice, request_id="alice-2", project_id=project.pk).run
    for run in (bob_run, alice_run):
        Message.objects.create(conversation=run.conversation, role="user", content=f"hello from {run.user.username}")
    return {
        "apollo": project,
        "zeus": zeus,
        "b_binding": b_binding,
        "bob_run": bob_run,
        "bob_zeus_run": bob_zeus_run,
        "alice_run": alice_run,
        "alice_apollo_run": alice_apollo_run,
    }


def limited(user, **limits) -> APIClient:
    _, key = token_issue(user=user, **limits)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def snapshot() -> dict:
    return {
        "conversations": sorted(Conversation.objects.values_list("id", "owner_id", "title", "status")),
        "messages": sorted(Message.objects.values_list("id", "conversation_id", "content")),
        "runs": sorted(
            AgentRun.objects.values_list("id", "status", "worker_id", "lease_generation", "lease_expires_at")
        ),
        "memories": sorted(Memory.objects.values_list("id", "scope_type", "scope_id", "content", "status")),
        "bindings": sorted(ChatBinding.objects.values_list("chat_key", "user_id")),
        "memberships": sorted(Membership.objects.values_list("project_id", "user_id", "role")),
        "candidates": MemoryCandidate.objects.count(),
    }


def status(response) -> int:
    return response.status_code


def assert_not_found(response):
    assert response.status_code == 404, response.content
    assert response.json()["error"]["code"] == "not_found"


def test_user_limited_token_gets_404_outside_its_users_and_changes_nothing(world, alice, bob, svc):
    client = limited(svc, only_users=["alice"])
    bob_run, bob_conv = world["bob_run"], world["bob_run"].conversation
    before = snapshot()

    # Ids of another user's conversations, messages and runs: as if they did not exist.
    message_id = Message.objects.filter(conversation=bob_conv).values_list("id", flat=True).get()
    assert_not_found(client.get(f"/api/conversations/{bob_conv.pk}"))
    assert_not_found(client.patch(f"/api/conversations/{bob_conv.pk}", {"title": "mine now"}, format="json"))
    assert_not_found(client.get(f"/api/conversations/{bob_conv.pk}/messages"))
    assert_not_found(client.get(f"/api/conversations/{bob_conv.pk}/messages/{message_id}"))
    assert_not_found(
        client.post(f"/api/conversations/{bob_conv.pk}/messages", {"role": "user", "content": "hi"}, format="json")
    )
    assert_not_found(client.get(f"/api/runs/{bob_run.pk}"))
    assert_not_found(client.post(f"/api/runs/{bob_run.pk}/claim", {"worker_id": "w9"}, format="json"))
    assert_not_found(client.post(f"/api/tasks/{bob_run.pk}/auto-memory-flags", {"use": True}, format="json"))
    run_body = {"user": "alice", "conversation_id": bob_conv.pk, "request_id": "r", "worker_id": "w9"}
    assert_not_found(client.post("/api/runs", run_body, format="json"))

    # Lists hold only the users in reach.
    assert {c["id"] for c in client.get("/api/conversations").json()["results"]} == {
        world["alice_run"].conversation_id,
        world["alice_apollo_run"].conversation_id,
    }
    assert {r["id"] for r in client.get("/api/runs").json()["results"]} == {
        world["alice_run"].pk,
        world["alice_apollo_run"].pk,
    }
    assert [b["chat_key"] for b in client.get("/api/chat-bindings").json()["results"]] == [A]

    # Acting for a user outside the reach is answered exactly like acting for nobody.
    for path, body in (
        ("/api/conversations", {"user": "{}", "title": "t"}),
        ("/api/runs", {"user": "{}", "conversation_id": bob_conv.pk, "request_id": "r", "worker_id": "w"}),
        ("/api/chat-bindings", {"chat_key": "milky:private:40004", "user": "{}"}),
    ):
        outside = client.post(
            path, {k: v.replace("{}", "bob") if isinstance(v, str) else v for k, v in body.items()}, format="json"
        )
        ghost = client.post(
            path, {k: v.replace("{}", "ghost") if isinstance(v, str) else v for k, v in body.items()}, format="json"
        )
        assert (status(outside), outside.json()["error"]["code"]) == (status(ghost), ghost.json()["error"]["code"])
        assert outside.json()["error"]["code"] == "unknown_user"

    # Chats of other users, or of nobody: not found; the global scope: not writable.
    for chat in (B, GROUP):
        assert_not_found(client.post("/api/memory/search", {"query": "likes", "session_id": chat}, format="json"))
        assert_not_found(
            client.post(
                "/api/memory/items", {"content": "x likes y", "kind": "preference", "session_id": chat}, format="json"
            )
        )
        assert_not_found(
            client.post(
                "/api/memory/consolidate",
                {"session_id": chat, "messages": [{"role": "user", "content": "I like liquorice a lot."}]},
                format="json",
            )
        )
    assert_not_found(client.delete(f"/api/chat-bindings/{world['b_binding'].pk}"))
    global_write = client.post(
        "/api/memory/items",
        {"content": "Deploys are on Tuesdays", "kind": "procedure", "session_id": LEGACY},
        format="json",
    )
    assert global_write.status_code == 403
    assert (
        client.post(
            "/api/memory/consolidate",
            {"session_id": LEGACY, "messages": [{"role": "user", "content": "We decided to deploy on Tuesdays."}]},
            format="json",
        ).status_code
        == 403
    )

    assert snapshot() == before


def test_user_limited_token_still_works_inside_its_reach(world, alice, svc):
    client = limited(svc, only_users=["alice"])
    conv = client.post("/api/conversations", {"user": "alice", "title": "ok"}, format="json")
    assert conv.status_code == 201, conv.content
    run = client.post(
        "/api/runs",
        {"user": "alice", "conversation_id": conv.json()["id"], "request_id": "r1", "worker_id": "w1"},
        format="json",
    )
    assert run.status_code == 201, run.content
    item = client.post(
        "/api/memory/items", {"content": "alice likes green tea", "kind": "preference", "session_id": A}, format="json"
    )
    assert item.status_code == 201, item.content
    hits = client.post("/api/memory/search", {"query": "likes", "session_id": A, "mode": "fts"}, format="json").json()
    contents = [h["content"] for h in hits["results"]]
    assert "alice likes peanuts" in contents and not any("liquorice" in c or "Mondays" in c for c in contents)
    # A turn in alice's chat keeps its chat items; global kinds are not written by this token.
    report = client.post(
        "/api/memory/consolidate",
        {"session_id": A, "messages": [{"role": "user", "content": "I prefer oolong. We decided to ship on Fridays."}]},
        format="json",
    )
    assert report.status_code == 200, report.content
    assert not Memory.objects.filter(scope_type="global").exists()


def test_project_limited_token_gets_404_outside_its_projects_and_changes_nothing(world, alice, bob, svc):
    client = limited(svc, only_projects=[world["apollo"].pk])
    zeus = world["zeus"]
    before = snapshot()

    # The service principal's own memberships: only the projects in reach exist.
    assert [p["id"] for p in client.get("/api/projects").json()["results"]] == [world["apollo"].pk]
    assert_not_found(client.get(f"/api/projects/{zeus.pk}"))
    assert_not_found(client.get(f"/api/projects/{zeus.pk}/members"))
    assert_not_found(client.get(f"/api/projects/{zeus.pk}/identity-memories"))
    assert_not_found(
        client.post(f"/api/projects/{zeus.pk}/identity-memories", {"kind": "fact", "content": "x"}, format="json")
    )
    assert_not_found(client.get("/api/users/me/identity-context", {"project_id": zeus.pk}))

    # Work for users in a project outside the reach, or outside any project.
    assert_not_found(
        client.post("/api/conversations", {"user": "bob", "title": "t", "project_id": zeus.pk}, format="json")
    )
    no_project = client.post("/api/conversations", {"user": "alice", "title": "t"}, format="json")
    assert no_project.status_code == 400 and no_project.json()["error"]["code"] == "project_required"
    zeus_run = world["bob_zeus_run"]
    assert_not_found(client.get(f"/api/runs/{zeus_run.pk}"))
    assert_not_found(client.get(f"/api/conversations/{zeus_run.conversation_id}"))
    assert_not_found(client.post(f"/api/runs/{zeus_run.pk}/claim", {"worker_id": "w9"}, format="json"))
    # alice's run outside any project is outside a project-limited token too.
    assert_not_found(client.get(f"/api/runs/{world['alice_run'].pk}"))
    run_body = {
        "user": "bob",
        "conversation_id": zeus_run.conversation_id,
        "request_id": "r",
        "worker_id": "w",
        "project_id": zeus.pk,
    }
    assert_not_found(client.post("/api/runs", run_body, format="json"))
    # Chats belong to no project: out of reach.
    assert_not_found(client.post("/api/memory/search", {"query": "likes", "session_id": A}, format="json"))
    assert client.get("/api/chat-bindings").json()["results"] == []
    assert (
        client.post(
            "/api/chat-bindings", {"chat_key": "milky:private:40004", "user": "alice"}, format="json"
        ).status_code
        == 403
    )

    assert snapshot() == before


def test_project_limited_token_works_inside_its_project(world, alice, svc):
    client = limited(svc, only_projects=[world["apollo"].pk])
    apollo = world["apollo"]
    conv = client.post("/api/conversations", {"user": "alice", "title": "t", "project_id": apollo.pk}, format="json")
    assert conv.status_code == 201, conv.content
    run = client.post(
        "/api/runs",
        {"user": "alice", "conversation_id": conv.json()["id"], "request_id": "r1", "worker_id": "w1"},
        format="json",
    )
    assert run.status_code == 201 and run.json()["project_id"] == apollo.pk
    assert client.get(f"/api/runs/{world['alice_apollo_run'].pk}").status_code == 200
    assert client.get(f"/api/projects/{apollo.pk}/identity-memories").status_code == 200


def test_a_limit_whose_project_was_deleted_reaches_nothing(world, svc):
    """The limit is a list of ids, so a deleted project leaves an empty reach, not an open one."""
    zeus = world["zeus"]
    client = limited(svc, only_projects=[zeus.pk])
    zeus.delete()
    assert client.get("/api/projects").json()["results"] == []
    assert client.get("/api/runs").json()["results"] == []
    assert_not_found(client.get(f"/api/runs/{world['alice_apollo_run'].pk}"))


def test_a_run_a_project_limited_token_holds_reaches_its_project_only(world, alice, svc, run_api, api, make_run):
    """A token limited to projects reaches none of a user's own things (docs/API.md, "Limited
    service tokens"), so neither does a run it starts or takes over: no notes file, no workspace
    file, no user memory, no history, no notes written; its project's memories it gets."""
    apollo = world["apollo"]
    private = world["alice_run"].conversation  # in no project
    Message.objects.create(conversation=private, role="user", content="My salary is 95000 euros")
    notes = api(alice).put("/api/users/me/workspace/MEMORY.md", {"content": "- lawyer on Tuesday\n"}, format="json")
    assert notes.status_code == 200
    api(alice).put("/api/users/me/workspace/USER.md", {"content": "Alice lives at 12 Elm Street"}, format="json")
    api(alice).post(
        "/api/users/me/memories", {"kind": "fact", "content": "Alice is allergic to peanuts"}, format="json"
    )
    api(alice).post(
        f"/api/projects/{apollo.pk}/identity-memories",
        {"kind": "decision", "content": "Apollo ships on Fridays"},
        format="json",
    )
    auto_memory_settings_update(user=alice, changes={"use": True})  # her memories at a chat's start
    secrets = ("lawyer on Tuesday", "12 Elm Street", "allergic to peanuts")
    # An unlimited token's run in the project gets them all: what the limited one's must not.
    unlimited = make_run(alice, request_id="r8", project_id=apollo.pk)
    whole = run_api(unlimited.token).get(f"/api/runs/{unlimited.id}/context").content.decode()
    assert all(text in whole for text in (*secrets, "Apollo ships on Fridays")), whole
    client = limited(svc, only_projects=[apollo.pk])
    conv = client.post("/api/conversations", {"user": "alice", "title": "t", "project_id": apollo.pk}, format="json")
    run = client.post(
        "/api/runs",
        {"user": "alice", "conversation_id": conv.json()["id"], "request_id": "r9", "worker_id": "w"},
        format="json",
    ).json()
    assert AgentRun.objects.get(pk=run["id"]).within_project
    worker, base = run_api(run["run_token"]), f"/api/runs/{run['id']}"
    context = worker.get(f"{base}/context").content.decode()
    for text in (*secrets, "95000"):
        assert text not in context, text
    assert "Apollo ships on Fridays" in context
    assert json.loads(context)["memory_off_reason"] == "project_only"
    for tool, arguments in (
        ("search_thread_messages", {"query": "salary"}),
        ("read_thread_messages", {"thread_id": private.pk}),
        ("remember_memory", {"content": "written by a project-only key"}),
    ):
        response = worker.post(f"{base}/tools/{tool}", arguments, format="json")
        assert response.status_code == 403 and response.json()["error"]["code"] == "project_only_run", tool
    assert api(alice).get("/api/users/me/workspace/MEMORY.md").json()["content"] == "- lawyer on Tuesday\n"

    # Taken over by an unlimited token, the run is the user's again; by a limited one, not.
    AgentRun.objects.filter(pk=run["id"]).update(lease_expires_at=None)
    claimed = api(svc).post(f"{base}/claim", {"worker_id": "w2"}, format="json")
    assert claimed.status_code == 200, claimed.content
    assert not AgentRun.objects.get(pk=run["id"]).within_project
    assert "lawyer on Tuesday" in run_api(claimed.json()["run_token"]).get(f"{base}/context").content.decode()
    AgentRun.objects.filter(pk=run["id"]).update(lease_expires_at=None)
    again = client.post(f"{base}/claim", {"worker_id": "w3"}, format="json")
    assert again.status_code == 200 and AgentRun.objects.get(pk=run["id"]).within_project
    assert "lawyer on Tuesday" not in run_api(again.json()["run_token"]).get(f"{base}/context").content.decode()
