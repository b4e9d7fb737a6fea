"""mem0's own client (``mem0ai``'s ``MemoryClient`` and ``AsyncMemoryClient``, unchanged) against
a live server: the switch is its ``host``; the key decides whose memories it reaches; its typed
exceptions fire on our errors; refused calls change nothing."""

import asyncio
import uuid

import pytest
from mem0 import AsyncMemoryClient, MemoryClient
from mem0.exceptions import AuthenticationError, MemoryNotFoundError, ValidationError


@pytest.fixture(scope="module")
def mem0(integrations):
    made = {}

    def make(name, host=None):
        if (name, host) not in made:
            made[name, host] = MemoryClient(api_key=integrations.keys[name], host=host or integrations.base)
        return made[name, host]

    return make


def unique(text):
    return f"{text} {uuid.uuid4().hex[:6]}"


def everything_of(client, user):
    """What the key sees of ``user``: every memory, as a set of (id, text, status)."""
    page = client.get_all(filters={"user_id": user}, page_size=200)
    return {(m["id"], m["memory"], m["status"]) for m in page["results"]}


def test_the_switch_is_the_host(mem0, integrations):
    for host in (integrations.base, integrations.base + "/api/mem0"):
        client = mem0("alice", host=host)
        added = client.add(unique("I drink oolong in the morning"), user_id="alice", infer=False)
        (event,) = added["results"]
        assert event["event"] == "ADD"
        assert client.get(event["id"])["memory"] == event["memory"]


def test_a_forged_key_cannot_start_a_client(integrations):
    with pytest.raises(ValueError, match="Invalid token"):
        MemoryClient(api_key="not-a-key", host=integrations.base)


def test_add_infer_search_update_history_delete(mem0):
    alice = mem0("alice")
    run = uuid.uuid4().hex[:6]
    events = alice.add(
        [
            {"role": "user", "content": f"I'm allergic to peanuts. I live in Porto{run}."},
            {"role": "assistant", "content": "Noted! I am a helpful assistant."},
        ],
        user_id="alice",
        agent_id="chef",
        metadata={"topic": "health"},
    )["results"]
    assert [e["event"] for e in events] == ["ADD", "ADD"]
    assert all("assistant" not in e["memory"] for e in events)
    moved = alice.add(f"I live in Lima{run} now.", user_id="alice", agent_id="chef")["results"]
    assert [(e["event"], e["previous_memory"]) for e in moved] == [("UPDATE", f"I live in Porto{run}.")]
    found = alice.search("where does she live?", filters={"AND": [{"user_id": "alice"}, {"agent_id": "chef"}]})
    texts = [m["memory"] for m in found["results"]]
    assert f"I live in Lima{run} now." in texts and f"I live in Porto{run}." not in texts
    assert all(m["agent_id"] == "chef" and 0 < m["score"] <= 1 for m in found["results"])
    lived = moved[0]["id"]
    assert [h["event"] for h in alice.history(lived)] == ["ADD", "UPDATE"]
    updated = alice.update(lived, text=f"I live in Quito{run}.")
    assert updated["memory"] == f"I live in Quito{run}." and updated["previous_id"] == lived
    assert alice.get(lived)["status"] == "superseded"
    alice.delete(updated["id"])
    with pytest.raises(MemoryNotFoundError):
        alice.get(updated["id"])
    with pytest.raises(MemoryNotFoundError):
        alice.get(lived)  # the older versions went with it


