"""``memsvc.integrations.langgraph.MemoryStore`` with LangGraph itself, against a live server.

The behaviour langgraph's own store tests check (its ``libs/checkpoint`` and
``libs/checkpoint-postgres`` test suites: batches, namespaces, filters, pages, queries, TTL) runs
here twice, side by side: on langgraph's ``InMemoryStore`` and on ours, with the same
namespaces (ours start with ``("users", <name>)``, which the InMemoryStore takes as any other).
Then what only a service with rules has: other users, limited keys, forged keys, refused values,
and that nothing changed afterwards."""

import asyncio
import hashlib
import math
import time
import uuid

import memsvc
import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, Item, ListNamespacesOp, MatchCondition, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore
from memsvc.integrations.langgraph import MemoryStore

DIMS = 256


def character_embeddings(texts: list[str]) -> list[list[float]]:
    """Bags of character trigrams, hashed: a deterministic embedding for the InMemoryStore's
    side (the service ranks with its own engine)."""
    vectors = []
    for text in texts:
        vector = [0.0] * DIMS
        padded = f"  {text.lower()}  "
        for i in range(len(padded) - 2):
            vector[int(hashlib.md5(padded[i : i + 3].encode()).hexdigest(), 16) % DIMS] += 1.0
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        vectors.append([v / norm for v in vector])
    return vectors


@pytest.fixture(scope="module")
def service_store(integrations):
    store = MemoryStore(integrations.base, integrations.keys["alice"])
    yield store
    store.close()


@pytest.fixture(params=["inmemory", "service"])
def store(request, integrations):  # integrations: named, so that both passes run these (tests/conftest.py)
    """(store, root): the same cases on langgraph's InMemoryStore and on the service, under a
    namespace of this test's own."""
    root = ("users", "alice", f"t{uuid.uuid4().hex[:10]}")
    if request.param == "inmemory":
        return InMemoryStore(index={"dims": DIMS, "embed": character_embeddings}), root
    return request.getfixturevalue("service_store"), root


# --- langgraph's own cases, on both stores ------------------------------------------------
def test_basic_ops(store):
    store, root = store
    ns = (*root, "documents")
    value = {"title": "Test Document", "content": "Hello, World!"}
    store.put(ns, "doc1", value)
    item = store.get(ns, "doc1")
    assert isinstance(item, Item) and item.namespace == ns and item.key == "doc1" and item.value == value
    time.sleep(0.01)
    updated = {"title": "Updated Document", "content": "Hello, Updated!"}
    store.put(ns, "doc1", updated)
    again = store.get(ns, "doc1")
    assert again.value == updated and again.updated_at > item.updated_at
    assert store.get((*root, "other_documents"), "doc1") is None
    store.delete(ns, "doc1")
    assert store.get(ns, "doc1") is None


def test_batch_order(store):
    store, root = store
    store.put((*root, "foo"), "key1", {"data": "value1"})
    store.put((*root, "bar"), "key2", {"data": "value2"})
    results = store.batch(
        [
            GetOp(namespace=(*root, "foo"), key="key1"),
            PutOp(namespace=(*root, "bar"), key="key2", value={"data": "value2"}),
            SearchOp(namespace_prefix=root, filter={"data": "value1"}, limit=10, offset=0),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", root),), max_depth=None, limit=10, offset=0),
            GetOp(namespace=root, key="key3"),
        ]
    )
    assert isinstance(results[0], Item) and results[0].value == {"data": "value1"}
    assert results[1] is None
    assert [i.key for i in results[2]] == ["key1"]
    assert sorted(results[3]) == [(*root, "bar"), (*root, "foo")]
    assert results[4] is None


def test_batch_put_and_delete(store):
    store, root = store
    results = store.batch(
        [
            PutOp(namespace=root, key="key1", value={"data": "value1"}),
            PutOp(namespace=root, key="key2", value={"data": "value2"}),
            PutOp(namespace=root, key="key3", value=None),
        ]
    )
    assert results == [None, None, None]
    assert store.get(root, "key1").value == {"data": "value1"}
    assert store.get(root, "key2").value == {"data": "value2"}
    assert store.get(root, "key3") is None


