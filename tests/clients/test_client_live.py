"""The Python client (clients/python) against a live server: every method, the run lifecycle
and every error type. Real HTTP, real database, nothing mocked."""

import asyncio
import inspect
import threading
import time
import uuid

import memsvc
import pytest
from memsvc import AsyncClient, Client, _api

from tests.clients.conftest import SEARCH_RATE

CHAT = "milky:private:10001"


def unique(text: str) -> str:
    return f"{text} {uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def clients(live):
    made = {}

    def make(name: str, **kwargs) -> Client:
        key = (name, tuple(sorted(kwargs.items())))
        if key not in made:
            made[key] = Client(live.base, live.keys[name], **kwargs)
        return made[key]

    yield make
    for client in made.values():
        client.close()


@pytest.fixture
def alice(clients):
    return clients("alice")


@pytest.fixture
def svc(clients):
    return clients("svc")


# --- identity memories -----------------------------------------------------------------
def test_memories_add_list_iterate_correct_chain_forget(alice):
    added = [alice.add_memory(unique(f"fact {i}"), "fact", metadata={"i": i}) for i in range(5)]
    pref = alice.add_memory(unique("I like tea"), "preference")
    assert pref["kind"] == "preference" and pref["status"] == "active" and pref["origin"] == "api"

    page = alice.list_memories(kind="fact", page_size=2)
    assert page["count"] >= 5 and len(page["results"]) == 2 and page["next"]
    walked = list(alice.iter_memories(kind=["fact"], page_size=2))  # three pages at least
    assert {m["id"] for m in added} <= {m["id"] for m in walked}
    assert len(walked) == len({m["id"] for m in walked}) and all(m["kind"] == "fact" for m in walked)
    assert [m["id"] for m in alice.iter_memories(q=pref["content"].split()[-1])] == [pref["id"]]

    newer = alice.correct_memory(pref["id"], unique("I like green tea"))
    assert newer["kind"] == "preference" and alice.get_memory(pref["id"])["status"] == "superseded"
    chain = alice.memory_chain(newer)  # a memory dict is taken for its id too
    assert [m["id"] for m in chain["results"]] == [pref["id"], newer["id"]]
    assert alice.forget_memory(newer["id"]) is None
    for gone in (newer["id"], pref["id"]):  # the older version goes with it
        with pytest.raises(memsvc.NotFound):
            alice.get_memory(gone)


def test_project_memories(live, alice, clients):
    project = live.keys["project"]
    memory = alice.add_project_memory(project, unique("The API is versioned"), "convention")
    assert memory["project_id"] == project and memory["scope_type"] == "project"
    assert memory["id"] in {m["id"] for m in alice.iter_project_memories(project, kind="convention")}
    assert alice.list_project_memories(project, page_size=1)["count"] >= 1
    assert alice.get_project_memory(project, memory["id"])["content"] == memory["content"]
    newer = alice.correct_project_memory(project, memory["id"], unique("The API is versioned by path"))
    chain = alice.project_memory_chain(project, newer["id"])
    assert [m["id"] for m in chain["results"]] == [memory["id"], newer["id"]]
    with pytest.raises(memsvc.NotFound):  # bob is no member: the project does not exist for him
        clients("bob").list_project_memories(project)
    alice.forget_project_memory(project, newer["id"])
    with pytest.raises(memsvc.NotFound):
        alice.get_project_memory(project, newer["id"])


def test_home_search_export_and_idempotent_import(alice, clients):
    word = uuid.uuid4().hex[:10]
    memory = alice.add_memory(f"The deploy key rotates monthly {word}", "fact")
    found = alice.search_home(word, limit=5)
    assert found["query"] == word and memory["id"] in {hit["id"] for hit in found["results"]}

    exported = alice.export()
    assert exported["format"] == "memory-service-export"
    assert memory["content"] in {m["content"] for m in exported["memories"]["user"]}
    document = {
        "format": exported["format"],
        "version": exported["version"],
        "memories": {"user": [m for m in exported["memories"]["user"] if m["id"] == memory["id"]]},
    }
    carol = clients("carol")
    first = carol.import_export(document)
    assert len(first["created"]) == 1
    second = carol.import_export(document)  # the same file again changes nothing
    assert second["created"] == [] and second["duplicates"] == 1
    assert [m["content"] for m in carol.iter_memories(q=word)] == [memory["content"]]