def test_filters_narrow_and_unknown_ones_are_refused(mem0):
    alice = mem0("alice")
    tag = uuid.uuid4().hex[:8]
    alice.add(f"I collect stamps {tag}", user_id="alice", agent_id=f"a-{tag}", infer=False)
    alice.add(f"I collect coins {tag}", user_id="alice", run_id=f"r-{tag}", infer=False, metadata={"k": tag})
    by_agent = alice.get_all(filters={"AND": [{"user_id": "alice"}, {"agent_id": f"a-{tag}"}]})["results"]
    assert [m["memory"] for m in by_agent] == [f"I collect stamps {tag}"]
    either = alice.search(f"collect {tag}", filters={"OR": [{"agent_id": f"a-{tag}"}, {"run_id": f"r-{tag}"}]})
    assert {m["memory"] for m in either["results"]} == {f"I collect stamps {tag}", f"I collect coins {tag}"}
    by_metadata = alice.search(f"collect {tag}", filters={"metadata": {"k": tag}})["results"]
    assert [m["memory"] for m in by_metadata] == [f"I collect coins {tag}"]
    dated = alice.get_all(filters={"AND": [{"user_id": "alice"}, {"created_at": {"gte": "2999-01-01"}}]})
    assert dated["results"] == []
    before = everything_of(alice, "alice")
    for bad in ({"categories": {"in": ["x"]}}, {"agent_id": {"nin": ["x"]}}, {"XOR": []}):
        with pytest.raises(ValidationError) as refused:
            alice.search("stamps", filters=bad)
        assert "filters" in refused.value.message and any(
            name in refused.value.message for name in ("categories", "nin", "XOR")
        )
    with pytest.raises(ValidationError):
        alice.add("I like tea", user_id="alice", custom_categories=[{"a": "b"}])
    assert everything_of(alice, "alice") == before


def test_a_key_reaches_only_its_users_and_nothing_changes(mem0):
    alice, bob, lsvc, svc = mem0("alice"), mem0("bob"), mem0("lsvc"), mem0("svc")
    secret = alice.add(unique("I keep a quokka plush"), user_id="alice", infer=False)["results"][0]["id"]
    before = everything_of(alice, "alice")
    for client in (bob, lsvc):
        with pytest.raises(MemoryNotFoundError):
            client.add("I like tea", user_id="alice", infer=False)
        with pytest.raises(MemoryNotFoundError):
            client.search("quokka", filters={"user_id": "alice"})
        with pytest.raises(MemoryNotFoundError):
            client.get_all(filters={"user_id": "alice"})
        for call in (client.get, client.history, client.delete):
            with pytest.raises(MemoryNotFoundError):
                call(secret)
        with pytest.raises(MemoryNotFoundError):
            client.update(secret, text="mine now")
        with pytest.raises(MemoryNotFoundError):
            client.delete_all(user_id="alice")
        with pytest.raises(MemoryNotFoundError):
            client.batch_delete([{"memory_id": secret}])
    assert everything_of(alice, "alice") == before
    # the unlimited service acts for alice; the limited one for bob
    assert svc.get(secret)["user_id"] == "alice"
    mine = lsvc.add(unique("Bob likes chess"), user_id="bob", infer=False)["results"][0]
    assert bob.get(mine["id"])["memory"] == mine["memory"]
    with pytest.raises(ValidationError):
        svc.add("I like tea", infer=False)  # a service names the user


def test_entities_batch_and_delete_all(mem0):
    carol = mem0("carol")
    ids = [
        carol.add(f"carol fact {i}", user_id="carol", agent_id="helper", infer=False)["results"][0]["id"]
        for i in range(3)
    ]
    users = {(e["type"], e["name"]) for e in carol.users()["results"]}
    assert ("user", "carol") in users and ("agent", "helper") in users
    changed = carol.batch_update([{"memory_id": ids[0], "text": "carol fact zero"}])
    assert changed["results"][0]["memory"] == "carol fact zero"
    carol.batch_delete([{"memory_id": ids[1]}])
    assert len(carol.get_all()["results"]) == 2
    carol.delete_users(agent_id="helper")
    assert carol.get_all()["results"] == []
    carol.add("carol again", infer=False)
    carol.delete_all(user_id="carol")
    assert carol.get_all()["results"] == []


def test_delete_all_with_filters_as_mem0s_types_ask(mem0):
    """``DeleteAllMemoryOptions`` says the entity ids go inside ``filters``; the client then puts
    the dict in the query string as Python prints it."""
    carol = mem0("carol")
    kept = carol.add(unique("carol keeps this"), user_id="carol", agent_id="keeper", infer=False)["results"][0]["id"]
    for i in range(2):
        carol.add(unique(f"carol drops {i}"), user_id="carol", agent_id="dropper", infer=False)
    done = carol.delete_all(filters={"user_id": "carol", "agent_id": "dropper"})
    assert done["deleted"] == 2
    assert [m["id"] for m in carol.get_all(filters={"user_id": "carol"})["results"]] == [kept]
    with pytest.raises(ValidationError):
        carol.delete_all(filters={"user_id": "carol", "agent_id": {"in": ["keeper"]}})
    assert [m["id"] for m in carol.get_all(filters={"user_id": "carol"})["results"]] == [kept]
    with pytest.raises(MemoryNotFoundError):
        carol.delete_all(filters={"user_id": "alice"})  # a key of carol's does not reach alice
    asyncio.run(AsyncMemoryClient(api_key=carol.api_key, host=carol.host).delete_all(filters={"user_id": "carol"}))
    assert carol.get_all(filters={"user_id": "carol"})["results"] == []


