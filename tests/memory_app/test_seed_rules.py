"""The seeds' rules that a one-line change could break without another test noticing.

Each test here fails when one of those lines goes, and pins it by behaviour (what a tool, the
context or a service answers; for the publish, the system calls it makes), never by asserting a
constant: the numbers of the history and notes-file budgets, the run row lock of
``remember_memory``, the scoped section for top-level runs only, a run's thread belonging to its
user, the publish's flags and fsyncs, a chat bound to nobody out of a limited token's reach, a
session's dreaming keeping to its own scope, contact details leaving what goes to global, the
scope and active filter applied when search hits are loaded, and superseding a row that is no
longer active (its row lock and its conditional UPDATE, each alone).
"""

import json
import os
import stat
import threading
import time

import pytest
from django.db import connection, connections, transaction

from config.errors import Conflict, NotFound
from identity_app.authentication import ApiTokenAuthentication
from identity_app.chat_reach import _decide, chat_in_reach, chat_keys_reachable, chat_require_reach
from identity_app.permissions import TokenReach
from identity_app.services import token_issue
from memory_app.context.assembly import run_context_build as context_build
from memory_app.home.search import home_search
from memory_app.memories import services
from memory_app.memories.models import Memory, Status
from memory_app.memories.services import supersede
from memory_app.notes import workspace as workspace_module
from memory_app.notes.workspace import Workspace, WorkspaceWriteFailed
from memory_app.runs import tools
from memory_app.runs.models import AgentRun, RunStatus
from memory_app.scoped.consolidation import archive_duplicates, consolidate_text, dream_session, system_actor
from memory_app.scoped.context import scoped_items
from memory_app.scoped.models import MemoryCandidate
from memory_app.scoped.search import session_search
from memory_app.search.models import SearchDocument
from memory_app.threads import history
from memory_app.threads.models import Conversation, ToolCall
from tests.factories import ChatBindingFactory, ConversationFactory, MessageFactory, UserFactory, UserMemoryFactory
from tests.memory_app.runs.helpers import memory_path

CHAT_A = "milky:private:10001"
CHAT_B = "milky:private:20002"


# --- the numbers, by what the tools and the context answer ---------------------------------------
# docs/runs.md, History tools: search ≤ 10 hits of ≤ 512 bytes in ≤ 16 KiB; read ≤ 20 messages of
# ≤ 8 KiB, ≤ 32 KiB of content, ≤ 64 KiB response; tool calls ≤ 10 of ≤ 4 KiB, ≤ 16 KiB in all.
# Each test writes the seed's number itself (never the module's constant) and checks both sides:
# the budget is used up to its number, and not past it.


def _json_bytes(value) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode())


def _conversation_with(alice, texts: list[str]):
    conversation = ConversationFactory(owner=alice)
    messages = [MessageFactory(conversation=conversation, content=text) for text in texts]
    return conversation, messages


@pytest.mark.django_db
def test_history_search_answers_within_the_numbers(make_run, alice):
    handle = make_run(alice)
    _conversation_with(alice, [f"kiwi orchard report {index} " + "ü" * 2000 for index in range(14)])
    answer = tools.search_thread_messages(credential=handle.credential, query="kiwi orchard", limit=10)
    assert len(answer["results"]) == 10
    for hit in answer["results"]:
        assert 400 < len(hit["snippet"].encode()) <= 512
    assert len(json.dumps(answer, ensure_ascii=False).encode()) <= 16384


@pytest.mark.django_db
def test_history_search_never_answers_more_than_ten_hits_whatever_the_limit(alice):
    _conversation_with(alice, [f"kiwi orchard report {index}" for index in range(14)])
    for limit in (10, 11, 50, 10_000):
        assert len(history.history_search(user_id=alice.pk, query="kiwi orchard", limit=limit)["results"]) == 10


@pytest.mark.django_db
def test_history_search_response_stays_within_16_kib_when_escaping_grows_it(alice):
    # Control characters cost 6 bytes each in JSON: ten 512-byte snippets of them would be 30 KiB.
    _conversation_with(alice, [f"kiwi orchard {index} " + "\x01\x02" * 400 for index in range(12)])
    answer = history.history_search(user_id=alice.pk, query="kiwi orchard", limit=10)
    assert _json_bytes(answer) <= 16384
    assert answer["truncated"] is True and 0 < len(answer["results"]) < 10
    assert _json_bytes(answer) > 16384 - 3500  # hits are dropped one at a time, not all at once