# --- scoped items ---------------------------------------------------------------------
def test_scoped_items_search_and_consolidate(svc):
    word = uuid.uuid4().hex[:10]
    item = svc.add_item(f"The user prefers short answers {word}", "preference", session_id=CHAT)
    assert item["scope_type"] == "chat" and item["scope_id"] == CHAT
    again = svc.add_item(f"The user prefers short answers {word}", "preference", session_id=CHAT)
    assert again["id"] == item["id"]  # a duplicate is not written twice
    found = svc.search_items(word, CHAT, limit=5, mode="fts")
    assert found["mode"] == "fts" and [hit["id"] for hit in found["results"]] == [item["id"]]
    result = svc.consolidate(CHAT, [{"role": "user", "content": "Hello there."}])
    assert result["session_id"] == CHAT and isinstance(result["counts"], dict)


# --- conversations and messages -------------------------------------------------------
def test_conversations_and_messages(svc, alice):
    conversation = svc.create_conversation("alice", title=unique("Trip"), source="chat")
    assert conversation["owner"] == "alice" and conversation["status"] == "active"
    renamed = svc.update_conversation(conversation, title="Trip to Lisbon")
    assert (
        renamed["title"] == "Trip to Lisbon" and svc.get_conversation(conversation["id"])["title"] == "Trip to Lisbon"
    )
    assert conversation["id"] in {c["id"] for c in svc.iter_conversations(user="alice", page_size=1)}
    assert svc.list_conversations(user="alice", q="Lisbon")["count"] >= 1
    # Several fields of ``ordering`` go as one value (repeated, the server refuses it), and a
    # filter the list does not take is refused, not ignored.
    by_title = svc.list_conversations(user="alice", ordering=["title", "-created_at"], page_size=200)["results"]
    as_one = svc.list_conversations(user="alice", ordering="title,-created_at", page_size=200)["results"]
    assert [c["id"] for c in by_title] == [c["id"] for c in as_one] and len(by_title) >= 1
    with pytest.raises(memsvc.ValidationError) as misspelt:
        svc.list_conversations(usr="alice")
    assert misspelt.value.code == "unknown_parameter" and "usr" in misspelt.value.field_errors
    assert alice.get_conversation(conversation["id"])["id"] == conversation["id"]  # the owner reads it

    sent = [
        svc.add_message(conversation["id"], role, f"{role} says {i}")
        for i, role in enumerate(["user", "assistant"] * 3)
    ]
    assert sent[0]["role"] == "user" and sent[0]["tool_calls"] == []
    assert svc.get_message(conversation["id"], sent[1]["id"])["content"] == "assistant says 1"
    assert svc.list_messages(conversation["id"], page_size=2)["count"] == 6
    assert [m["id"] for m in svc.iter_messages(conversation["id"])] == [m["id"] for m in sent]


# --- runs -----------------------------------------------------------------------------
def test_run_lifecycle_renews_the_lease_and_finishes(svc):
    conversation = svc.create_conversation("alice", title="Run lifecycle")
    word = uuid.uuid4().hex[:10]
    with svc.run(conversation, worker_id="w1", lease_seconds=30, renew_every=0.5, prompt="hi") as run:
        first_expiry = run.lease_expires_at
        assert svc.get_run(run.id)["status"] == "running"
        run.add_message("user", f"Our release train leaves on Thursdays {word}")
        note = f"- Releases go out on Thursdays ({word})."
        assert run.remember(note)["result"] == "appended"
        assert run.remember(note)["result"] == "unchanged"
        assert run.remember(f"- Releases go out on Fridays ({word}).", replaces=note)["result"] == "replaced"
        context = run.context("When do releases go out?")
        memory = next(s for s in context["sections"] if s["name"] == "memory")
        assert f"Fridays ({word})" in memory["content"] and memory["trust"] == "low"
        assert {t["name"] for t in context["tools"]} >= {"remember_memory"}
        hits = run.search_history(word)
        assert hits["results"] and word in hits["results"][0]["snippet"]
        read = run.read_history(limit=5)
        assert [m["content"] for m in read["messages"]][-1].endswith(word)
        deadline = time.monotonic() + 10
        while run.renewals < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert run.renewals >= 2 and run.renew_error is None
        renewed = svc.get_run(run.id)["lease_expires_at"]
        assert renewed > first_expiry  # the background heartbeat moved the lease
    assert run.finished and svc.get_run(run.id)["status"] == "completed"
    assert not any(t.name == f"memsvc-lease-{run.id}" for t in threading.enumerate())


