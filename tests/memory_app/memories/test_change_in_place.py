"""Changing a memory in place (``memory_change``, ``PATCH``): its expiry and whether it is paused,
same id, no new version, each change recorded in its provenance; a paused memory stays in every
list (marked) and leaves every path to an agent (``agent_q``): the identity block of a run's
context, the scoped section, the identity-context endpoint, ``/api/memory/search``, the MCP tools
and resources. And the other half: another user, a non-member, a viewer, a limited token and
malformed values change nothing."""

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from config.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from identity_app.models import Role
from identity_app.services import token_issue
from memory_app.automemory.services import auto_memory_settings_update
from memory_app.home.export import home_export
from memory_app.home.provenance import provenance_for
from memory_app.home.search import home_search
from memory_app.mcp import tools
from memory_app.mcp.auth import principal_resolve
from memory_app.mcp.runs import SessionRun
from memory_app.memories import services
from memory_app.memories.models import Memory, MemoryChange, Status, agent_q, live_q
from memory_app.scoped.services import scoped_item_create
from tests.factories import (
    ChatBindingFactory,
    ChatMemoryFactory,
    MembershipFactory,
    ProjectMemoryFactory,
    UserFactory,
    UserMemoryFactory,
)

pytestmark = pytest.mark.django_db

CHAT = "milky:private:10001"
FUTURE = "2031-05-01T18:00:00+00:00"


def snapshot() -> list[tuple]:
    """Every memory as it is, and every recorded change: what a refused change must leave."""
    rows = list(Memory.objects.order_by("pk").values_list("pk", "status", "paused", "expires_at", "content"))
    return [*rows, *MemoryChange.objects.order_by("pk").values_list("pk", "memory_id", "field", "new_value")]


def patch(client, url, body):
    return client.patch(url, body, format="json")


# --- the service --------------------------------------------------------------------------------


def test_pausing_keeps_the_id_writes_no_version_and_records_who_and_when(alice):
    memory = UserMemoryFactory(owner=alice, content="Prefers aisle seats")
    changed = services.memory_change(actor=alice, memory_id=memory.pk, paused=True)
    assert changed.pk == memory.pk and changed.paused and changed.status == Status.ACTIVE
    assert Memory.objects.count() == 1 and Memory.objects.get().content == "Prefers aisle seats"
    record = MemoryChange.objects.get()
    assert (record.memory_id, record.field, record.old_value, record.new_value) == (memory.pk, "paused", False, True)
    assert record.changed_by == alice and timezone.now() - record.changed_at < timedelta(seconds=30)
    # The same value again records nothing.
    services.memory_change(actor=alice, memory_id=memory.pk, paused=True)
    assert MemoryChange.objects.count() == 1
    services.memory_change(actor=alice, memory_id=memory.pk, paused=False)
    assert not Memory.objects.get().paused
    assert list(MemoryChange.objects.order_by("changed_at", "id").values_list("new_value", flat=True)) == [True, False]


def test_the_expiry_changes_in_place_and_repeated_changes_by_one_actor_are_one_record(alice):
    memory = UserMemoryFactory(owner=alice)
    services.memory_change(actor=alice, memory_id=memory.pk, expires_at=FUTURE)
    assert Memory.objects.get().expires_at == datetime(2031, 5, 1, 18, tzinfo=UTC)
    # A time-to-live refreshed again and again within the hour: one record, first old → last new.
    services.memory_change(actor=alice, memory_id=memory.pk, expires_at="2031-06-01T00:00:00Z")
    services.memory_change(actor=alice, memory_id=memory.pk, expires_at="2031-07-01T00:00:00+02:00")
    record = MemoryChange.objects.get()
    assert (record.old_value, record.new_value) == (None, "2031-06-30T22:00:00+00:00")
    # Back where it was: nothing left to record.
    services.memory_change(actor=alice, memory_id=memory.pk, expires_at=None)
    assert Memory.objects.get().expires_at is None and not MemoryChange.objects.exists()
    assert Memory.objects.get().pk == memory.pk and Memory.objects.count() == 1


def test_an_expired_memory_may_get_a_new_expiry_and_comes_back(alice):
    memory = UserMemoryFactory(owner=alice, expires_at=timezone.now() - timedelta(minutes=1))
    assert not Memory.objects.filter(live_q(), pk=memory.pk).exists()
    services.memory_change(actor=alice, memory_id=memory.pk, expires_at=None)
    assert Memory.objects.filter(agent_q(), pk=memory.pk).exists()


