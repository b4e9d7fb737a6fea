"""The seeds' rules that a one-line change could break without another test noticing.

Each test here fails when one of those lines goes: the numbers of the history and context
budgets (the other tests read the same constants, so they would follow a changed number), the
run row lock of ``remember_memory``, a chat session's dreaming keeping away from global items,
the scope and active filter applied when search hits are loaded, and superseding a row that is
no longer active.
"""

import json
import threading
import time

import pytest
from django.db import connections, transaction

from memory_app.context import assembly
from memory_app.home.search import home_search
from memory_app.memories import services
from memory_app.memories.models import Memory, Status
from memory_app.runs import tools
from memory_app.runs.models import AgentRun, RunStatus
from memory_app.scoped.consolidation import dream_session, system_actor
from memory_app.scoped.search import session_search
from memory_app.search.models import SearchDocument
from memory_app.threads import history
from tests.factories import ConversationFactory, MessageFactory, UserFactory, UserMemoryFactory
from tests.memory_app.runs.helpers import memory_path

CHAT_A = "milky:private:10001"
CHAT_B = "milky:private:20002"


# --- the numbers ------------------------------------------------------------------------------
def test_history_tool_budgets_are_the_seeds_numbers():
    # docs/runs.md, History tools: search ≤ 10 hits of ≤ 512 bytes in ≤ 16 KiB; read ≤ 20
    # messages of ≤ 8 KiB, ≤ 32 KiB of content, ≤ 64 KiB response; tool calls ≤ 10 of ≤ 4 KiB,
    # ≤ 16 KiB in all.
    assert history.SEARCH_MAX_HITS == 10
    assert history.SEARCH_HIT_BYTES == 512
    assert history.SEARCH_RESPONSE_BYTES == 16384
    assert history.READ_MAX_MESSAGES == 20
    assert history.READ_MESSAGE_BYTES == 8192
    assert history.READ_CONTENT_BYTES == 32768
    assert history.READ_RESPONSE_BYTES == 65536
    assert history.READ_MAX_TOOL_CALLS == 10
    assert history.READ_TOOL_CALL_BYTES == 4096
    assert history.READ_TOOL_CALLS_BYTES == 16384


def test_notes_file_budgets_are_the_seeds_numbers():
    # MEMORY.md in context ≤ 24 KiB; remember_memory content/replaces ≤ 4 KiB; the file ≤ 128 KiB.
    assert assembly.MEMORY_CONTEXT_BYTES == 24576
    assert tools.REMEMBER_MAX_BYTES == 4096
    assert tools.MEMORY_FILE_MAX_BYTES == 131072


@pytest.mark.django_db
def test_history_search_answers_within_the_numbers(make_run, alice):
    handle = make_run(alice)
    conversation = ConversationFactory(owner=alice)
    for index in range(14):
        MessageFactory(conversation=conversation, content=f"kiwi orchard report {index} " + "ü" * 2000)
    answer = tools.search_thread_messages(credential=handle.credential, query="kiwi orchard", limit=10)
    assert len(answer["results"]) == 10
    for hit in answer["results"]:
        assert len(hit["snippet"].encode()) <= 512
    assert len(json.dumps(answer, ensure_ascii=False).encode()) <= 16384


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
    time.sleep(0.5)
    assert second.is_alive(), "remember_memory did not wait for the run's row lock"
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
    with pytest.raises(services.Conflict):
        services.memory_supersede(actor=alice, memory_id=memory.pk, content="new words")
    assert list(Memory.objects.order_by("pk").values_list("pk", "status", "content", "superseded_by")) == before


@pytest.mark.django_db
def test_superseding_an_archived_chat_item_is_409(svc):
    item = services.memory_create(actor=svc, tier="chat", scope_id=CHAT_A, kind="fact", content="old")
    services.memory_archive(actor=svc, memory_id=item.pk)
    with pytest.raises(services.Conflict) as caught:
        services.memory_supersede(actor=svc, memory_id=item.pk, content="new")
    assert caught.value.code == "not_active" and "archived" in str(caught.value)
    assert Memory.objects.count() == 1