@pytest.mark.django_db
def test_history_read_never_answers_more_than_twenty_messages_whatever_the_limit(alice):
    conversation, _ = _conversation_with(alice, [f"message {index}" for index in range(25)])
    for limit in (20, 21, 100, 10_000):
        answer = history.history_read(user_id=alice.pk, thread_id=conversation.pk, limit=limit)
        assert len(answer["messages"]) == 20 and answer["has_more"] is True


@pytest.mark.django_db
def test_history_read_cuts_each_message_to_8_kib_and_all_of_them_to_32_kib(alice):
    conversation, _ = _conversation_with(alice, ["é" * 6000 for _ in range(6)])  # 12 000 bytes each
    answer = history.history_read(user_id=alice.pk, thread_id=conversation.pk)
    sizes = [len(message["content"].encode()) for message in answer["messages"]]
    assert all(size <= 8192 for size in sizes)
    assert sizes[0] > 8000  # the first message gets its whole 8 KiB
    assert 32768 - 8192 < sum(sizes) <= 32768
    assert all(message["truncated"] for message in answer["messages"]) and answer["truncated"]
    assert "\ufffd" not in "".join(message["content"] for message in answer["messages"])


@pytest.mark.django_db
def test_history_read_response_stays_within_64_kib_when_escaping_grows_it(alice):
    conversation, _ = _conversation_with(alice, ["\x01" * 8000 for _ in range(6)])  # 48 KiB in JSON each
    answer = history.history_read(user_id=alice.pk, thread_id=conversation.pk)
    assert 65536 - 49152 < _json_bytes(answer) <= 65536
    assert answer["truncated"] is True and answer["has_more"] is True


@pytest.mark.django_db
def test_history_read_shows_at_most_ten_tool_calls_of_4_kib_and_16_kib_in_all(alice):
    conversation, messages = _conversation_with(alice, [f"step {index}" for index in range(3)])
    for index in range(15):  # small calls: the budgets alone would let all fifteen through
        ToolCall.objects.create(
            message=messages[1], conversation=conversation, name=f"tool{index}", output="ok", status="ok"
        )
    answer = history.history_read(user_id=alice.pk, thread_id=conversation.pk, include_tools=True)
    assert [call["name"] for call in answer["tool_calls"]] == [f"│ tool{index}" for index in range(10)]
    ToolCall.objects.all().delete()
    for index in range(8):
        ToolCall.objects.create(
            message=messages[1], conversation=conversation, name=f"big{index}", output="x" * 9000, status="ok"
        )
    calls = history.history_read(user_id=alice.pk, thread_id=conversation.pk, include_tools=True)["tool_calls"]
    sizes = [_json_bytes(call) for call in calls]
    assert all(4096 - 200 < size <= 4096 for size in sizes)  # each cut to its 4 KiB, not less
    assert len(calls) == 4 and sum(sizes) <= 16384  # four of 4 KiB fill the 16 KiB


# The notes file: at most 24 KiB of it reaches the context; remember_memory takes content and
# replaces of at most 4 KiB, and keeps the file at most 128 KiB.
def _memory_block_content(section: str) -> str:
    """The data lines of a low-trust block: what of the file the agent is shown."""
    lines = [line for line in section.splitlines() if line.startswith("│ ")]
    return "\n".join(lines)