def test_a_correction_of_a_paused_memory_stays_paused(alice):
    memory = UserMemoryFactory(owner=alice)
    services.memory_change(actor=alice, memory_id=memory.pk, paused=True)
    new = services.memory_supersede(actor=alice, memory_id=memory.pk, content="Prefers window seats")
    assert new.paused and not Memory.objects.filter(agent_q(), pk=new.pk).exists()
    with pytest.raises(Conflict) as refused:
        services.memory_change(actor=alice, memory_id=memory.pk, paused=False)
    assert refused.value.code == "not_active"


def test_forgetting_a_memory_forgets_its_changes(alice):
    memory = UserMemoryFactory(owner=alice)
    services.memory_change(actor=alice, memory_id=memory.pk, paused=True, expires_at=FUTURE)
    assert MemoryChange.objects.count() == 2
    services.memory_forget(actor=alice, memory_id=memory.pk)
    assert not MemoryChange.objects.exists()


@pytest.mark.parametrize(
    "changes,code",
    [
        ({}, "nothing_to_change"),
        ({"paused": "yes"}, "invalid_paused"),
        ({"paused": 1}, "invalid_paused"),
        ({"paused": None}, "invalid_paused"),
        ({"expires_at": "2020-01-01T00:00:00Z"}, "invalid_expires_at"),
        ({"expires_at": "2031-01-01T00:00:00"}, "invalid_expires_at"),
        ({"expires_at": "next friday"}, "invalid_expires_at"),
        ({"expires_at": 1893456000}, "invalid_expires_at"),
        ({"paused": True, "expires_at": "soon"}, "invalid_expires_at"),
    ],
)
def test_malformed_values_are_refused_and_change_nothing(alice, changes, code):
    memory = UserMemoryFactory(owner=alice)
    before = snapshot()
    with pytest.raises(InvalidInput) as refused:
        services.memory_change(actor=alice, memory_id=memory.pk, **changes)
    assert refused.value.code == code
    assert snapshot() == before


def test_the_write_rule_decides_per_tier_and_refusals_change_nothing(alice, bob, mallory, svc, project):
    viewer = UserFactory(username="vera")
    MembershipFactory(project=project, user=viewer, role=Role.VIEWER)
    mine = UserMemoryFactory(owner=alice)
    theirs = ProjectMemoryFactory(project=project)
    chat = ChatMemoryFactory(scope_id=CHAT)
    ChatBindingFactory(chat_key=CHAT, user=alice)
    before = snapshot()
    for actor, memory_id, refusal in [
        (bob, mine.pk, NotFound),  # another user's own memory: as if it did not exist
        (svc, mine.pk, NotFound),
        (mallory, theirs.pk, NotFound),  # not a member of the project
        (viewer, theirs.pk, PermissionDenied),  # a viewer reads, never writes
        (bob, chat.pk, NotFound),  # a chat bound to someone else
        (mallory, "mem_does_not_exist", NotFound),
    ]:
        with pytest.raises(refusal):
            services.memory_change(actor=actor, memory_id=memory_id, paused=True)
    assert snapshot() == before
    # The route's tier pins what an id may address: alice's own memory is no project memory.
    with pytest.raises(NotFound):
        services.memory_change(actor=alice, memory_id=mine.pk, paused=True, tier="project", project_id=project.pk)
    assert snapshot() == before
    services.memory_change(actor=bob, memory_id=theirs.pk, paused=True)  # a member with create_task
    services.memory_change(actor=alice, memory_id=chat.pk, paused=True)  # the user the chat is bound to
    services.memory_change(actor=svc, memory_id=chat.pk, paused=False)  # a service principal
    assert Memory.objects.get(pk=theirs.pk).paused and not Memory.objects.get(pk=chat.pk).paused


# --- a paused memory leaves every agent path ----------------------------------------------------


