"""Who read this? (docs/home.md): every path that sends memory text to an agent records which
items (or notes-file version) went to which run, principal and token; the reads are shown
only to readers of the items, go with the items, are exported and purged after the retention;
the buffer is bounded and never fails the request."""

import hashlib
import json
import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone
from prometheus_client import REGISTRY

from identity_app.models import ApiToken, Role
from identity_app.services import token_issue
from memory_app.automemory.services import auto_memory_settings_update
from memory_app.home.reads import read_views
from memory_app.mcp import tools as mcp_tools
from memory_app.mcp.auth import principal_resolve
from memory_app.mcp.runs import SessionRun
from memory_app.memories import services as memory_services
from memory_app.notes import services as notes_services
from memory_app.notes.models import WorkspaceChange
from memory_app.reads import recorder
from memory_app.reads.models import ItemKind, MemoryRead, ReadPath
from memory_app.reads.selectors import reads_of
from memory_app.reads.services import reads_purge
from memory_app.scoped.services import scoped_item_create
from memory_app.threads import services as thread_services
from tests.factories import (
    ChatBindingFactory,
    GlobalMemoryFactory,
    MembershipFactory,
    ProjectFactory,
    ProjectMemoryFactory,
    UserFactory,
    UserMemoryFactory,
)

pytestmark = pytest.mark.django_db
CHAT = "milky:private:10001"
NOTES = "- drinks oolong in the afternoon\n"


def _reads(**filters):
    return list(MemoryRead.objects.filter(**filters).order_by("id"))


def _dropped(result: str) -> float:
    return REGISTRY.get_sample_value("memsvc_memory_reads_total", {"result": result}) or 0.0


@pytest.fixture
def setup(alice, bob, svc):
    """alice: a notes file, two memories of her own, a project shared with bob (one memory),
    a chat bound to her with an item; auto-memory ``use`` on so that new runs get the block."""
    notes_services.workspace_file_write(user=alice, name="MEMORY.md", content=NOTES)
    auto_memory_settings_update(user=alice, changes={"use": True})
    project = ProjectFactory(name="Apollo")
    MembershipFactory(project=project, user=alice, role=Role.OWNER)
    MembershipFactory(project=project, user=bob, role=Role.MEMBER)
    ChatBindingFactory(chat_key=CHAT, user=alice)
    mine = [
        UserMemoryFactory(owner=alice, content="Alice prefers short answers."),
        UserMemoryFactory(owner=alice, content="Alice lives in Lisbon."),
    ]
    shared = ProjectMemoryFactory(project=project, content="Apollo bills in euros.")
    chat_item, _ = scoped_item_create(actor=svc, session_id=CHAT, kind="preference", content="I drink matcha latte")
    return {"project": project, "mine": mine, "project_memory": shared, "chat_item": chat_item}


def test_context_records_notes_version_identity_block_and_scoped_items(
    run_api, make_run, svc, alice, setup, workspace_root
):
    conversation = thread_services.conversation_create(
        actor=svc, username="alice", title="t", project_id=setup["project"].pk, session_key=CHAT
    )
    handle = make_run(alice, conversation=conversation, prompt="hello")
    response = run_api(handle.token).get(f"/api/runs/{handle.id}/context", {"query": "what do I drink? matcha"})
    assert response.status_code == 200, response.content
    ctx = response.json()
    assert ctx["identity_injected"] is True and any(s["name"] == "scoped_memory" for s in ctx["sections"])

    notes = _reads(path=ReadPath.CONTEXT_NOTES)
    assert [(r.item_kind, r.item_ref) for r in notes] == [(ItemKind.NOTES, hashlib.sha256(NOTES.encode()).hexdigest())]
    identity = {r.item_ref for r in _reads(path=ReadPath.CONTEXT_IDENTITY)}
    assert identity == {m.pk for m in setup["mine"]} | {setup["project_memory"].pk}
    assert [r.item_ref for r in _reads(path=ReadPath.CONTEXT_SCOPED)] == [setup["chat_item"].pk]
    for read in _reads():
        assert read.run_ref == handle.id and read.run_generation == handle.run.lease_generation
        assert read.user_id == alice.pk and read.principal_id == svc.pk and read.token_id is None
    # The notes version is the one the change history recorded for the file as shown.
    assert WorkspaceChange.objects.filter(user=alice, name="MEMORY.md").latest("seq").after_sha256 == notes[0].item_ref