@pytest.mark.django_db
@pytest.mark.parametrize("filler", ["a", "é", "表", "😀"])
def test_memory_file_in_context_is_cut_to_24_kib_on_a_character_boundary(make_run, alice, workspace_root, filler):
    path = memory_path(workspace_root, alice)
    path.parent.mkdir(parents=True)
    path.write_text("x" + filler * (100_000 // len(filler.encode())), encoding="utf-8")
    handle = make_run(alice)
    context = context_build(credential=handle.credential)
    [memory] = [section for section in context["sections"] if section["name"] == "memory"]
    shown = _memory_block_content(memory["content"])
    assert 24576 - 64 < len(shown.encode()) <= 24576
    assert shown.endswith("…[truncated]") and "\ufffd" not in shown


@pytest.mark.django_db
def test_memory_file_cut_never_shows_a_broken_character_after_neutralizing_shrinks_it(make_run, alice, workspace_root):
    """Look-alikes of a frame delimiter become a short marker, so what is left of a file read up to
    its limit may fit whole: the character the read limit split must not show as U+FFFD."""
    lookalike = "<<<" + "a" * 30 + " DATA " + "b" * 60 + ">>>"  # 102 bytes → "[marker removed]"
    head = lookalike * 200 + "x"  # 20 401 bytes: the é that follows straddle the read limit (24 580)
    body = head + "é" * 5000
    path = memory_path(workspace_root, alice)
    path.parent.mkdir(parents=True)
    path.write_text(body, encoding="utf-8")
    handle = make_run(alice)
    [memory] = [s for s in context_build(credential=handle.credential)["sections"] if s["name"] == "memory"]
    shown = _memory_block_content(memory["content"])
    assert shown.endswith("…[truncated]")
    assert "\ufffd" not in shown


@pytest.mark.django_db
def test_remember_memory_takes_4_kib_and_refuses_a_byte_more(make_run, alice, workspace_root):
    handle = make_run(alice)
    assert tools.remember_memory(credential=handle.credential, content="é" * 2048)["result"] == "appended"
    with pytest.raises(tools.DomainError) as refused:
        tools.remember_memory(credential=handle.credential, content="é" * 2048 + "x")
    assert refused.value.code == "too_large"
    with pytest.raises(tools.DomainError) as refused:
        tools.remember_memory(credential=handle.credential, content="new", replaces="é" * 2048 + "x")
    assert refused.value.code == "too_large"
    before = memory_path(workspace_root, alice).read_bytes()
    answer = tools.remember_memory(credential=handle.credential, content="short", replaces="é" * 2048)
    assert answer["result"] == "replaced"
    assert memory_path(workspace_root, alice).read_bytes() != before


@pytest.mark.django_db
def test_remember_memory_keeps_the_file_within_128_kib(make_run, alice, workspace_root):
    path = memory_path(workspace_root, alice)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"x" * (131072 - 100) + b"\n")
    handle = make_run(alice)
    assert tools.remember_memory(credential=handle.credential, content="y" * 90)["result"] == "appended"
    assert len(path.read_bytes()) <= 131072
    before = path.read_bytes()
    with pytest.raises(tools.DomainError) as refused:
        tools.remember_memory(credential=handle.credential, content="z" * 200)
    assert refused.value.code == "memory_file_too_large"
    assert path.read_bytes() == before
    path.write_bytes(b"x" * 131073)  # a source over the cap is refused too
    with pytest.raises(tools.DomainError) as refused:
        tools.remember_memory(credential=handle.credential, content="z")
    assert refused.value.code == "memory_file_too_large"


def _wait_until_a_backend_waits_for_a_lock(seconds: float = 30) -> bool:
    """True once another connection to this test database waits for a lock (PostgreSQL's
    ``pg_stat_activity``): the event the lock tests wait for, instead of a fixed sleep."""
    deadline = time.monotonic() + seconds
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
            )
            if cursor.fetchone()[0]:
                return True
            time.sleep(0.01)
    return False


# --- the run row lock of remember_memory ------------------------------------------------------
@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_remember_waits_for_the_run_row_and_sees_it_finished(make_run, alice, workspace_root):
    """A finish holding the run's row lock when remember_memory starts: the write waits for it,
    reads the run again and refuses. Without the row lock it would read the run as still
    running and write."""
    handle = make_run(alice)
    locked, release = threading.Event(), threading.Event()

    def finisher():
        try:
            with transaction.atomic():
                AgentRun.objects.select_for_update().filter(pk=handle.id).update(status=RunStatus.COMPLETED)
                locked.set()
                release.wait(timeout=30)
        finally:
            connections.close_all()

    outcome = {}

    def writer():
        try:
            outcome["result"] = tools.remember_memory(credential=handle.credential, content="a fact never saved")
        except tools.DomainError as exc:
            outcome["error"] = exc.code
        finally:
            connections.close_all()

    first = threading.Thread(target=finisher)
    first.start()
    assert locked.wait(timeout=30)
    second = threading.Thread(target=writer)
    second.start()
    assert _wait_until_a_backend_waits_for_a_lock(), "remember_memory did not wait for the run's row lock"
    assert second.is_alive()
    release.set()
    first.join(timeout=30)
    second.join(timeout=30)
    assert outcome == {"error": "run_not_running"}
    assert not memory_path(workspace_root, alice).exists()