@pytest.fixture
def paused_world(alice, svc, project):
    """alice: an own memory, a project memory and an item of her bound chat, each in use, and one
    of each paused (the paused ones say PAUSED)."""
    ChatBindingFactory(chat_key=CHAT, user=alice)
    auto_memory_settings_update(user=alice, changes={"use": True})
    world = {
        "user_on": UserMemoryFactory(owner=alice, content="INUSE alice drinks oolong tea"),
        "project_on": ProjectMemoryFactory(project=project, content="INUSE Apollo bills in euros"),
        "chat_on": scoped_item_create(actor=svc, session_id=CHAT, kind="preference", content="INUSE tea: oolong")[0],
    }
    paused = {
        "user": UserMemoryFactory(owner=alice, content="PAUSED alice drinks green tea"),
        "project": ProjectMemoryFactory(project=project, content="PAUSED Apollo bills tea in dollars"),
        "chat": scoped_item_create(actor=svc, session_id=CHAT, kind="preference", content="PAUSED tea: green")[0],
    }
    for memory in paused.values():
        services.memory_change(actor=alice, memory_id=memory.pk, paused=True)
    world.update({f"{k}_paused": v for k, v in paused.items()})
    return world


def _run_context(api, svc, user, project):
    client = api(svc)
    conversation = client.post(
        "/api/conversations",
        {"user": user.username, "title": "t", "session_key": CHAT, "project_id": project.pk},
        format="json",
    ).json()
    run = client.post(
        "/api/runs",
        {
            "user": user.username,
            "conversation_id": conversation["id"],
            "request_id": "r1",
            "kind": "chat",
            "worker_id": "w1",
            "prompt": "What tea?",
            "project_id": project.pk,
        },
        format="json",
    ).json()
    runner = APIClient()
    runner.credentials(HTTP_AUTHORIZATION=f"Run {run['run_token']}")
    response = runner.get(f"/api/runs/{run['id']}/context", {"query": "tea"})
    assert response.status_code == 200, response.content
    return response.json()


def test_the_run_context_leaves_paused_memories_out_of_the_identity_block_and_the_scoped_section(
    api, svc, alice, project, paused_world
):
    body = json.dumps(_run_context(api, svc, alice, project))
    assert "INUSE alice drinks oolong tea" in body and "INUSE Apollo bills in euros" in body
    assert "INUSE tea: oolong" in body
    assert "PAUSED" not in body


def test_resuming_brings_a_memory_back_to_the_agents(api, svc, alice, project, paused_world):
    services.memory_change(actor=alice, memory_id=paused_world["user_paused"].pk, paused=False)
    body = json.dumps(_run_context(api, svc, alice, project))
    assert "PAUSED alice drinks green tea" in body and "PAUSED tea: green" not in body


def test_the_identity_context_endpoint_and_the_scoped_search_leave_paused_memories_out(
    api, svc, alice, project, paused_world
):
    context = api(alice).get("/api/users/me/identity-context", {"project_id": project.pk}).json()
    assert "INUSE alice" in json.dumps(context) and "PAUSED" not in json.dumps(context)
    for client in (api(svc), api(alice)):
        found = client.post("/api/memory/search", {"query": "tea", "session_id": CHAT}, format="json")
        assert found.status_code == 200, found.content
        contents = [hit["content"] for hit in found.json()["results"]]
        assert "INUSE tea: oolong" in contents and not any("PAUSED" in c for c in contents)


def test_the_mcp_tools_and_resources_leave_paused_memories_out(alice, paused_world):
    key = token_issue(user=alice)[1]
    principal = principal_resolve(authorization=f"Token {key}")
    ctx = tools.CallContext(principal=principal, runs=SessionRun(principal))
    found = json.dumps(tools.tool_call(ctx=ctx, name="search_memories", arguments={"query": "tea"}))
    assert "INUSE alice drinks oolong tea" in found and "PAUSED" not in found
    chat = json.dumps(
        tools.tool_call(ctx=ctx, name="search_chat_memories", arguments={"session_id": CHAT, "query": "tea"})
    )
    assert "INUSE tea: oolong" in chat and "PAUSED" not in chat
    identity = json.dumps(tools.tool_call(ctx=ctx, name="get_identity_context", arguments={}))
    assert "INUSE alice" in identity and "PAUSED" not in identity
    resource = tools.resource_read(ctx=ctx, uri=tools.IDENTITY_URI)
    assert "INUSE alice" in resource and "PAUSED" not in resource