def test_refused_or_memoryless_contexts_record_nothing(run_api, make_run, alice, setup):
    handle = make_run(alice)
    assert run_api(handle.token + "x").get(f"/api/runs/{handle.id}/context").status_code in (401, 403)
    child = make_run(alice, kind="subagent")
    assert run_api(child.token).get(f"/api/runs/{child.id}/context", {"query": "matcha"}).status_code == 200
    assert _reads() == []


def test_history_tools_record_the_messages_they_return(run_api, make_run, svc, alice):
    conversation = thread_services.conversation_create(actor=svc, username="alice", title="Trip")
    sent = thread_services.message_create(
        actor=svc, conversation_id=conversation.pk, role="user", content="Book the Lisbon flight with TAP"
    )
    handle = make_run(alice)
    url = f"/api/runs/{handle.id}/tools/"
    found = run_api(handle.token).post(url + "search_thread_messages", {"query": "Lisbon flight"}, format="json")
    assert found.status_code == 200 and found.json()["results"], found.content
    read = run_api(handle.token).post(url + "read_thread_messages", {"thread_id": conversation.pk}, format="json")
    assert read.status_code == 200, read.content
    rows = _reads(item_kind=ItemKind.MESSAGE)
    assert [(r.path, r.item_ref) for r in rows] == [
        (ReadPath.HISTORY_SEARCH, str(sent.pk)),
        (ReadPath.HISTORY_READ, str(sent.pk)),
    ]
    assert all(r.run_ref == handle.id and r.user_id == alice.pk and r.principal_id == svc.pk for r in rows)
    # A refused call (a forged token) records nothing more.
    refused = run_api("forged").post(url + "read_thread_messages", {"thread_id": conversation.pk}, format="json")
    assert refused.status_code == 401
    assert len(_reads()) == 2


def test_mcp_tools_and_resources_record_the_sessions_principal_and_token(alice, setup, workspace_root):
    _, key = token_issue(user=alice, name="laptop")
    principal = principal_resolve(authorization=f"Token {key}")
    ctx = mcp_tools.CallContext(principal=principal, runs=SessionRun(principal))
    result = mcp_tools.tool_call(ctx=ctx, name="search_memories", arguments={"query": "Lisbon"})
    assert [hit["id"] for hit in result["results"]] == [setup["mine"][1].pk]
    mcp_tools.tool_call(ctx=ctx, name="get_identity_context", arguments={})
    mcp_tools.resource_read(ctx=ctx, uri=mcp_tools.NOTES_URI)
    mcp_tools.tool_call(ctx=ctx, name="search_chat_memories", arguments={"session_id": CHAT, "query": "matcha"})
    # A refused call (a tool this session does not get with these arguments) records nothing.
    with pytest.raises(Exception):  # noqa: B017 - the refusal's class is the tools' business
        mcp_tools.tool_call(ctx=ctx, name="search_memories", arguments={"query": "x", "extra": 1})
    ctx.runs.close()
    recorder.flush()
    token = ApiToken.objects.get(name="laptop")
    rows = _reads()
    assert {r.path for r in rows} == {
        ReadPath.MCP_SEARCH,
        ReadPath.MCP_IDENTITY,
        ReadPath.CONTEXT_NOTES,
        ReadPath.MCP_CHAT_SEARCH,
    }
    assert all(r.principal_id == alice.pk and r.token_id == token.pk and r.user_id == alice.pk for r in rows)
    assert [r.item_ref for r in rows if r.path == ReadPath.MCP_SEARCH] == [setup["mine"][1].pk]
    # The notes resource: the notes-file version only, with the session's run.
    notes = [r for r in rows if r.path == ReadPath.CONTEXT_NOTES]
    assert len(notes) == 1 and notes[0].item_kind == ItemKind.NOTES and notes[0].run_ref
    assert not [r for r in rows if r.path in (ReadPath.CONTEXT_IDENTITY, ReadPath.CONTEXT_SCOPED)]