# --- dreaming keeps away from global items ----------------------------------------------------
@pytest.mark.django_db
def test_dreaming_a_chat_session_never_archives_global_duplicates(svc):
    owner = UserFactory()
    older = services.memory_create(actor=svc, tier="global", kind="procedure", content="Restart the bot nightly")
    newer = services.memory_create(actor=svc, tier="global", kind="procedure", content="restart the bot nightly.")
    conversation = ConversationFactory(owner=owner, session_key=CHAT_A)
    MessageFactory(conversation=conversation, content="hello there")
    report = dream_session(actor=system_actor(), session_id=CHAT_A)
    assert report.archived == []
    assert set(Memory.objects.filter(pk__in=[older.pk, newer.pk]).values_list("status", flat=True)) == {Status.ACTIVE}


# --- loading search hits applies the scope and the active filter ------------------------------
def _stale(memory: Memory, **changes) -> None:
    """Change the row behind the index's back: its search document still says what it was."""
    Memory.objects.filter(pk=memory.pk).update(**changes)
    assert SearchDocument.objects.filter(ref=memory.pk).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("change", [{"status": Status.ARCHIVED}, {"status": Status.SUPERSEDED}, {"scope_id": CHAT_B}])
def test_scoped_search_never_loads_an_inactive_or_moved_hit(svc, change):
    kept = services.memory_create(actor=svc, tier="chat", scope_id=CHAT_A, kind="fact", content="zebra crossing north")
    gone = services.memory_create(actor=svc, tier="chat", scope_id=CHAT_A, kind="fact", content="zebra crossing south")
    _stale(gone, **change)
    found = {hit.id for hit in session_search(session_id=CHAT_A, query="zebra crossing", limit=10, mode="fts")}
    assert found == {kept.pk}


@pytest.mark.django_db
@pytest.mark.parametrize("status", [Status.ARCHIVED, Status.SUPERSEDED])
def test_home_search_never_loads_an_inactive_hit(alice, status):
    kept = UserMemoryFactory(owner=alice, content="zebra crossing north")
    gone = UserMemoryFactory(owner=alice, content="zebra crossing south")
    _stale(gone, status=status)
    assert {hit.memory.pk for hit in home_search(user=alice, query="zebra crossing").hits} == {kept.pk}


# --- superseding a row that is not active -----------------------------------------------------
@pytest.mark.django_db
@pytest.mark.parametrize("status", [Status.ARCHIVED, Status.SUPERSEDED])
def test_superseding_a_memory_that_is_not_active_is_409_and_changes_nothing(api, alice, status):
    memory = UserMemoryFactory(owner=alice, content="old words")
    Memory.objects.filter(pk=memory.pk).update(status=status)
    before = list(Memory.objects.order_by("pk").values_list("pk", "status", "content", "superseded_by"))
    for path in (
        f"/api/users/me/memories/{memory.pk}/supersede",
        f"/api/users/me/memory-home/items/{memory.pk}/supersede",
    ):
        response = api(alice).post(path, {"content": "new words"}, format="json")
        assert response.status_code == 409, (path, response.content)
        assert response.json()["error"]["code"] == "not_active"
        assert f"Memory is {status}" in response.json()["error"]["message"]
    with pytest.raises(Conflict):
        services.memory_supersede(actor=alice, memory_id=memory.pk, content="new words")
    assert list(Memory.objects.order_by("pk").values_list("pk", "status", "content", "superseded_by")) == before