def test_a_paused_memory_stays_in_every_list_of_its_owner_marked(api, alice, project, paused_world):
    client = api(alice)
    mine = client.get("/api/users/me/memories").json()["results"]
    assert {m["content"]: m["paused"] for m in mine} == {
        "INUSE alice drinks oolong tea": False,
        "PAUSED alice drinks green tea": True,
    }
    listed = client.get(f"/api/projects/{project.pk}/identity-memories").json()["results"]
    assert any(m["paused"] for m in listed)
    chat = client.get("/api/users/me/memory-home/items", {"source": f"chat:{CHAT}"}).json()["results"]
    assert [m["paused"] for m in chat if m["content"].startswith("PAUSED")] == [True]
    overview = {s["source"]: s["count"] for s in client.get("/api/users/me/memory-home").json()["sources"]}
    assert overview["user"] == 2 and overview[f"chat:{CHAT}"] == 2
    # The owner's own search finds it (and says it is paused); an agent's search for them does not.
    assert any(h.memory.paused for h in home_search(user=alice, query="green tea").hits)
    assert not any(h.memory.paused for h in home_search(user=alice, query="green tea", for_agent=True).hits)


# --- the API ------------------------------------------------------------------------------------


def test_patch_on_my_memory_pauses_and_resumes_it_in_place(api, alice):
    memory = UserMemoryFactory(owner=alice)
    url = f"/api/users/me/memories/{memory.pk}"
    response = patch(api(alice), url, {"paused": True, "expires_at": FUTURE})
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["id"], body["paused"], body["expires_at"]) == (memory.pk, True, "2031-05-01T18:00:00Z")
    assert Memory.objects.count() == 1
    assert patch(api(alice), url, {"paused": False}).json()["paused"] is False
    assert patch(api(alice), url, {"expires_at": None}).json()["expires_at"] is None


@pytest.mark.parametrize(
    "body,status,code",
    [
        ({}, 400, "nothing_to_change"),
        ({"paused": "true"}, 400, "invalid"),
        ({"paused": 0}, 400, "invalid"),
        ({"paused": True, "content": "new words"}, 400, "invalid"),
        ({"expires_at": "2031-01-01T00:00:00"}, 400, "invalid"),
        ({"expires_at": "2001-01-01T00:00:00Z"}, 400, "invalid_expires_at"),
        ([True], 400, "invalid"),
    ],
)
def test_patch_refuses_malformed_bodies_and_changes_nothing(api, alice, body, status, code):
    memory = UserMemoryFactory(owner=alice)
    before = snapshot()
    response = patch(api(alice), f"/api/users/me/memories/{memory.pk}", body)
    assert response.status_code == status, response.content
    assert response.json()["error"]["code"] == code
    assert snapshot() == before


@given(
    body=st.dictionaries(
        st.sampled_from(["paused", "expires_at", "kind", "status"]),
        st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=40), st.lists(st.booleans(), max_size=2)),
        max_size=3,
    )
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_patch_body_either_changes_exactly_what_it_says_or_changes_nothing(api, alice, body):
    Memory.objects.all().delete()
    memory = UserMemoryFactory(owner=alice)
    before = snapshot()
    response = patch(api(alice), f"/api/users/me/memories/{memory.pk}", body)
    assert response.status_code in (200, 400), response.content
    if response.status_code == 400:
        assert snapshot() == before
        return
    stored = Memory.objects.get()
    assert stored.pk == memory.pk and Memory.objects.count() == 1
    assert stored.paused == body.get("paused", False)
    assert set(body) <= {"paused", "expires_at"}


def test_patch_on_a_project_memory_member_viewer_and_non_member(api, alice, bob, mallory, project):
    viewer = UserFactory(username="vera")
    MembershipFactory(project=project, user=viewer, role=Role.VIEWER)
    memory = ProjectMemoryFactory(project=project)
    url = f"/api/projects/{project.pk}/identity-memories/{memory.pk}"
    before = snapshot()
    assert patch(api(mallory), url, {"paused": True}).status_code == 404
    assert patch(api(viewer), url, {"paused": True}).status_code == 403
    assert (
        patch(api(alice), f"/api/projects/{project.pk}/identity-memories/mem_nothing", {"paused": True}).status_code
        == 404
    )
    assert snapshot() == before
    response = patch(api(bob), url, {"paused": True})
    assert response.status_code == 200 and response.json()["paused"] is True