def test_batch_search_ops(store):
    store, root = store
    for ns, key, value in [
        ((*root, "foo"), "key1", {"data": "value1", "tag": "a"}),
        ((*root, "bar"), "key2", {"data": "value2", "tag": "a"}),
        ((*root, "baz"), "key3", {"data": "value3", "tag": "b"}),
    ]:
        store.put(ns, key, value)
    tagged, two, only_foo = store.batch(
        [
            SearchOp(namespace_prefix=root, filter={"tag": "a"}, limit=10, offset=0),
            SearchOp(namespace_prefix=root, filter=None, limit=2, offset=0),
            SearchOp(namespace_prefix=(*root, "foo"), filter=None, limit=10, offset=0),
        ]
    )
    assert len(tagged) == 2 and all(i.value["tag"] == "a" for i in tagged)
    assert len(two) == 2
    assert [(i.namespace, i.key) for i in only_foo] == [((*root, "foo"), "key1")]


def test_list_namespaces(store):
    store, root = store
    namespaces = [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
    ]
    for i, ns in enumerate(namespaces):
        store.put((*root, *ns), f"id_{i}", {"data": f"value_{i:02d}"})
    full = [(*root, *ns) for ns in namespaces]
    assert sorted(store.list_namespaces(prefix=(*root, "a", "b"))) == sorted(n for n in full if n[3:5] == ("a", "b"))
    assert sorted(store.list_namespaces(prefix=root, suffix=("f",))) == sorted(n for n in full if n[-1] == "f")
    assert sorted(store.list_namespaces(prefix=(*root, "a", "b"), max_depth=6)) == [
        (*root, "a", "b", "c"),
        (*root, "a", "b", "d"),
        (*root, "a", "b", "f"),
    ]
    assert store.list_namespaces(prefix=(*root, "a", "b"), limit=2) == [
        (*root, "a", "b", "c"),
        (*root, "a", "b", "d", "e"),
    ]
    assert store.list_namespaces(prefix=(*root, "a", "b"), offset=2) == [
        (*root, "a", "b", "d", "i"),
        (*root, "a", "b", "f"),
    ]
    assert sorted(store.list_namespaces(prefix=(*root, "a", "*", "f"))) == [
        (*root, "a", "b", "f"),
        (*root, "a", "c", "f"),
    ]
    assert store.list_namespaces(prefix=(*root, "nonexistent")) == []


def test_list_namespaces_with_several_conditions_of_one_kind(store):
    """Every condition holds: two prefixes (or suffixes) narrow as one, "*" taking the label the
    other names; two that disagree at one place match nothing."""
    store, root = store
    for i, ns in enumerate([("a", "b", "c"), ("a", "b", "d", "c"), ("a", "x", "c"), ("b", "b", "c")]):
        store.put((*root, *ns), f"id_{i}", {"data": i})

    def listed(*conditions):
        return sorted(store.batch([ListNamespacesOp(match_conditions=conditions, limit=100)])[0])

    prefix, suffix = (lambda *p: MatchCondition("prefix", p)), (lambda *p: MatchCondition("suffix", p))
    assert listed(prefix(*root, "a"), prefix(*root, "*", "b")) == [(*root, "a", "b", "c"), (*root, "a", "b", "d", "c")]
    assert listed(prefix(*root, "*", "*", "c"), prefix(*root, "a")) == [(*root, "a", "b", "c"), (*root, "a", "x", "c")]
    assert listed(prefix(*root, "a"), prefix(*root, "b")) == []
    assert listed(prefix(*root), suffix("b", "c"), suffix("*", "c")) == [(*root, "a", "b", "c"), (*root, "b", "b", "c")]
    assert listed(prefix(*root), suffix("d", "c"), suffix("b", "c")) == []
    assert listed(prefix(*root), suffix("d", "*"), suffix("c")) == [(*root, "a", "b", "d", "c")]
    with pytest.raises(ValueError, match="match type"):
        listed(prefix(*root), MatchCondition("infix", ("b",)))
    nothing, got = asyncio.run(
        store.abatch(
            [
                ListNamespacesOp(match_conditions=(prefix(*root, "a"), prefix(*root, "b")), limit=10),
                GetOp((*root, "a", "b", "c"), "id_0"),
            ]
        )
    )
    assert nothing == [] and got.value == {"data": 0}


