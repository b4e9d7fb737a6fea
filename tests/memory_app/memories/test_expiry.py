"""Expiry (docs/tiers.md, "Expiry") with a frozen clock: an item is used and found up to the
second before its ``expires_at`` and by nothing from that second on — every list default,
the identity context, injection, the scoped section, every search (identity list ``q``, the
home, the scoped search, the MCP tools) — while the ``expired`` filter still lists it; it
cannot be corrected; the worker purges it (with what is derived from it) after the grace."""

import io
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.management import call_command

from identity_app.models import Role
from memory_app.automemory.services import auto_memory_settings_update
from memory_app.mcp import tools
from memory_app.mcp.auth import principal_resolve
from memory_app.mcp.runs import SessionRun
from memory_app.memories import services
from memory_app.memories.models import Memory
from memory_app.runs.models import AgentRun
from memory_app.scoped.models import MemoryCandidate
from memory_app.scoped.services import scoped_item_create
from memory_app.search.models import SearchDocument as Document
from tests.factories import ChatBindingFactory, MembershipFactory, ProjectFactory
from tests.memory_app.mcp.conftest import key_for

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 12, 8, 9, 0, 0, tzinfo=UTC)
EXPIRES = T0 + timedelta(hours=3)
JUST_BEFORE = EXPIRES - timedelta(seconds=1)
CHAT = "milky:private:10001"


@pytest.fixture
def clock():
    with time_machine.travel(T0, tick=False) as traveller:
        yield traveller


@pytest.fixture
def world(clock, alice, bob, svc):
    project = ProjectFactory(name="Apollo")
    MembershipFactory(project=project, user=alice, role=Role.OWNER)
    MembershipFactory(project=project, user=bob, role=Role.MEMBER)
    ChatBindingFactory(chat_key=CHAT, user=alice)
    mine = services.memory_create(
        actor=alice, tier="user", kind="fact", content="Alice is in Lisbon this week", expires_at=EXPIRES
    )
    lasting = services.memory_create(actor=alice, tier="user", kind="fact", content="Alice lives in Berlin")
    freeze = services.memory_create(
        actor=alice,
        tier="project",
        project_id=project.pk,
        kind="decision",
        content="The staging freeze lasts until Friday",
        expires_at=EXPIRES.isoformat(),
    )
    chat_item, _ = scoped_item_create(
        actor=svc, session_id=CHAT, kind="preference", content="Alice wants Lisbon tram tips", expires_at=EXPIRES
    )
    return project, mine, lasting, freeze, chat_item


def ids(response) -> set[str]:
    assert response.status_code == 200, response.content
    body = response.json()
    rows = body["results"] if isinstance(body, dict) else body
    return {row["id"] for row in rows}


def both_sides(clock, check):
    """``check(expired: bool)`` one second before the expiry and at its exact second."""
    clock.move_to(JUST_BEFORE)
    check(False)
    clock.move_to(EXPIRES)
    check(True)


def test_lists_hide_an_item_at_its_exact_second_and_the_expired_filter_shows_it(api, alice, world, clock):
    project, mine, lasting, freeze, chat_item = world
    client = api(alice)

    def check(expired):
        listed = ids(client.get("/api/users/me/memories"))
        assert lasting.pk in listed and (mine.pk in listed) is not expired
        assert (mine.pk in ids(client.get("/api/users/me/memories", {"status": "expired"}))) is expired
        assert mine.pk in ids(client.get("/api/users/me/memories", {"status": "all"}))
        project_listed = ids(client.get(f"/api/projects/{project.pk}/identity-memories"))
        assert (freeze.pk in project_listed) is not expired
        home = ids(client.get("/api/users/me/memory-home/items", {"source": f"chat:{CHAT}"}))
        assert (chat_item.pk in home) is not expired
        home_expired = ids(client.get("/api/users/me/memory-home/items", {"source": "user", "status": "expired"}))
        assert (mine.pk in home_expired) is expired
        detail = client.get(f"/api/users/me/memories/{mine.pk}").json()
        assert detail["expired"] is expired and detail["expires_at"].startswith("2026-12-08T12:00:00")

    both_sides(clock, check)