def test_patch_on_a_chat_item_for_services_and_the_bound_user_only(api, alice, bob, svc):
    ChatBindingFactory(chat_key=CHAT, user=alice)
    item = ChatMemoryFactory(scope_id=CHAT)
    own = UserMemoryFactory(owner=alice)
    url = f"/api/memory/items/{item.pk}"
    limited = APIClient()
    limited.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=svc, only_users=['bob'])[1]}")
    before = snapshot()
    assert patch(api(bob), url, {"paused": True}).status_code == 404
    assert patch(limited, url, {"paused": True}).status_code == 404  # outside the token's reach
    assert patch(api(alice), f"/api/memory/items/{own.pk}", {"paused": True}).status_code == 404  # not a chat item
    assert patch(APIClient(), url, {"paused": True}).status_code == 401
    assert snapshot() == before
    response = patch(api(svc), url, {"paused": True, "expires_at": FUTURE})
    assert response.status_code == 200 and response.json()["paused"] is True
    response = patch(api(alice), url, {"paused": False})
    assert response.status_code == 200 and response.json()["paused"] is False


def test_patch_on_a_home_item_records_the_change_in_its_provenance(api, alice, svc):
    ChatBindingFactory(chat_key=CHAT, user=alice)
    item = ChatMemoryFactory(scope_id=CHAT)
    client = api(alice)
    response = patch(client, f"/api/users/me/memory-home/items/{item.pk}", {"paused": True})
    assert response.status_code == 200, response.content
    provenance = response.json()["provenance"]
    assert provenance["paused"] is True and provenance["changes_total"] == 1
    assert provenance["changes"][0] | {"at": None} == {
        "field": "paused",
        "old": False,
        "new": True,
        "at": None,
        "by": "you",
        "by_name": "alice",
    }
    assert "You paused it" in provenance["sentence"]


def test_an_item_shared_with_everyone_from_my_chat_is_mine_to_forget_not_to_pause(api, alice, svc, settings):
    settings.MEMORY_CHAT_TO_GLOBAL = "direct"
    ChatBindingFactory(chat_key=CHAT, user=alice)
    shared, _created = scoped_item_create(actor=svc, session_id=CHAT, kind="procedure", content="Descale monthly")
    assert shared.scope_type == "global"
    before = snapshot()
    assert patch(api(alice), f"/api/users/me/memory-home/items/{shared.pk}", {"paused": True}).status_code == 403
    assert snapshot() == before


def test_provenance_reads_the_changes_in_a_fixed_number_of_queries(alice):
    memories = [UserMemoryFactory(owner=alice) for _ in range(3)]
    for memory in memories:
        services.memory_change(actor=alice, memory_id=memory.pk, paused=True)
    provenance_for(user=alice, memories=memories[:1])  # what is read once per process is read
    with CaptureQueriesContext(connection) as few:
        provenance_for(user=alice, memories=memories[:1])
    many = [UserMemoryFactory(owner=alice) for _ in range(12)]
    for memory in many:
        for paused in (True, False, True, False, True, False, True):
            services.memory_change(actor=alice, memory_id=memory.pk, paused=paused)
    with CaptureQueriesContext(connection) as more:
        found = provenance_for(user=alice, memories=many)
    assert len(more) == len(few)
    assert all(len(p.changes) == 5 and p.changes_total == 7 for p in found.values())


# --- export and import ---------------------------------------------------------------------------


def test_export_carries_paused_and_the_changes_and_import_keeps_paused(api, alice, bob):
    memory = UserMemoryFactory(owner=alice, content="Keeps a paper diary")
    services.memory_change(actor=alice, memory_id=memory.pk, paused=True)
    exported = home_export(user=alice, now=timezone.now())
    item = exported["memories"]["user"][0]
    assert item["paused"] is True and item["provenance"]["changes"][0]["field"] == "paused"
    response = api(bob).post("/api/users/me/import", exported, format="json")
    assert response.status_code == 200, response.content
    imported = Memory.objects.get(owner=bob)
    assert imported.paused and imported.content == "Keeps a paper diary"
    assert not Memory.objects.filter(agent_q(), owner=bob).exists()
    exported["memories"]["user"][0]["paused"] = "yes"
    before = snapshot()
    refused = api(bob).post("/api/users/me/import", exported, format="json")
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_paused"
    assert snapshot() == before