def test_search(store):
    store, root = store
    for ns, key, value in [
        ((*root, "docs"), "doc1", {"title": "First Doc", "author": "Alice", "tags": ["important"]}),
        ((*root, "docs"), "doc2", {"title": "Second Doc", "author": "Bob", "tags": ["draft"]}),
        ((*root, "images"), "img1", {"title": "Image 1", "author": "Alice", "tags": ["final"]}),
    ]:
        store.put(ns, key, value)
    assert len(store.search(root)) == 3
    docs = store.search((*root, "docs"))
    assert len(docs) == 2 and all(i.namespace == (*root, "docs") for i in docs)
    alice_items = store.search(root, filter={"author": "Alice"})
    assert len(alice_items) == 2 and all(i.value["author"] == "Alice" for i in alice_items)
    assert [i.key for i in store.search(root, filter={"tags": ["draft"]})] == ["doc2"]
    assert len(store.search(root, limit=2)) == 2
    assert len(store.search(root, offset=2)) == 1


def test_numeric_comparison_filters(store):
    store, root = store
    for key, score in [("a", 2), ("b", 9), ("c", 10), ("d", 11), ("e", 9.5)]:
        store.put(root, key, {"score": score})

    def scores(filter_):
        return sorted(item.value["score"] for item in store.search(root, filter=filter_))

    assert scores({"score": {"$gte": 10}}) == [10, 11]
    assert scores({"score": {"$gt": 9}}) == [9.5, 10, 11]
    assert scores({"score": {"$lt": 10}}) == [2, 9, 9.5]
    assert scores({"score": {"$lte": 9}}) == [2, 9]
    assert scores({"score": {"$ne": 9}}) == [2, 9.5, 10, 11]


def test_query_with_filters(store):
    store, root = store
    for key, value in [
        ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
        ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
        ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
        ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
    ]:
        store.put(root, key, value)
    results = store.search(root, query="apple", filter={"color": "red"})
    assert [r.key for r in results] == ["doc1", "doc2"]
    results = store.search(root, query="car", filter={"color": "red"})
    assert [r.key for r in results] == ["doc2", "doc1"]
    results = store.search(root, query="apple", filter={"score": {"$gte": 4.0}, "color": "green"})
    assert [r.key for r in results] == ["doc3"]
    assert len(store.search(root, query="bbbbluuu", filter={"score": {"$gt": 3.2}})) == 3


def test_query_ranks_and_updates_move_the_rank(store):
    store, root = store
    store.put(root, "doc1", {"text": "zany zebra Xerxes"})
    store.put(root, "doc2", {"text": "something about dogs"})
    store.put(root, "doc3", {"text": "text about birds"})
    first = store.search(root, query="Zany Xerxes")
    assert first[0].key == "doc1" and first[0].score is not None
    store.put(root, "doc1", {"text": "new text about dogs"})
    after = {r.key: r.score for r in store.search(root, query="Zany Xerxes")}
    assert (after.get("doc1") or 0) < first[0].score
    store.put(root, "doc4", {"text": "new text about dogs"}, index=False)
    assert "doc4" not in [r.key for r in store.search(root, query="new text about dogs", limit=3)]


def test_query_pages_and_edge_cases(store):
    store, root = store
    for i in range(5):
        store.put(root, f"doc{i}", {"text": f"test document number {i}"})
    page1 = store.search(root, query="test", limit=2)
    page2 = store.search(root, query="test", limit=2, offset=2)
    assert len(page1) == 2 and len(page2) == 2 and {r.key for r in page1}.isdisjoint(r.key for r in page2)
    assert len(store.search(root, query="test", limit=10)) == 5
    for query in ("", None, "test " * 100, "test!@#$%^&*()"):
        assert len(store.search(root, query=query)) == 5


def test_non_ascii(store):
    store, root = store
    texts = {"1": "这是中文", "2": "これは日本語です", "3": "이건 한국어야", "4": "Это русский", "5": "यह रूसी है"}
    for key, text in texts.items():
        store.put((*root, "memories"), key, {"text": text})
    for key, text in texts.items():
        assert store.search((*root, "memories"), query=text)[0].key == key


def test_invalid_namespaces(store):
    store, root = store
    for ns in ((), (*root, "thing.about"), (*root, "")):
        with pytest.raises(InvalidNamespaceError):
            store.put(ns, "foo", {"foo": "bar"})
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph", "foo"), "bar", {"foo": "bar"})


def test_async_methods(store):
    store, root = store

    async def scenario():
        await store.aput(root, "a", {"content": "async apples"})
        assert (await store.aget(root, "a")).value == {"content": "async apples"}
        assert [i.key for i in await store.asearch(root, query="apples")] == ["a"]
        assert (*root,) in await store.alist_namespaces(prefix=root)
        await store.adelete(root, "a")
        assert await store.aget(root, "a") is None

    asyncio.run(scenario())