def test_api_memory_search_records_the_service_and_its_token(api, svc, alice, setup):
    client = api(svc)
    response = client.post("/api/memory/search", {"query": "matcha", "session_id": CHAT}, format="json")
    assert response.status_code == 200 and response.json()["results"], response.content
    rows = _reads(path=ReadPath.API_SEARCH)
    token = ApiToken.objects.filter(user=svc).latest("id")
    assert [(r.item_ref, r.principal_id, r.token_id, r.user_id) for r in rows] == [
        (setup["chat_item"].pk, svc.pk, token.pk, None)
    ]
    # Refused: a malformed session key, and a user who may not search this chat.
    assert client.post("/api/memory/search", {"query": "m", "session_id": "bad key"}, format="json").status_code == 400
    assert len(_reads()) == 1


def _read(memory_id: str, **fields) -> MemoryRead:
    return MemoryRead.objects.create(item_kind=ItemKind.MEMORY, item_ref=memory_id, path=ReadPath.API_SEARCH, **fields)


def test_a_reader_sees_reads_of_their_home_items_only(api, alice, bob, mallory, svc, setup):
    own, project_memory = setup["mine"][0], setup["project_memory"]
    _read(own.pk, principal=svc)
    _read(project_memory.pk, principal=svc)
    # bob shares the project: he sees its reads, never those of alice's own memories or chat.
    listed = api(bob).get("/api/users/me/memory-home/reads", {"source": f"project:{setup['project'].pk}"})
    assert listed.status_code == 200 and [r["item"] for r in listed.json()["results"]] == [project_memory.pk]
    assert [
        r["item"] for r in api(bob).get("/api/users/me/memory-home/reads", {"source": "user"}).json()["results"]
    ] == []
    assert api(bob).get(f"/api/users/me/memory-home/items/{own.pk}").status_code == 404
    assert api(mallory).get(
        "/api/users/me/memory-home/reads", {"source": f"project:{setup['project'].pk}"}
    ).status_code in (403, 404)
    assert api(mallory).get("/api/users/me/memory-home/reads", {"source": f"chat:{CHAT}"}).status_code == 404
    mine = api(alice).get("/api/users/me/memory-home/reads", {"source": "user"}).json()["results"]
    assert [r["item"] for r in mine] == [own.pk] and mine[0]["principal"] == "svc"
    detail = api(alice).get(f"/api/users/me/memory-home/items/{own.pk}").json()
    assert detail["last_read"]["principal"] == "svc" and detail["last_read"]["path"] == ReadPath.API_SEARCH


def test_token_names_are_shown_for_services_and_own_tokens_only(alice, bob, svc, setup):
    memory = setup["project_memory"]
    bob_token, _ = token_issue(user=bob, name="bob-private-laptop")
    svc_token, _ = token_issue(user=svc, name="runtime-eu")
    _read(memory.pk, principal=bob, token=bob_token)
    _read(memory.pk, principal=svc, token=svc_token)
    views = read_views(user=alice, reads=list(reads_of(item_kind=ItemKind.MEMORY, refs=[memory.pk])))
    assert sorted(v.token_name for v in views) == ["", "runtime-eu"]


def test_forgetting_an_item_deletes_its_reads_and_clearing_notes_history_its_versions(api, alice, svc, setup):
    own, other = setup["mine"]
    _read(own.pk, principal=svc)
    _read(other.pk, principal=svc)
    MemoryRead.objects.create(item_kind=ItemKind.NOTES, item_ref="a" * 64, path=ReadPath.CONTEXT_NOTES, user=alice)
    memory_services.memory_forget(actor=alice, memory_id=own.pk, tier="user")
    assert not MemoryRead.objects.filter(item_ref=own.pk).exists()
    assert MemoryRead.objects.filter(item_ref=other.pk).exists()
    notes_services.workspace_history_clear(user=alice, name="MEMORY.md")
    assert not MemoryRead.objects.filter(item_kind=ItemKind.NOTES).exists()
    assert MemoryRead.objects.filter(item_ref=other.pk).exists()