def test_identity_context_and_injection_drop_it_at_its_exact_second(api, run_api, make_run, alice, world, clock):
    project, mine, lasting, _freeze, _chat = world
    auto_memory_settings_update(user=alice, changes={"use": True})
    client = api(alice)

    def check(expired):
        body = client.get("/api/users/me/identity-context", {"project_id": project.pk}).json()
        assert ("Lisbon this week" in body["identity_context"]) is not expired
        assert ("staging freeze" in body["identity_context"]) is not expired
        assert "Berlin" in body["identity_context"]
        assert {m["id"] for m in body["memories"]["user"]} == ({lasting.pk} if expired else {lasting.pk, mine.pk})
        handle = make_run(alice, prompt="Plan my evening", request_id=f"r-{expired}")
        AgentRun.objects.filter(pk=handle.id).update(project=project)
        context = run_api(handle.token).get(f"/api/runs/{handle.id}/context").json()
        assert ("Lisbon this week" in context["prompt"]) is not expired
        assert ("staging freeze" in context["prompt"]) is not expired

    both_sides(clock, check)


def test_context_lines_carry_their_date_and_expiry_in_the_readers_zone(api, alice, world, clock):
    from identity_app.services import profile_update

    profile_update(user=alice, timezone="Asia/Shanghai")
    text = api(alice).get("/api/users/me/identity-context").json()["identity_context"]
    # 12:00 UTC is 20:00 in Shanghai; created 09:00 UTC = 17:00 the same day there.
    assert "- [fact] [2026-12-08, until 2026-12-08 20:00] Alice is in Lisbon this week" in text
    assert "- [fact] [2026-12-08] Alice lives in Berlin" in text


def test_scoped_search_and_section_drop_it_at_its_exact_second(api, svc, alice, world, clock):
    from tests.memory_app.context.test_scoped_section import run_context, start_run

    *_, chat_item = world
    client = api(svc)

    def check(expired):
        found = client.post(
            "/api/memory/search", {"query": "Lisbon tram", "session_id": CHAT, "mode": "fts"}, format="json"
        )
        hits = found.json()["results"]
        assert (chat_item.pk in {h["id"] for h in hits}) is not expired
        for hit in hits:
            assert hit["expires_at"].startswith("2026-12-08T12:00:00") and hit["created_at"]
        section = {s["name"]: s for s in run_context(start_run(api, svc, alice, CHAT), "Lisbon tram")["sections"]}
        if expired:
            assert "scoped_memory" not in section
        else:
            assert (
                "[2026-12-08, until 2026-12-08 12:00] Alice wants Lisbon tram tips"
                in section["scoped_memory"]["content"]
            )

    both_sides(clock, check)


def test_identity_and_home_search_drop_it_at_its_exact_second(api, alice, world, clock):
    _project, mine, *_ = world
    client = api(alice)

    def check(expired):
        listed = ids(client.get("/api/users/me/memories", {"q": "Lisbon"}))
        assert (mine.pk in listed) is not expired
        hits = client.get("/api/users/me/memory-home/search", {"q": "Lisbon"}).json()["results"]
        assert (mine.pk in {h["id"] for h in hits}) is not expired

    both_sides(clock, check)


def test_mcp_tools_drop_it_at_its_exact_second(alice, world, clock):
    _project, mine, _lasting, _freeze, chat_item = world
    ctx = tools.CallContext(
        principal=(p := principal_resolve(authorization=f"Token {key_for(alice)}")), runs=SessionRun(p)
    )

    def check(expired):
        found = tools.tool_call(ctx=ctx, name="search_memories", arguments={"query": "Lisbon"})
        assert (mine.pk in {r["id"] for r in found["results"]}) is not expired
        chat = tools.tool_call(
            ctx=ctx, name="search_chat_memories", arguments={"session_id": CHAT, "query": "Lisbon tram", "mode": "fts"}
        )
        assert (chat_item.pk in {r["id"] for r in chat["results"]}) is not expired
        identity = tools.tool_call(ctx=ctx, name="get_identity_context", arguments={})
        assert ("Lisbon this week" in identity["identity_context"]) is not expired

    both_sides(clock, check)


def test_mcp_add_and_correct_set_the_expiry(alice, clock):
    ctx = tools.CallContext(
        principal=(p := principal_resolve(authorization=f"Token {key_for(alice)}")), runs=SessionRun(p)
    )
    added = tools.tool_call(
        ctx=ctx,
        name="add_memory",
        arguments={"content": "On call this week", "expires_at": "2026-12-13T23:59:00+01:00"},
    )
    assert added["memory"]["expires_at"] == "2026-12-13T22:59:00+00:00"
    kept = tools.tool_call(
        ctx=ctx, name="correct_memory", arguments={"memory_id": added["memory"]["id"], "content": "On call all week"}
    )
    assert kept["memory"]["expires_at"] == "2026-12-13T22:59:00+00:00"
    cleared = tools.tool_call(
        ctx=ctx,
        name="correct_memory",
        arguments={"memory_id": kept["memory"]["id"], "content": "Always on call", "expires_at": None},
    )
    assert cleared["memory"]["expires_at"] is None