# --- what only the service has ----------------------------------------------------------------
def test_ttl_expires_items_unless_reads_refresh_them(service_store):
    root = ("users", "alice", f"ttl{uuid.uuid4().hex[:8]}")
    store = service_store
    store.put(root, "kept", {"content": "refreshed by reading"}, ttl=3 / 60)
    store.put(root, "left", {"content": "left alone"}, ttl=3 / 60)
    for _ in range(3):
        time.sleep(1.5)
        assert store.get(root, "kept") is not None  # each read moves its expiry 3 s on
    assert store.get(root, "left", refresh_ttl=False) is None
    assert [i.key for i in store.search(root, refresh_ttl=False)] == ["kept"]
    refreshed = MemoryStore(store._client.base_url, store._client.token, ttl={"refresh_on_read": False})
    time.sleep(3.5)
    assert refreshed.get(root, "kept") is None


def test_namespaces_are_the_scopes_and_their_rules(integrations, service_store):
    keys = integrations.keys
    alice_ns = ("users", "alice", f"p{uuid.uuid4().hex[:8]}")
    service_store.put(alice_ns, "secret", {"content": "alice keeps a quokka plush"})
    before = service_store.search(alice_ns)
    for name in ("bob", "lsvc"):
        other = MemoryStore(integrations.base, keys[name])
        with pytest.raises(memsvc.NotFound):
            other.get(alice_ns, "secret")
        with pytest.raises(memsvc.NotFound):
            other.search(alice_ns, query="quokka")
        with pytest.raises(memsvc.NotFound):
            other.put(alice_ns, "secret", {"content": "overwritten"})
        with pytest.raises(memsvc.NotFound):
            other.delete(alice_ns, "secret")
    with pytest.raises(memsvc.AuthenticationFailed):
        MemoryStore(integrations.base, "forged-key").get(alice_ns, "secret")
    assert service_store.search(alice_ns) == before
    # a service acting for alice; the project for its members; the chat bound to alice
    assert MemoryStore(integrations.base, keys["svc"]).get(alice_ns, "secret").value["content"].endswith("plush")
    project = ("projects", keys["project"], "decisions")
    service_store.put(project, "db", {"content": "We use PostgreSQL", "kind": "decision"})
    assert MemoryStore(integrations.base, keys["bob"]).get(project, "db").value["kind"] == "decision"
    with pytest.raises(memsvc.NotFound):
        MemoryStore(integrations.base, keys["carol"]).get(project, "db")
    chat = ("chats", "milky:private:10001")
    MemoryStore(integrations.base, keys["svc"]).put(chat, "seat", {"content": "Prefers aisle seats"})
    assert service_store.get(chat, "seat").value == {"content": "Prefers aisle seats"}
    with pytest.raises(memsvc.PermissionDenied):
        service_store.put(chat, "seat", {"content": "a user does not write chat items"})


def test_values_the_service_refuses(service_store):
    root = ("users", "alice", f"v{uuid.uuid4().hex[:8]}")
    service_store.put(root, "first", {"content": "kept"})
    with pytest.raises(memsvc.ValidationError) as refused:
        service_store.put(root, "k", {"content": "my password is Hunter2Hunter2"})
    assert refused.value.code == "contains_secret"
    with pytest.raises(memsvc.ValidationError):
        service_store.search(root, filter={"score": {"$regex": "x"}})
    with pytest.raises(InvalidNamespaceError):
        service_store.put(("documents", "x"), "k", {"content": "v"})
    assert [i.key for i in service_store.search(root)] == ["first"]


# --- found by running LangGraph programs against both stores ---------------------------------
def test_the_async_methods_work_from_one_event_loop_after_another(store):
    """``asyncio.run`` twice on one store (a script, a test per loop, a graph run per request):
    an httpx connection belongs to the loop it was opened in."""
    store, root = store
    asyncio.run(store.aput(root, "a", {"content": "loops apart"}))
    assert asyncio.run(store.aget(root, "a")).value == {"content": "loops apart"}
    assert [i.key for i in asyncio.run(store.asearch(root, query="loops apart"))] == ["a"]