def test_export_includes_reads(api, alice, bob, svc, setup):
    _read(setup["mine"][0].pk, principal=svc, run_ref="run_x", run_generation=2)
    _read(UserMemoryFactory(owner=bob).pk, principal=svc)  # bob's: never in alice's export
    body = api(alice).get("/api/users/me/export").json()
    items = body["reads"]["items"]
    assert [(r["item"], r["principal"], r["run_id"], r["run_generation"]) for r in items] == [
        (setup["mine"][0].pk, "svc", "run_x", 2)
    ]
    assert body["reads"]["retention_days"] == 90
    # Import accepts the file back and ignores its reads.
    assert api(alice).post("/api/users/me/import", body, format="json").status_code == 200


def test_retention_purge_deletes_old_reads_only(alice, setup, settings):
    settings.MEMORY_READS_RETENTION_DAYS = 90
    old = _read(setup["mine"][0].pk)
    MemoryRead.objects.filter(pk=old.pk).update(at=timezone.now() - timedelta(days=91))
    recent = _read(setup["mine"][0].pk)
    assert reads_purge() == 1
    assert list(MemoryRead.objects.values_list("pk", flat=True)) == [recent.pk]


@pytest.mark.parametrize("background", [True, False])
@pytest.mark.django_db(transaction=True)  # the writer thread's connection sees only committed rows
def test_a_requests_reads_are_written_by_the_writer_thread_not_the_requests(
    run_api, make_run, svc, alice, settings, monkeypatch, background
):
    """With keep-alive the server reads a connection's next request on the thread that answered
    the last one, after ``request_finished``: the INSERT must not be on that thread."""
    settings.MEMORY_READS_IN_BACKGROUND = background
    writers: list[str] = []
    plain = recorder.flush

    def spied(**kwargs):
        written = plain(**kwargs)
        if written:
            writers.append(threading.current_thread().name)
        return written

    monkeypatch.setattr(recorder, "flush", spied)
    conversation = thread_services.conversation_create(actor=svc, username="alice", title="Trip")
    sent = thread_services.message_create(
        actor=svc, conversation_id=conversation.pk, role="user", content="Book the Lisbon flight with TAP"
    )
    handle = make_run(alice)
    try:
        for _ in range(3):
            found = run_api(handle.token).post(
                f"/api/runs/{handle.id}/tools/search_thread_messages", {"query": "Lisbon flight"}, format="json"
            )
            assert found.status_code == 200 and found.json()["results"], found.content
        assert recorder.writer.wait_idle(10)
    finally:
        assert recorder.writer.close_connection(10)
    rows = _reads(item_kind=ItemKind.MESSAGE)
    assert [(r.path, r.item_ref, r.run_ref) for r in rows] == [(ReadPath.HISTORY_SEARCH, str(sent.pk), handle.id)] * 3
    assert recorder.pending() == 0
    if background:
        assert writers and set(writers) == {"memory-reads-writer"}
    else:
        assert writers == [threading.current_thread().name] * 3


@pytest.mark.django_db(transaction=True)
def test_the_writer_thread_survives_a_failed_write_and_writes_the_next_rows(alice, settings, monkeypatch):
    before = _dropped("dropped_error")
    calls = []
    plain = recorder.flush

    def broken_once(**kwargs):
        calls.append(1)
        if len(calls) == 1:
            recorder.discard()
            raise RuntimeError("not a database error")
        return plain(**kwargs)

    monkeypatch.setattr(recorder, "flush", broken_once)
    try:
        recorder.record(item_kind=ItemKind.MEMORY, refs=["lost"], path=ReadPath.API_SEARCH, user_id=alice.pk)
        recorder.writer.wake()
        assert recorder.writer.wait_idle(10)
        recorder.record(item_kind=ItemKind.MEMORY, refs=["kept"], path=ReadPath.API_SEARCH, user_id=alice.pk)
        recorder.writer.wake()
        assert recorder.writer.wait_idle(10)
    finally:
        assert recorder.writer.close_connection(10)
    assert [r.item_ref for r in _reads()] == ["kept"]
    assert len(calls) >= 2 and _dropped("dropped_error") == before


