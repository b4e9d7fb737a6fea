"""LangChain's own agent (``langchain.agents.create_agent``) with its long-term memory in the
service: the store it is given is ``memsvc.integrations.langgraph.MemoryStore``, its tools reach it
through ``ToolRuntime`` as LangChain's long-term memory guide writes them, and what one
conversation saves another finds. The chat model — an LLM endpoint — is the one thing replaced;
beside it, the same agent on LangGraph's ``InMemoryStore``. Then another user's key."""

import asyncio
import uuid
from dataclasses import dataclass

import memsvc
import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from memsvc.integrations.langgraph import MemoryStore


@dataclass
class Context:
    user_id: str
    topic: str


def namespace(runtime: ToolRuntime[Context]) -> tuple[str, ...]:
    return ("users", runtime.context.user_id, runtime.context.topic)


@tool
def save_memory(text: str, runtime: ToolRuntime[Context]) -> str:
    """Save a fact about the user for later conversations."""
    runtime.store.put(namespace(runtime), uuid.uuid4().hex, {"content": text})
    return f"saved: {text}"


@tool
def recall(query: str, runtime: ToolRuntime[Context]) -> str:
    """Find what is known about the user."""
    found = runtime.store.search(namespace(runtime), query=query, limit=3)
    return "; ".join(item.value["content"] for item in found) or "nothing"


class ScriptedModel(BaseChatModel):
    """The chat model: "Remember …" calls ``save_memory``, any other question ``recall``, and a
    tool's answer is said back."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(f"From memory: {last.content}")
        elif last.content.startswith("Remember "):
            call = {"name": "save_memory", "args": {"text": last.content.removeprefix("Remember ")}, "id": "c1"}
            reply = AIMessage("", tool_calls=[call])
        else:
            reply = AIMessage("", tool_calls=[{"name": "recall", "args": {"query": last.content}, "id": "c2"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])


def agent(store):
    return create_agent(
        ScriptedModel(),
        tools=[save_memory, recall],
        store=store,
        checkpointer=InMemorySaver(),
        context_schema=Context,
    )


def said(result) -> str:
    return result["messages"][-1].content


@pytest.fixture(params=["inmemory", "service"])
def store(request, integrations):
    if request.param == "inmemory":
        return InMemoryStore()
    return MemoryStore(integrations.base, integrations.keys["alice"])


def test_what_one_conversation_saves_another_finds(store):
    context = Context(user_id="alice", topic=f"t{uuid.uuid4().hex[:8]}")
    first = agent(store).invoke(
        {"messages": [{"role": "user", "content": "Remember alice is vegetarian and allergic to peanuts"}]},
        config={"configurable": {"thread_id": "one"}},
        context=context,
    )
    assert said(first) == "From memory: saved: alice is vegetarian and allergic to peanuts"
    # another conversation, another agent (another process): only the store is shared
    later = agent(store).invoke(
        {"messages": [{"role": "user", "content": "vegetarian"}]},
        config={"configurable": {"thread_id": "two"}},
        context=context,
    )
    assert said(later) == "From memory: alice is vegetarian and allergic to peanuts"


def test_the_agent_runs_async_too(integrations):
    store = MemoryStore(integrations.base, integrations.keys["alice"])
    context = Context(user_id="alice", topic=f"t{uuid.uuid4().hex[:8]}")

    async def scenario():
        await agent(store).ainvoke(
            {"messages": [{"role": "user", "content": "Remember alice plays the oboe"}]},
            config={"configurable": {"thread_id": "a"}},
            context=context,
        )
        return await agent(store).ainvoke(
            {"messages": [{"role": "user", "content": "oboe"}]},
            config={"configurable": {"thread_id": "b"}},
            context=context,
        )

    assert said(asyncio.run(scenario())) == "From memory: alice plays the oboe"


def test_another_users_agent_reaches_nothing_of_alices(integrations):
    topic = f"t{uuid.uuid4().hex[:8]}"
    alices = MemoryStore(integrations.base, integrations.keys["alice"])
    agent(alices).invoke(
        {"messages": [{"role": "user", "content": "Remember alice keeps a quokka plush"}]},
        config={"configurable": {"thread_id": "one"}},
        context=Context(user_id="alice", topic=topic),
    )
    before = alices.search(("users", "alice", topic))
    # bob's key, told by its context that it is alice: the service knows better
    bobs = agent(MemoryStore(integrations.base, integrations.keys["bob"]))
    for content in ("quokka", "Remember alice likes nothing"):
        with pytest.raises(memsvc.NotFound):
            bobs.invoke(
                {"messages": [{"role": "user", "content": content}]},
                config={"configurable": {"thread_id": "bob"}},
                context=Context(user_id="alice", topic=topic),
            )
    # and as himself, bob finds nothing of hers
    own = bobs.invoke(
        {"messages": [{"role": "user", "content": "quokka"}]},
        config={"configurable": {"thread_id": "bob2"}},
        context=Context(user_id="bob", topic=topic),
    )
    assert said(own) == "From memory: nothing"
    assert alices.search(("users", "alice", topic)) == before