def test_a_graph_with_the_store_runs_twice_with_asyncio_run(service_store):
    from langgraph.config import get_store
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    root = ("users", "alice", f"g{uuid.uuid4().hex[:8]}")

    class State(TypedDict):
        seen: int

    async def remember(state: State) -> State:
        store = get_store()
        await store.aput(root, f"k{state['seen']}", {"content": f"run number {state['seen']}"})
        return {"seen": len(await store.asearch(root, limit=50))}

    graph = StateGraph(State)
    graph.add_node("remember", remember)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", END)
    compiled = graph.compile(store=service_store)
    assert asyncio.run(compiled.ainvoke({"seen": 0})) == {"seen": 1}
    assert asyncio.run(compiled.ainvoke({"seen": 1})) == {"seen": 2}


def test_content_comes_back_with_the_white_space_around_it(store):
    store, root = store
    for key, content in (("nl", "Alice likes pizza\n"), ("pad", "  padded  "), ("tab", "\tx")):
        store.put(root, key, {"content": content})
        assert store.get(root, key).value == {"content": content}
        assert store.search(root, filter={"content": content})[0].key == key


def test_putting_the_same_value_again_with_other_flags_takes_them(store):
    store, root = store
    store.put(root, "k", {"content": "a kindless value"})
    store.put(root, "k", {"content": "a kindless value", "kind": "fact"})
    assert store.get(root, "k").value == {"content": "a kindless value", "kind": "fact"}
    store.put(root, "k", {"content": "a kindless value"})
    assert store.get(root, "k").value == {"content": "a kindless value"}
    store.put(root, "q", {"content": "hidden then found"}, index=False)
    store.put(root, "q", {"content": "hidden then found"})
    (found,) = [i for i in store.search(root, query="hidden then found") if i.key == "q"]
    assert found.score is not None


def test_a_time_to_live_put_again_is_the_one_that_holds(service_store):
    root = ("users", "alice", f"ttl2{uuid.uuid4().hex[:8]}")
    store = service_store
    store.put(root, "cleared", {"content": "ttl then none"}, ttl=3 / 60)
    store.put(root, "cleared", {"content": "ttl then none"})
    store.put(root, "longer", {"content": "short then long"}, ttl=3 / 60)
    store.put(root, "longer", {"content": "short then long"}, ttl=60)
    store.put(root, "added", {"content": "none then ttl"})
    store.put(root, "added", {"content": "none then ttl"}, ttl=3 / 60)
    for _ in range(3):
        time.sleep(1.5)
        for key in ("cleared", "longer", "added"):
            assert store.get(root, key) is not None  # each read refreshes "added" by its 3 seconds
    time.sleep(3.5)
    assert store.get(root, "cleared") is not None and store.get(root, "longer") is not None
    assert store.get(root, "added", refresh_ttl=False) is None


def test_a_prefix_matches_letter_case_exactly(store):
    store, root = store
    store.put((*root, "Docs"), "upper", {"content": "in Docs"})
    store.put((*root, "docs"), "lower", {"content": "in docs"})
    assert [i.key for i in store.search((*root, "docs"))] == ["lower"]
    assert [i.key for i in store.search((*root, "Docs"))] == ["upper"]


def test_a_langgraph_index_config_is_taken_for_its_fields(integrations):
    root = ("users", "alice", f"ix{uuid.uuid4().hex[:8]}")
    config = {"dims": DIMS, "embed": character_embeddings, "fields": ["title"]}
    with MemoryStore(integrations.base, integrations.keys["alice"], index=config) as store:
        store.put(root, "t", {"title": "glacier hiking", "body": "unrelated words entirely"})
        (item,) = store.search(root)
    with memsvc.Client(integrations.base, integrations.keys["alice"]) as client:
        ((found,),) = client.store_batch([{"op": "search", "namespace_prefix": list(root), "limit": 1}])
    assert item.key == "t" and found["text"] == "glacier hiking"  # found by its title alone
    with pytest.raises(TypeError):
        MemoryStore(integrations.base, integrations.keys["alice"], index="title")


def test_a_batch_longer_than_one_request_takes_is_sent_in_turn(store):
    store, root = store
    puts = [PutOp(root, f"k{n}", {"content": f"item number {n}"}) for n in range(130)]
    assert store.batch(puts) == [None] * 130
    gets = store.batch([GetOp(root, f"k{n}") for n in range(130)])
    assert [item.value["content"] for item in gets] == [f"item number {n}" for n in range(130)]


def test_a_label_of_text_that_cannot_be_sent_is_an_invalid_namespace(service_store):
    """LangGraph's own stores take any string; a lone surrogate has no UTF-8 form to send."""
    with pytest.raises(InvalidNamespaceError):
        service_store.put(("users", "alice", "half \ud800 pair"), "k", {"content": "x"})