@pytest.mark.django_db
def test_superseding_an_archived_chat_item_is_409(svc):
    item = services.memory_create(actor=svc, tier="chat", scope_id=CHAT_A, kind="fact", content="old")
    services.memory_archive(actor=svc, memory_id=item.pk)
    with pytest.raises(Conflict) as caught:
        services.memory_supersede(actor=svc, memory_id=item.pk, content="new")
    assert caught.value.code == "not_active" and "archived" in str(caught.value)
    assert Memory.objects.count() == 1


# --- the scoped section: top-level runs only ----------------------------------------------------
@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["subagent", "coordinator", "checkpoint", "chat_with_a_parent"])
def test_the_scoped_section_reaches_no_run_but_a_top_level_one(make_run, alice, svc, kind):
    services.memory_create(actor=svc, tier="chat", scope_id=CHAT_A, kind="fact", content="zebra crossing north")
    top = make_run(alice, session_key=CHAT_A)
    text, ids = scoped_items(run=top.run, query="zebra crossing")
    assert ids and "zebra crossing north" in text  # the positive case: the gate lets it through
    if kind == "chat_with_a_parent":  # no service makes one; a row changed behind their back
        other = make_run(alice, conversation=top.run.conversation, request_id="req-2")
        AgentRun.objects.filter(pk=other.id).update(parent_run=top.run)
        other.run.refresh_from_db()
    else:
        other = make_run(alice, kind=kind, conversation=top.run.conversation, parent=top.run, request_id="req-2")
    assert scoped_items(run=other.run, query="zebra crossing") == (None, [])
    assert scoped_items(run=other.run, query="zebra crossing")[0] is None


# --- a run's thread belongs to the run's user ------------------------------------------------------
@pytest.mark.django_db
def test_a_run_whose_thread_belongs_to_another_user_gets_no_memory_tool(make_run, alice, bob, workspace_root):
    handle = make_run(alice)
    MessageFactory(conversation=ConversationFactory(owner=alice), content="kiwi orchard")
    Conversation.objects.filter(pk=handle.run.conversation_id).update(owner=bob)  # behind the services' back
    calls = [
        lambda: tools.remember_memory(credential=handle.credential, content="a fact never saved"),
        lambda: tools.search_thread_messages(credential=handle.credential, query="kiwi orchard"),
        lambda: tools.read_thread_messages(credential=handle.credential, thread_id=handle.run.conversation_id),
    ]
    for call in calls:
        with pytest.raises(tools.DomainError) as refused:
            call()
        assert refused.value.code == "run_context_mismatch"
    assert not memory_path(workspace_root, alice).exists()
    assert not memory_path(workspace_root, bob).exists()