@pytest.mark.django_db(transaction=True)
def test_an_exiting_process_writes_the_writers_batch_and_the_buffer(alice, monkeypatch):
    """The exit handler waits for the batch the writer holds (out of the buffer already; a daemon
    thread is stopped, uncommitted, after the exit handlers), then writes the rest."""
    holding = threading.Event()
    plain = MemoryRead.objects.bulk_create

    def slow_on_the_writer(objs, *args, **kwargs):
        if threading.current_thread().name == "memory-reads-writer":
            holding.set()
            time.sleep(0.5)
        return plain(objs, *args, **kwargs)

    monkeypatch.setattr(MemoryRead.objects, "bulk_create", slow_on_the_writer)
    try:
        recorder.record(item_kind=ItemKind.MEMORY, refs=["held"], path=ReadPath.API_SEARCH, user_id=alice.pk)
        recorder.writer.wake()
        assert holding.wait(10)
        recorder.record(item_kind=ItemKind.MEMORY, refs=["buffered"], path=ReadPath.API_SEARCH, user_id=alice.pk)
        assert recorder.flush_at_exit() == 1
        assert sorted(r.item_ref for r in _reads()) == ["buffered", "held"]
    finally:
        assert recorder.writer.close_connection(10)


def test_a_write_that_fails_outside_the_database_is_counted_and_never_raises(alice, monkeypatch):
    before = _dropped("dropped_error")

    def broken(*args, **kwargs):
        raise TypeError("not a database error")

    monkeypatch.setattr(MemoryRead.objects, "bulk_create", broken)
    recorder.record(item_kind=ItemKind.MEMORY, refs=["x", "y"], path=ReadPath.API_SEARCH, user_id=alice.pk)
    assert recorder.flush() == 0
    assert _dropped("dropped_error") - before == 2 and recorder.pending() == 0


def test_a_full_buffer_drops_and_counts_and_the_request_still_answers(run_api, make_run, alice, setup, settings):
    settings.MEMORY_READS_BUFFER = 2
    before = _dropped("dropped_full")
    recorder.record(item_kind=ItemKind.MEMORY, refs=["a", "b", "c", "d", "e"], path=ReadPath.API_SEARCH, user_id=None)
    assert recorder.pending() == 2 and _dropped("dropped_full") - before == 3
    handle = make_run(alice)
    response = run_api(handle.token).get(f"/api/runs/{handle.id}/context")  # notes + identity: buffer full
    assert response.status_code == 200 and response.json()["identity_injected"] is True
    assert _dropped("dropped_full") - before > 3


def test_a_failed_write_is_counted_and_never_raises(alice, settings):
    before = _dropped("dropped_error")
    recorder.record(item_kind="memory", refs=["x"], path="p" * 50, user_id=alice.pk)  # too long for its column
    recorder.record(item_kind="memory", refs=["y"], path=ReadPath.API_SEARCH, user_id=alice.pk)
    written = recorder.flush()
    # SQLite does not enforce lengths: there both rows are written; PostgreSQL refuses the batch.
    assert written in (0, 2) and _dropped("dropped_error") - before == 2 - written


def test_item_page_shows_last_use_and_the_reads_log(client, alice, svc, setup):
    own = setup["mine"][0]
    _read(own.pk, principal=svc, run_ref="run_gone")
    client.force_login(alice)
    page = client.get(f"/memory/items/{own.pk}/").content.decode()
    assert "Last used by svc" in page and "another person" in page
    log = client.get("/memory/reads/", {"source": "user"})
    assert log.status_code == 200 and own.content in log.content.decode()
    assert client.get("/memory/reads/", {"source": "chat:milky:private:99999"}).status_code == 404