# --- the web pages and the MCP tool --------------------------------------------------------------


def test_the_item_page_pauses_resumes_and_changes_the_expiry(client, alice):
    memory = UserMemoryFactory(owner=alice)
    client.force_login(alice)
    page = client.get(reverse("web:memory_home_item", args=[memory.pk])).content.decode()
    assert 'name="action" value="pause"' in page
    change = reverse("web:memory_home_item_change", args=[memory.pk])
    response = client.post(change, {"action": "pause"})
    assert response.status_code == 302 and Memory.objects.get().paused
    page = client.get(reverse("web:memory_home_item", args=[memory.pk])).content.decode()
    assert 'class="badge paused"' in page and "You paused it" in page
    response = client.post(change, {"action": "resume", "source": "user"})
    assert response.status_code == 302 and response["Location"].startswith(reverse("web:memory_home_items"))
    assert not Memory.objects.get().paused
    response = client.post(change, {"action": "expiry", "expires_at": "2031-05-01T18:00"})
    assert response.status_code == 302 and Memory.objects.get().expires_at is not None
    response = client.post(change, {"action": "expiry", "expires_at": "2001-05-01T18:00"})
    assert response.status_code == 400 and "in the future" in response.content.decode()
    response = client.post(change, {"action": "expiry", "no_expiry": "on"})
    assert response.status_code == 302 and Memory.objects.get().expires_at is None
    assert Memory.objects.count() == 1


def test_the_change_page_is_404_for_another_user_and_403_for_a_viewer(client, alice, bob, project):
    viewer = UserFactory(username="vera")
    MembershipFactory(project=project, user=viewer, role=Role.VIEWER)
    mine = UserMemoryFactory(owner=alice)
    theirs = ProjectMemoryFactory(project=project)
    before = snapshot()
    client.force_login(bob)
    assert client.post(reverse("web:memory_home_item_change", args=[mine.pk]), {"action": "pause"}).status_code == 404
    client.force_login(viewer)
    assert client.post(reverse("web:memory_home_item_change", args=[theirs.pk]), {"action": "pause"}).status_code == 403
    assert (
        client.post(
            reverse("web:memory_home_item_change", args=[mine.pk]),
            {"action": "pause", "source": "https://evil.example/"},
        ).status_code
        == 404
    )
    assert snapshot() == before


def test_the_mcp_change_tool_pauses_an_item_of_my_home_and_nothing_else(alice, bob):
    mine = UserMemoryFactory(owner=alice, content="Alice prefers tea")
    theirs = UserMemoryFactory(owner=bob)
    principal = principal_resolve(authorization=f"Token {token_issue(user=alice)[1]}")
    ctx = tools.CallContext(principal=principal, runs=SessionRun(principal))
    result = tools.tool_call(ctx=ctx, name="change_memory", arguments={"memory_id": mine.pk, "paused": True})
    assert result["result"] == "changed" and result["memory"]["paused"] is True
    before = snapshot()
    with pytest.raises(NotFound):
        tools.tool_call(ctx=ctx, name="change_memory", arguments={"memory_id": theirs.pk, "paused": True})
    with pytest.raises(InvalidInput):
        tools.tool_call(ctx=ctx, name="change_memory", arguments={"memory_id": mine.pk, "paused": "yes"})
    with pytest.raises(InvalidInput) as nothing:
        tools.tool_call(ctx=ctx, name="change_memory", arguments={"memory_id": mine.pk})
    assert nothing.value.code == "nothing_to_change"
    assert snapshot() == before


def test_the_home_search_api_leaves_paused_memories_out_unless_asked(api, alice):
    memory = UserMemoryFactory(owner=alice, content="Alice likes green tea")
    services.memory_change(actor=alice, memory_id=memory.pk, paused=True)
    client = api(alice)
    assert client.get("/api/users/me/memory-home/search", {"q": "green tea"}).json()["results"] == []
    found = client.get("/api/users/me/memory-home/search", {"q": "green tea", "include_paused": "true"}).json()
    assert [(hit["id"], hit["paused"]) for hit in found["results"]] == [(memory.pk, True)]
    assert client.get("/api/users/me/memory-home/search", {"q": "tea", "include_paused": "yes"}).status_code == 400