def test_an_exception_in_the_block_marks_the_run_failed_and_is_raised(svc):
    conversation = svc.create_conversation("alice", title="Failing run")
    with pytest.raises(RuntimeError, match="tool crashed"), svc.run(conversation, worker_id="w1") as run:
        run.context("anything")
        raise RuntimeError("tool crashed")
    assert svc.get_run(run.id)["status"] == "failed"


def test_a_second_worker_takes_over_after_the_lease_expires(svc):
    conversation = svc.create_conversation("alice", title="Take-over")
    first = svc.run(conversation, worker_id="w1", lease_seconds=5, renew_every=3600).open()  # w1 stalls
    with pytest.raises(memsvc.LeaseHeld) as held:
        svc.claim_run(first.id, worker_id="w2")
    assert held.value.status == 409 and held.value.code == "lease_held" and held.value.request_id
    time.sleep(5.2)
    with svc.claim(first.id, worker_id="w2", lease_seconds=30) as second:
        assert second.info["worker_id"] == "w2" and second.info["lease_generation"] == 2
        with pytest.raises(memsvc.LeaseLost):  # the old token no longer acts for the run
            first.remember("- written by a worker that lost its lease")
        with pytest.raises(memsvc.LeaseLost):
            first.__exit__(None, None, None)  # its normal exit cannot record an outcome
        assert second.remember("- written by the worker that holds the lease")["result"] == "appended"
    info = svc.get_run(first.id)
    assert (info["status"], info["worker_id"]) == ("completed", "w2")


def test_low_level_run_calls(svc):
    conversation = svc.create_conversation("alice", title="Low level")
    issued = svc.create_run("alice", conversation["id"], worker_id="w9", lease_seconds=10)
    assert issued["status"] == "running" and issued["run_token"]
    beat = svc.heartbeat(issued["id"], issued["run_token"], lease_seconds=20)
    assert beat["lease_expires_at"] > issued["lease_expires_at"]
    assert "sections" in svc.run_context(issued["id"], issued["run_token"], query="x", round=1)
    assert (
        svc.call_tool(issued["id"], issued["run_token"], "search_thread_messages", {"query": "releases"})["result"]
        == "ok"
    )
    assert issued["id"] in {r["id"] for r in svc.iter_runs(conversation=conversation["id"])}
    assert svc.list_runs(user="alice", page_size=1)["count"] >= 1
    done = svc.finish_run(issued["id"], issued["run_token"], "cancelled", usage={"duration_s": 1})
    assert done["status"] == "cancelled"
    with pytest.raises(memsvc.RunNotRunning):
        svc.run_context(issued["id"], issued["run_token"])


# --- errors ---------------------------------------------------------------------------
def test_error_types_carry_status_code_message_and_request_id(live, alice, clients, svc):
    memory = alice.add_memory(unique("private to alice"), "fact")
    with pytest.raises(memsvc.NotFound) as not_found:  # another user's memory: 404, not 403
        clients("bob").get_memory(memory["id"])
    error = not_found.value
    assert (error.status, error.code) == (404, "not_found") and error.message and error.request_id.startswith("memsvc-")

    with pytest.raises(memsvc.PermissionDenied) as denied:  # only service principals claim runs
        alice.claim_run("run_doesnotmatter", worker_id="w")
    assert denied.value.status == 403 and denied.value.code == "service_principal_required"
    assert memsvc.Forbidden is memsvc.PermissionDenied

    newer = alice.correct_memory(memory["id"], unique("corrected"))
    with pytest.raises(memsvc.Conflict) as conflict:
        alice.correct_memory(memory["id"], "again")
    assert conflict.value.status == 409 and conflict.value.code == "not_active"
    assert alice.get_memory(newer["id"])["status"] == "active"

    with pytest.raises(memsvc.ValidationError) as invalid:
        alice.add_memory("x", "opinion")
    assert invalid.value.status == 400 and "kind" in invalid.value.field_errors

    with pytest.raises(memsvc.PayloadTooLarge) as too_large:
        alice.add_memory("x" * (1024 * 1024 + 1), "fact")
    assert too_large.value.status == 413 and too_large.value.code == "payload_too_large"

    with pytest.raises(memsvc.AuthenticationFailed) as forged:
        Client(live.base, "forged-key").get_memory(memory["id"])
    assert forged.value.status == 401 and forged.value.request_id

    conversation = svc.create_conversation("alice", title="Conflicting replace")
    with svc.run(conversation, worker_id="w1") as run:
        with pytest.raises(memsvc.Conflict) as matches:  # replaces matching nothing: file untouched
            run.remember("- new", replaces=f"- not in the file {uuid.uuid4().hex}")
        assert matches.value.details == {"matches": "0"}