# --- the publish: O_EXCL | O_NOFOLLOW temp file, fsync, rename, fsync of the directory ------------
def _spy_on_publish(monkeypatch) -> list[tuple]:
    """Record the temp file's open flags and the order of fsyncs and the rename (each call still
    goes to the real function)."""
    events: list[tuple] = []
    real_open, real_fsync, real_rename = os.open, os.fsync, os.rename

    def spy_open(path, flags, mode=0o777, *, dir_fd=None):
        fd = real_open(path, flags, mode, dir_fd=dir_fd)
        events.append(("open", str(path), flags))
        return fd

    def spy_fsync(fd):
        info = os.fstat(fd)
        events.append(("fsync", "dir" if stat.S_ISDIR(info.st_mode) else "file", info.st_ino))
        return real_fsync(fd)

    def spy_rename(src, dst, *, src_dir_fd=None, dst_dir_fd=None):
        events.append(("rename", str(src), str(dst)))
        return real_rename(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    monkeypatch.setattr(os, "open", spy_open)
    monkeypatch.setattr(os, "fsync", spy_fsync)
    monkeypatch.setattr(os, "rename", spy_rename)
    return events


def test_publish_opens_its_temp_file_exclusively_without_following_links(workspace_root, monkeypatch):
    events = _spy_on_publish(monkeypatch)
    Workspace(7).replace_authorized_file("MEMORY.md", b"- first note\n")
    [(_, name, flags)] = [e for e in events if e[0] == "open" and e[1].endswith(".tmp")]
    assert name.startswith(".MEMORY.md.")
    for flag in (os.O_CREAT, os.O_EXCL, os.O_NOFOLLOW, os.O_WRONLY):
        assert flags & flag == flag, f"flag {flag:#o} missing from {flags:#o}"


def test_publish_fsyncs_the_file_then_renames_then_fsyncs_the_directory(workspace_root, monkeypatch):
    Workspace(7).replace_authorized_file("MEMORY.md", b"- first note\n")  # the folder exists
    agents = memory_path(workspace_root, type("U", (), {"pk": 7})).parent
    events = _spy_on_publish(monkeypatch)
    Workspace(7).replace_authorized_file("MEMORY.md", b"- first note\n- second note\n")
    steps = [e for e in events if e[0] in ("fsync", "rename")]
    assert [e[:2] for e in steps] == [("fsync", "file"), ("rename", steps[1][1]), ("fsync", "dir")]
    assert steps[1][2] == "MEMORY.md" and steps[2][2] == agents.stat().st_ino
    assert (agents / "MEMORY.md").read_bytes() == b"- first note\n- second note\n"


def test_publish_refuses_a_link_planted_at_its_temp_name_and_writes_nothing_through_it(
    workspace_root, tmp_path, monkeypatch
):
    Workspace(7).replace_authorized_file("MEMORY.md", b"- old\n")
    agents = memory_path(workspace_root, type("U", (), {"pk": 7})).parent
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"untouched")
    monkeypatch.setattr(workspace_module.secrets, "token_hex", lambda n=8: "feedfacefeedface")
    (agents / ".MEMORY.md.feedfacefeedface.tmp").symlink_to(outside)
    with pytest.raises(WorkspaceWriteFailed):
        Workspace(7).replace_authorized_file("MEMORY.md", b"- new\n")
    assert outside.read_bytes() == b"untouched"
    assert (agents / "MEMORY.md").read_bytes() == b"- old\n"
    assert (agents / ".MEMORY.md.feedfacefeedface.tmp").is_symlink()


# --- a chat bound to nobody is out of every limited token's reach ---------------------------------
@pytest.mark.django_db
@pytest.mark.parametrize("limits", [{"only_users": ["alice"]}, {"only_projects": "project"}])
def test_a_limited_token_reaches_no_chat_bound_to_nobody(alice, svc, project, limits, rf):
    ChatBindingFactory(chat_key=CHAT_A, user=alice)
    unbound, group = "milky:private:30003", "milky:group:40004"
    if limits.get("only_projects"):
        limits = {"only_projects": [project.pk]}
    token, key = token_issue(user=svc, **limits)
    request = rf.get("/", HTTP_AUTHORIZATION=f"Token {key}")
    actor, _ = ApiTokenAuthentication().authenticate(request)
    for chat in (unbound, group):
        assert not chat_in_reach(actor=actor, chat_key=chat)
        with pytest.raises(NotFound):
            chat_require_reach(actor=actor, session_key=chat)
    reachable = chat_keys_reachable(actor=actor)
    assert reachable is not None
    assert not {unbound, group} & {row["chat_key"] for row in reachable}
    # The rule holds for any limited token, whatever its limits name.
    assert not _decide(
        bound_to=None, actor_id=svc.pk, service=True, reach=TokenReach(token.pk, None, None), acting_for_id=None
    )


# --- consolidation: archiving pinned to the dreamed scope; no contact details for global -----------
@pytest.mark.django_db
def test_archiving_duplicates_never_touches_a_row_moved_to_another_chat_meanwhile(svc, monkeypatch):
    older = services.memory_create(actor=svc, tier="chat", scope_id=CHAT_A, kind="fact", content="Restart nightly")
    services.memory_create(actor=svc, tier="chat", scope_id=CHAT_A, kind="fact", content="restart nightly.")
    archive = services.memory_archive

    def moved_first(**kwargs):
        # A scope migration commits between the scan and the archive.
        Memory.objects.filter(pk=kwargs["memory_id"]).update(scope_id=CHAT_B)
        return archive(**kwargs)

    monkeypatch.setattr(services, "memory_archive", moved_first)
    try:
        archived = archive_duplicates(actor=system_actor(), scope=("chat", CHAT_A))
    except NotFound:
        archived = []
    assert archived == []
    assert Memory.objects.filter(pk=older.pk).values_list("scope_id", "status").get() == (CHAT_B, Status.ACTIVE)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("session", "text", "kept"),
    [
        ("milky:10001", "We use ops-team@example.com for alerts.", False),  # legacy: global
        (CHAT_A, "We decided to page ops-team@example.com for outages.", False),  # waits for global
        (CHAT_A, "We use ops-team@example.com for alerts.", True),  # stays in its chat
    ],
)
def test_contact_details_leave_what_consolidation_sends_to_global(svc, settings, session, text, kept):
    settings.MEMORY_CHAT_TO_GLOBAL = "review"
    consolidate_text(actor=svc, session_id=session, text=text, source="consolidate")
    [candidate] = MemoryCandidate.objects.all()
    [memory] = Memory.objects.all()
    for stored in (candidate.content, memory.content, json.dumps(candidate.evidence), json.dumps(memory.evidence)):
        assert ("ops-team@example.com" in stored) is kept or (not kept and "ops-team@example.com" not in stored)
    assert ("ops-team@example.com" in memory.content) is kept
    if not kept:
        assert "[REDACTED:email]" in memory.content


