"""langmem (LangGraph's memory library), unchanged, on ``memsvc.integrations.langgraph.MemoryStore``
against a live server, beside langgraph's ``InMemoryStore``: its memory tools and its store
manager, whose values are ``{"kind": <schema name>, "content": {...}}``. The model is the one
thing faked (a chat model answering with the tool calls an LLM would make): it is what would
leave the machine."""

import uuid

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langgraph.store.memory import InMemoryStore
from langmem import create_manage_memory_tool, create_memory_store_manager, create_search_memory_tool
from memsvc import Client, NotFound
from memsvc.integrations.langgraph import MemoryStore
from pydantic import BaseModel


class ToolCallingFake(FakeMessagesListChatModel):
    """Answers in turn with the messages given, tools bound or not."""

    def bind_tools(self, tools, **kwargs):
        return self


class Preference(BaseModel):
    subject: str
    likes: bool


@pytest.fixture(params=["inmemory", "service"])
def store(request, integrations):
    """(store, namespace): the same cases on InMemoryStore and on the service, alice's."""
    namespace = ("users", "alice", f"lm{uuid.uuid4().hex[:8]}")
    if request.param == "inmemory":
        yield InMemoryStore(), namespace
        return
    store = MemoryStore(integrations.base, integrations.keys["alice"])
    yield store, namespace
    store.close()


def calls(*pairs):
    return AIMessage(content="", tool_calls=[{"name": n, "args": a, "id": f"c{i}"} for i, (n, a) in enumerate(pairs)])


def test_the_store_manager_writes_and_finds_its_memories(store):
    store, namespace = store
    model = ToolCallingFake(
        responses=[
            calls(("Memory", {"content": "Alice keeps bees on the roof"})),
            calls(("Memory", {"content": "Alice is allergic to peanuts"})),
        ]
    )
    manager = create_memory_store_manager(model, namespace=namespace, store=store)
    first = manager.invoke({"messages": [{"role": "user", "content": "I keep bees on my roof."}]})
    second = manager.invoke({"messages": [{"role": "user", "content": "Peanuts make me ill."}]})
    written = [*first, *second]
    assert [w["value"] for w in written] == [
        {"kind": "Memory", "content": {"content": "Alice keeps bees on the roof"}},
        {"kind": "Memory", "content": {"content": "Alice is allergic to peanuts"}},
    ]
    for put in written:
        assert store.get(namespace, put["key"]).value == put["value"]
    found = manager.search(query="what is alice allergic to?", limit=5)
    assert {item.key for item in found} == {put["key"] for put in written}
    assert store.search(namespace, filter={"kind": "Memory"}, limit=10)
    assert store.search(namespace, filter={"kind": "Other"}, limit=10) == []


def test_the_store_manager_with_a_schema_of_its_own(store):
    store, namespace = store
    model = ToolCallingFake(responses=[calls(("Preference", {"subject": "oolong tea", "likes": True}))])
    manager = create_memory_store_manager(model, schemas=[Preference], namespace=namespace, store=store)
    (put,) = manager.invoke({"messages": [{"role": "user", "content": "I love oolong tea."}]})
    assert put["value"] == {"kind": "Preference", "content": {"subject": "oolong tea", "likes": True}}
    (item,) = manager.search(query="tea", limit=5)
    assert item.value == Preference(subject="oolong tea", likes=True)  # read back into its schema


def test_the_memory_tools_create_update_search_delete(store):
    store, namespace = store
    manage = create_manage_memory_tool(namespace, store=store)
    search = create_search_memory_tool(namespace, store=store)
    said = manage.invoke({"content": "Alice rides a blue bike to work", "action": "create"})
    key = said.split()[-1]
    assert store.get(namespace, key).value == {"content": "Alice rides a blue bike to work"}
    manage.invoke({"content": "Alice rides a red bike to work", "action": "update", "id": key})
    assert store.get(namespace, key).value == {"content": "Alice rides a red bike to work"}
    assert "red bike" in search.invoke({"query": "how does alice get to work?"})
    manage.invoke({"action": "delete", "id": key})
    assert store.get(namespace, key) is None


def test_another_users_key_reaches_nothing_of_alices_through_langmem(integrations):
    namespace = ("users", "alice", f"lm{uuid.uuid4().hex[:8]}")
    with MemoryStore(integrations.base, integrations.keys["alice"]) as alices:
        create_manage_memory_tool(namespace, store=alices).invoke(
            {"content": "Alice's secret garden", "action": "create"}
        )
    with Client(integrations.base, integrations.keys["alice"]) as alice:
        before = alice.list_memories()["count"]
    with MemoryStore(integrations.base, integrations.keys["bob"]) as bobs:
        manager = create_memory_store_manager(
            ToolCallingFake(responses=[calls(("Memory", {"content": "Bob writes as Alice"}))]),
            namespace=namespace,
            store=bobs,
        )
        with pytest.raises(NotFound):
            manager.invoke({"messages": [{"role": "user", "content": "hello"}]})
        with pytest.raises(NotFound):
            create_search_memory_tool(namespace, store=bobs).invoke({"query": "garden"})
    with Client(integrations.base, integrations.keys["alice"]) as alice:
        assert alice.list_memories()["count"] == before