def test_web_pages_show_until_and_hide_expired_items(client, alice, world, clock):
    from identity_app.services import profile_update

    profile_update(user=alice, timezone="Europe/Lisbon")
    client.force_login(alice)
    clock.move_to(JUST_BEFORE)
    home = client.get("/").content.decode()
    assert "Expiring soon" in home and "until Tuesday 8 Dec 12:00" in home
    mine = client.get("/memory/items/", {"source": "user"}).content.decode()
    assert "Lisbon this week" in mine and "until Tuesday 8 Dec 12:00" in mine
    clock.move_to(EXPIRES)
    assert "Lisbon this week" not in client.get("/memory/items/", {"source": "user"}).content.decode()
    assert "Lisbon this week" not in client.get("/").content.decode()
    expired = client.get("/memory/items/", {"source": "user", "status": "expired"}).content.decode()
    assert "Lisbon this week" in expired and "expired Tuesday 8 Dec 12:00" in expired
    assert "Lisbon this week" not in client.get("/memories/").content.decode()


def test_web_add_form_reads_the_expiry_in_the_users_zone(client, alice, clock):
    from identity_app.services import profile_update

    profile_update(user=alice, timezone="Asia/Shanghai")
    client.force_login(alice)
    add = "/memory/items/?source=user"  # the one list of my own memories, with its add form
    response = client.post(
        add, {"source": "user", "kind": "fact", "content": "Visiting Shanghai", "expires_at": "2026-12-20T18:00"}
    )
    assert response.status_code == 302, response.content
    assert Memory.objects.get(content="Visiting Shanghai").expires_at == datetime(2026, 12, 20, 10, 0, tzinfo=UTC)
    refused = client.post(
        add, {"source": "user", "kind": "fact", "content": "Was there", "expires_at": "2026-12-01T18:00"}
    )
    assert refused.status_code == 400 and not Memory.objects.filter(content="Was there").exists()


@pytest.mark.parametrize(
    "value",
    ["2026-12-08T08:59:59Z", "2026-12-08T09:00:00Z", "2026-12-20T18:00:00", "next friday", "2026-12-20", 17],
)
def test_an_expiry_in_the_past_naive_or_malformed_is_refused_and_nothing_is_written(api, alice, clock, value):
    response = api(alice).post(
        "/api/users/me/memories", {"kind": "fact", "content": "X", "expires_at": value}, format="json"
    )
    assert response.status_code == 400, response.content
    assert "expires_at" in response.content.decode()
    assert not Memory.objects.filter(owner=alice).exists()


def test_a_correction_may_carry_a_new_expiry_and_an_expired_item_cannot_be_corrected(api, alice, world, clock):
    _project, mine, lasting, *_ = world
    client = api(alice)
    later = (EXPIRES + timedelta(days=2)).isoformat()
    moved = client.post(
        f"/api/users/me/memories/{lasting.pk}/supersede",
        {"content": "Alice lives in Porto", "expires_at": later},
        format="json",
    )
    assert moved.status_code == 201 and moved.json()["expires_at"].startswith("2026-12-10T12:00")
    kept = client.post(f"/api/users/me/memories/{mine.pk}/supersede", {"content": "Alice is in Lisbon"}, format="json")
    assert kept.status_code == 201 and kept.json()["expires_at"] == moved.json()["expires_at"].replace("10T", "08T")
    clock.move_to(EXPIRES)
    new_id = kept.json()["id"]
    refused = client.post(f"/api/users/me/memories/{new_id}/supersede", {"content": "Still there"}, format="json")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "not_active"
    assert (
        Memory.objects.get(pk=new_id).status == "active" and not Memory.objects.filter(content="Still there").exists()
    )
    home = client.post(f"/api/users/me/memory-home/items/{new_id}/supersede", {"content": "Still"}, format="json")
    assert home.status_code == 409