def test_rate_limited_carries_retry_after_and_the_client_waits_it_out(live):
    word = uuid.uuid4().hex[:10]
    impatient = Client(live.base, live.keys["throttled"], retry=memsvc.NO_RETRY)
    with pytest.raises(memsvc.RateLimited) as limited:
        for _ in range(SEARCH_RATE * 4):
            impatient.search_home(word)
    error = limited.value
    assert (error.status, error.code) == (429, "throttled") and error.retry_after == 1 and error.request_id

    patient = Client(live.base, live.keys["throttled"])
    started = time.monotonic()
    for _ in range(SEARCH_RATE * 2 + 1):  # more than two windows' worth: it must have waited
        assert patient.search_home(word)["query"] == word
    assert time.monotonic() - started >= 1

    stingy = Client(live.base, live.keys["throttled"], retry=memsvc.RetryPolicy(max_wait=0.5))
    with pytest.raises(memsvc.RateLimited):  # a Retry-After past the budget is raised at once
        for _ in range(SEARCH_RATE * 4):
            stingy.search_home(word)
    for client in (impatient, patient, stingy):
        client.close()


# --- the async client -------------------------------------------------------------------
def public_methods(cls) -> dict:
    return {name: member for name, member in inspect.getmembers(cls) if not name.startswith("_")}


def test_an_ordering_list_is_sent_as_one_value_and_an_empty_one_not_at_all():
    call = _api.conversations_list({"ordering": ["title", "-created_at"], "status": ["active", "archived"]})
    assert call.params == {"ordering": "title,-created_at", "status": ["active", "archived"]}
    assert _api.runs_list({"ordering": []}).params == {}


def test_async_client_has_the_same_surface():
    for sync_cls, async_cls in ((memsvc.Client, memsvc.AsyncClient), (memsvc.Run, memsvc.AsyncRun)):
        sync_methods, async_methods = public_methods(sync_cls), public_methods(async_cls)
        assert set(sync_methods) == set(async_methods)
        for name, method in sync_methods.items():
            if not callable(method):
                continue
            sync_params = inspect.signature(method).parameters
            async_params = inspect.signature(async_methods[name]).parameters
            assert [(p.name, p.kind, p.default) for p in sync_params.values()] == [
                (p.name, p.kind, p.default) for p in async_params.values()
            ], name


def test_async_client_drives_a_run_and_raises_typed_errors(live):
    async def scenario():
        async with AsyncClient(live.base, live.keys["svc"]) as svc, AsyncClient(live.base, live.keys["bob"]) as bob:
            conversation = await svc.create_conversation("alice", title="Async run")
            word = uuid.uuid4().hex[:10]
            async with svc.run(conversation, worker_id="aw1", lease_seconds=30, renew_every=0.3) as run:
                first_expiry = run.lease_expires_at
                await run.add_message("user", f"async {word}")
                assert (await run.remember(f"- async note {word}"))["result"] == "appended"
                assert word in next(s for s in (await run.context())["sections"] if s["name"] == "memory")["content"]
                assert (await run.search_history(word))["results"]
                assert (await run.read_history())["messages"]
                while run.renewals < 2:
                    await asyncio.sleep(0.1)
                assert (await svc.get_run(run.id))["lease_expires_at"] > first_expiry
            assert (await svc.get_run(run.id))["status"] == "completed"
            ids = [c["id"] async for c in svc.iter_conversations(user="alice", page_size=2)]
            assert conversation["id"] in ids and len(ids) == len(set(ids))

            with pytest.raises(ValueError):
                async with svc.run(conversation, worker_id="aw2") as failing:
                    raise ValueError("boom")
            assert (await svc.get_run(failing.id))["status"] == "failed"
            with pytest.raises(memsvc.NotFound) as missing:
                await bob.get_conversation(conversation["id"])
            assert missing.value.request_id

    asyncio.run(asyncio.wait_for(scenario(), 60))