def test_not_supported_is_said_not_pretended(mem0):
    alice = mem0("alice")
    for call in (
        lambda: alice.create_memory_export("{}", user_id="alice"),
        lambda: alice.feedback("mem_x", "POSITIVE"),
    ):
        with pytest.raises(ValidationError) as refused:
            call()
        assert "not supported" in refused.value.message


def test_the_async_client_too(integrations, mem0):
    async def scenario():
        client = AsyncMemoryClient(api_key=integrations.keys["alice"], host=integrations.base)
        async with client:
            added = await client.add(unique("I ride a tandem bike"), user_id="alice", infer=False)
            memory_id = added["results"][0]["id"]
            found = await client.search("tandem bike", filters={"user_id": "alice"})
            assert memory_id in [m["id"] for m in found["results"]]
            await client.delete(memory_id)
            with pytest.raises(MemoryNotFoundError):
                await client.get(memory_id)

    asyncio.run(scenario())


def test_an_authentication_failure_after_start_is_mems0s_authentication_error(integrations, mem0):
    client = MemoryClient(api_key=integrations.keys["alice"], host=integrations.base)
    client.client.headers["Authorization"] = "Token revoked-or-forged"
    with pytest.raises(AuthenticationError):
        client.get_all()


# --- found by running every public call of mem0's clients -------------------------------------
def test_reset_and_delete_users_with_agents_and_runs(integrations):
    """``reset()`` deletes every entity ``users()`` lists, the user first: the agents and runs
    after it hold nothing by then, and their deletes must not fail the call."""
    client = MemoryClient(api_key=integrations.keys["carol"], host=integrations.base)
    client.add(unique("carol keeps bees"), user_id="carol", agent_id="garden", run_id="chat/42", infer=False)
    client.add(unique("carol brews mead"), user_id="carol", run_id="a/b c?d", infer=False)
    assert {("run", "chat/42"), ("run", "a/b c?d")} <= {(e["type"], e["name"]) for e in client.users()["results"]}
    client.delete_users(run_id="a/b c?d")
    assert len(client.get_all()["results"]) == 1
    client.reset()
    assert client.get_all()["results"] == [] and client.users()["results"] == []


def test_the_async_client_with_a_host_that_ends_in_a_slash(integrations):
    async def scenario():
        async with AsyncMemoryClient(api_key=integrations.keys["alice"], host=integrations.base + "/") as client:
            added = await client.add(unique("I sail a dinghy"), user_id="alice", infer=False)
            await client.delete(added["results"][0]["id"])

    asyncio.run(scenario())


def test_metadata_operators_and_a_keyword_searchs_threshold(mem0):
    alice = mem0("alice")
    tag = uuid.uuid4().hex[:6]
    chat = alice.add(f"I read novels {tag}", user_id="alice", metadata={"source": "chat", "tag": tag}, infer=False)
    alice.add(f"I read comics {tag}", user_id="alice", metadata={"source": "email", "tag": tag}, infer=False)
    only = {"AND": [{"user_id": "alice"}, {"metadata": {"tag": tag, "source": {"in": ["chat", "voice"]}}}]}
    assert [m["id"] for m in alice.get_all(filters=only)["results"]] == [chat["results"][0]["id"]]
    with pytest.raises(ValidationError):
        alice.get_all(filters={"AND": [{"user_id": "alice"}, {"metadata": {"source": {"gt": "a"}}}]})
    found = alice.search(f"novels {tag} tomes", filters={"user_id": "alice"}, keyword_search=True)["results"]
    assert found and all(m["score"] < 1 for m in found)  # "tomes" is in none of them
    strict = alice.search(f"novels {tag} tomes", filters={"user_id": "alice"}, keyword_search=True, threshold=0.99)
    assert strict["results"] == []