# --- supersede: the row lock and the conditional UPDATE, each alone (PostgreSQL) -------------------
def _hold_row_while(memory_id: str, locked: threading.Event, release: threading.Event) -> None:
    """Another transaction supersedes the row and holds its lock until ``release``."""
    try:
        with transaction.atomic():
            Memory.objects.select_for_update().filter(pk=memory_id).update(status=Status.SUPERSEDED)
            locked.set()
            release.wait(timeout=30)
    finally:
        connections.close_all()


def _supersede_in_thread(alice, memory_id: str, outcome: dict, statements: list[str]) -> None:
    def record(execute, sql, params, many, context):
        statements.append(sql)
        return execute(sql, params, many, context)

    try:
        with connections["default"].execute_wrapper(record):
            outcome["new"] = services.memory_supersede(actor=alice, memory_id=memory_id, content="new words")
    except Conflict as exc:
        outcome["error"] = str(exc)
    finally:
        connections.close_all()


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_supersede_waits_for_the_row_lock_and_writes_nothing_when_the_row_changed(alice):
    """With the row lock, the second supersede reads the row only after the first commits, sees
    it superseded and inserts nothing. Without it, it would read the row as active and insert a
    new version (rolled back only by the conditional UPDATE)."""
    memory = UserMemoryFactory(owner=alice, content="old words")
    locked, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold_row_while, args=(memory.pk, locked, release))
    holder.start()
    assert locked.wait(timeout=30)
    outcome: dict = {}
    statements: list[str] = []
    second = threading.Thread(target=_supersede_in_thread, args=(alice, memory.pk, outcome, statements))
    second.start()
    assert _wait_until_a_backend_waits_for_a_lock(), "the supersede did not wait for the row"
    assert second.is_alive()
    release.set()
    holder.join(timeout=30)
    second.join(timeout=30)
    assert outcome == {"error": "Memory is superseded; only active memories can be superseded."}
    assert not [sql for sql in statements if sql.lstrip().upper().startswith("INSERT")]
    assert Memory.objects.count() == 1


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_supersede_conditional_update_alone_stops_a_second_winner(alice, monkeypatch):
    """The conditional UPDATE is the second guard: with the row read without its lock (as a path
    that forgot it would), a row superseded meanwhile still moves only once."""
    memory = UserMemoryFactory(owner=alice, content="old words")
    monkeypatch.setattr(
        supersede, "locked_memory", lambda *, memory_id, **_: Memory.objects.filter(pk=memory_id).first()
    )
    locked, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold_row_while, args=(memory.pk, locked, release))
    holder.start()
    assert locked.wait(timeout=30)
    outcome: dict = {}
    second = threading.Thread(target=_supersede_in_thread, args=(alice, memory.pk, outcome, []))
    second.start()
    assert _wait_until_a_backend_waits_for_a_lock()  # its conditional UPDATE waits for the row
    release.set()
    holder.join(timeout=30)
    second.join(timeout=30)
    assert outcome == {"error": "Memory was superseded concurrently."}
    assert list(Memory.objects.values_list("pk", "status", "superseded_by")) == [(memory.pk, Status.SUPERSEDED, None)]