def test_project_reads_show_members_that_agents_read_it_and_who_only_to_author_owners_and_the_reader(
    api, alice, bob, svc, setup
):
    """Every member sees when the project's agents read one of its memories; which member's agent
    it was (principal, API key, run) only the memory's author, the project's owners and admins,
    and the member whose own run read it."""
    project = setup["project"]
    carol, dave = UserFactory(username="carol"), UserFactory(username="dave")
    MembershipFactory(project=project, user=carol, role=Role.VIEWER)
    MembershipFactory(project=project, user=dave, role=Role.MEMBER)
    memory = memory_services.memory_create(
        actor=dave, tier="project", project_id=project.pk, kind="decision", content="Apollo ships on Fridays."
    )
    runtime, _ = token_issue(user=svc, name="runtime-eu")
    _read(memory.pk, principal=svc, token=runtime, user=bob, run_ref="run-of-bob", run_generation=2)
    _read(memory.pk, principal=svc, token=runtime, user=carol, run_ref="run-of-carol", run_generation=1)
    source = {"source": f"project:{project.pk}"}

    def reads_seen_by(user) -> dict:
        rows = api(user).get("/api/users/me/memory-home/reads", source).json()["results"]
        rows = [r for r in rows if r["item"] == memory.pk]
        assert len(rows) == 2 and all(r["at"] and r["path"] == ReadPath.API_SEARCH for r in rows)
        return {r["run_id"]: r for r in rows}

    hidden = {"principal": None, "token_name": None, "run_id": None, "run_generation": None, "details_hidden": True}
    for who in (alice, dave):  # the owner, the author: everything
        seen = reads_seen_by(who)
        assert set(seen) == {"run-of-bob", "run-of-carol"}
        assert {(r["principal"], r["token_name"], r["details_hidden"]) for r in seen.values()} == {
            ("svc", "runtime-eu", False)
        }
    for who, own_run in ((bob, "run-of-bob"), (carol, "run-of-carol")):  # a member, a viewer
        seen = reads_seen_by(who)
        assert set(seen) == {own_run, None}
        assert seen[own_run]["principal"] == "svc" and seen[own_run]["details_hidden"] is False
        assert {k: seen[None][k] for k in hidden} == hidden
    # The item's last read (carol's run's), and the export, by the same rule.
    last = api(bob).get(f"/api/users/me/memory-home/items/{memory.pk}").json()["last_read"]
    assert {k: last[k] for k in hidden} == hidden
    assert (
        api(carol).get(f"/api/users/me/memory-home/items/{memory.pk}").json()["last_read"]["run_id"] == "run-of-carol"
    )
    exported = json.dumps(api(carol).get("/api/users/me/export").json())
    assert "run-of-carol" in exported and "run-of-bob" not in exported and "runtime-eu" in exported
    assert "run-of-bob" not in api(carol).get("/api/users/me/export/markdown").content.decode()


def test_a_shared_item_s_reads_by_other_people_s_agents_show_when_and_how_never_whose(api, alice, bob, svc):
    """A global item first said in alice's chat is read by everyone's agents: alice sees that it
    was read, not by whom, through which key or in which run; bob sees his own reads whole."""
    shared = GlobalMemoryFactory(content="Deploys happen on Fridays", source_chat_key="milky:private:777")
    ChatBindingFactory(chat_key="milky:private:777", user=alice)
    runtime, _ = token_issue(user=svc, name="runtime-eu")
    _read(shared.pk, principal=svc, token=runtime, user=bob, run_ref="run-of-bob", run_generation=1)
    _read(shared.pk, principal=alice, user=alice)
    rows = api(alice).get("/api/users/me/memory-home/reads", {"source": "shared"}).json()["results"]
    assert len(rows) == 2
    others = [r for r in rows if r["details_hidden"]]
    assert len(others) == 1 and others[0]["at"] and others[0]["path"] == ReadPath.API_SEARCH
    assert {k: others[0][k] for k in ("principal", "token_name", "run_id", "run_generation")} == dict.fromkeys(
        ("principal", "token_name", "run_id", "run_generation")
    )
    assert [r["principal"] for r in rows if not r["details_hidden"]] == ["alice"]
    body = json.dumps(rows) + json.dumps(api(alice).get("/api/users/me/export").json())
    body += api(alice).get("/api/users/me/export/markdown").content.decode()
    assert "run-of-bob" not in body and "runtime-eu" not in body and '"bob"' not in body
    last = api(alice).get(f"/api/users/me/memory-home/items/{shared.pk}").json()["last_read"]
    assert last["principal"] == "alice" or last["details_hidden"] is True