def test_purge_deletes_expired_items_after_the_grace_with_their_derived_rows(alice, svc, world, clock, settings):
    _project, mine, lasting, _freeze, chat_item = world
    older = mine
    mine = services.memory_supersede(actor=alice, memory_id=mine.pk, content="Alice is in Lisbon until Sunday")
    MemoryCandidate.objects.create(
        session_id=CHAT,
        source="consolidate",
        extractor="deterministic",
        scope_type="chat",
        scope_id=CHAT,
        kind="preference",
        content="x",
        decision="created",
        memory=chat_item,
    )
    settings.MEMORY_EXPIRED_GRACE_DAYS = 30
    clock.move_to(EXPIRES + timedelta(days=30) - timedelta(seconds=1))
    assert services.memories_purge_expired() == []
    clock.move_to(EXPIRES + timedelta(days=30))
    out = io.StringIO()
    call_command("memory_worker", "--once", stdout=out)
    assert "expired memories purged: 4" in out.getvalue()
    gone = {older.pk, mine.pk, chat_item.pk}
    assert not Memory.objects.filter(pk__in=gone).exists()
    assert Memory.objects.filter(pk=lasting.pk).exists()
    assert not Document.objects.filter(ref__in=gone).exists()
    assert not MemoryCandidate.objects.filter(memory_id=chat_item.pk).exists()


def test_grace_zero_keeps_expired_items_listed_as_expired(api, alice, world, clock, settings):
    _project, mine, *_ = world
    settings.MEMORY_EXPIRED_GRACE_DAYS = 0
    clock.move_to(EXPIRES + timedelta(days=400))
    assert services.memories_purge_expired() == []
    assert mine.pk in ids(api(alice).get("/api/users/me/memories", {"status": "expired"}))


def test_export_then_import_keeps_the_expiry_and_skips_what_has_expired(api, alice, bob, world, clock):
    exported = api(alice).get("/api/users/me/export").json()
    items = {item["content"]: item for item in exported["memories"]["user"]}
    assert items["Alice is in Lisbon this week"]["expires_at"] == EXPIRES.isoformat()
    assert items["Alice lives in Berlin"]["expires_at"] is None
    report = api(bob).post("/api/users/me/import", exported, format="json").json()
    assert len(report["created"]) == 2
    imported = Memory.objects.get(owner=bob, content="Alice is in Lisbon this week")
    assert imported.expires_at == EXPIRES
    clock.move_to(EXPIRES)
    carol_report = api(alice).post("/api/users/me/import", exported, format="json").json()
    assert {r["result"] for r in carol_report["results"]} == {"duplicate", "expired"}


def test_import_refuses_a_naive_or_malformed_expiry(api, alice, clock):
    from tests.memory_app.home.test_export_import import valid_export

    for value in ("2026-12-20T10:00:00", "soon", 5):
        body = valid_export({"kind": "fact", "content": "Y", "expires_at": value})
        response = api(alice).post("/api/users/me/import", body, format="json")
        assert response.status_code == 400 and "expires_at" in response.content.decode()
    assert not Memory.objects.filter(owner=alice).exists()


def test_the_home_speaks_of_time_in_chinese_for_a_chinese_profile(client, alice, world, clock):
    from identity_app.services import profile_update

    profile_update(user=alice, timezone="Asia/Shanghai", language="zh-hans")
    client.force_login(alice)
    home = client.get("/").content.decode()
    assert "即将过期" in home and "有效至 12月8日 星期二 20:00" in home


def test_where_an_expired_item_still_shows_it_says_so(api, alice, world, clock):
    """Until the purge an expired item stays the owner's record: its detail, the JSON and the
    Markdown exports still hold it, marked as expired (its status stays active)."""
    project, mine, _lasting, freeze, _ = world
    owner = api(alice)

    def marks(expired: bool):
        detail = owner.get(f"/api/users/me/memories/{mine.pk}").json()
        assert (detail["expired"], detail["status"]) == (expired, "active")
        assert owner.get(f"/api/projects/{project.pk}/identity-memories/{freeze.pk}").json()["expired"] is expired
        assert owner.get(f"/api/users/me/memory-home/items/{mine.pk}").json()["expired"] is expired
        exported = owner.get("/api/users/me/export").json()
        items = {item["content"]: item for item in exported["memories"]["user"]}
        assert items["Alice is in Lisbon this week"]["expired"] is expired
        assert items["Alice lives in Berlin"]["expired"] is False
        [line] = [
            line
            for line in owner.get("/api/users/me/export/markdown").content.decode().splitlines()
            if "Alice is in Lisbon this week" in line
        ]
        assert ("(expired 2026-12-08 12:00)" in line) is expired

    both_sides(clock, marks)
