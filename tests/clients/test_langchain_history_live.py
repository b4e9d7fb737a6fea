"""``memsvc.integrations.langchain.MemoryChatMessageHistory`` with LangChain itself, against a live
server: the history's contract beside LangChain's own ``InMemoryChatMessageHistory``, a real
``RunnableWithMessageHistory`` keeping its turns in the service (the chat model — an LLM endpoint —
is the one thing replaced), found again from another process and searched by the history tools,
and the rules of whose conversations a key reaches."""

import asyncio
import uuid

import memsvc
import pytest
from langchain_core.chat_history import BaseChatMessageHistory, InMemoryChatMessageHistory
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    HumanMessageChunk,
    SystemMessage,
    SystemMessageChunk,
    ToolMessage,
    ToolMessageChunk,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables.history import RunnableWithMessageHistory
from memsvc import Client
from memsvc.integrations.langchain import MemoryChatMessageHistory, decode_message, encode_message
from pydantic import Field

MESSAGES = [
    SystemMessage("You plan trips."),
    HumanMessage("Hi, I'm planning a trip to Kyoto.", id="h1"),
    AIMessage(
        "",
        tool_calls=[{"name": "weather", "args": {"city": "Kyoto"}, "id": "call_1"}],
        response_metadata={"model_name": "m"},
    ),
    ToolMessage("18°C, sunny", tool_call_id="call_1", name="weather"),
    AIMessage("Kyoto in spring is lovely!", usage_metadata={"input_tokens": 3, "output_tokens": 5, "total_tokens": 8}),
    HumanMessage(content=[{"type": "text", "text": "Book a ryokan"}, {"type": "image_url", "image_url": {"url": "x"}}]),
    ChatMessage(role="critic", content="Too vague."),
    FunctionMessage(name="lookup", content="{}"),
    HumanMessage("a NUL \x00 inside"),
    AIMessage("half a pair \ud800 here"),
    AIMessage("long " * 200, additional_kwargs={"trace": "t" * 20_000}),
    HumanMessage(""),
    # found by a review: no JSON value (it failed the call half written), two lone surrogates
    # side by side (they came back as one character)
    AIMessage("scored", response_metadata={"logprob": float("-inf")}),
    HumanMessage("\ud83d\ude00 two halves"),
]


def run(coro):
    return asyncio.run(coro)


def made(integrations, session_id, user="alice", key="svc"):
    return MemoryChatMessageHistory(session_id, user=user, base_url=integrations.base, token=integrations.keys[key])


@pytest.fixture(params=["memory", "service"])
def history(request, integrations):
    """The same cases on LangChain's own history and on ours."""
    if request.param == "memory":
        return InMemoryChatMessageHistory()
    return made(integrations, f"s-{uuid.uuid4().hex[:10]}")


def test_it_is_a_chat_message_history():
    assert issubclass(MemoryChatMessageHistory, BaseChatMessageHistory)


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: f"{m.type}:{str(m.content)[:12]}")
def test_every_message_comes_back_exactly(message):
    encoded = encode_message(message)
    encoded["content"].encode("utf-8")  # storable: no lone surrogate, and no NUL either
    assert "\x00" not in encoded["content"]
    assert decode_message(encoded) == message


def test_add_read_clear(history):
    history.add_user_message("My favourite city is Lisbon")
    history.add_ai_message("Noted.")
    history.add_messages(MESSAGES)
    assert history.messages == [HumanMessage("My favourite city is Lisbon"), AIMessage("Noted."), *MESSAGES]
    history.clear()
    assert history.messages == []


def test_add_read_clear_async(history):
    async def scenario():
        await history.aadd_messages(MESSAGES[:3])
        await history.aadd_messages(MESSAGES[3:])
        read = await history.aget_messages()
        await history.aclear()
        return read, await history.aget_messages()

    assert run(scenario()) == (MESSAGES, [])


def test_many_messages_are_written_in_calls_and_read_in_pages(history):
    many = [HumanMessage(f"message {n}") if n % 2 else AIMessage(f"answer {n}") for n in range(250)]
    history.add_messages(many)
    assert history.messages == many
    assert run(history.aget_messages()) == many


class EchoModel(BaseChatModel):
    """The chat model: it answers what it was last told, and keeps what it saw."""

    seen: list = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "echo"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.seen.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(f"You said: {messages[-1].content}"))])


def test_a_runnable_keeps_its_history_in_the_service_across_processes(integrations):
    session_id = f"trip-{uuid.uuid4().hex[:8]}"
    model = EchoModel()
    # Each call makes its history anew, as another process would: found again by its session id.
    chain = RunnableWithMessageHistory(model, lambda sid: made(integrations, sid))
    config = {"configurable": {"session_id": session_id}}
    assert chain.invoke("My favourite city is Lisbon", config=config).content == "You said: My favourite city is Lisbon"
    assert run(chain.ainvoke("Where should I go?", config=config)).content == "You said: Where should I go?"
    assert [(m.type, m.content) for m in model.seen[-1]] == [
        ("human", "My favourite city is Lisbon"),
        ("ai", "You said: My favourite city is Lisbon"),
        ("human", "Where should I go?"),
    ]
    assert len(made(integrations, session_id).messages) == 4
    # the turns are the user's conversation, which the history tools search
    with Client(integrations.base, integrations.keys["svc"]) as svc:
        conversations = [c for c in svc.iter_conversations(user="alice") if c.get("external_id") == session_id]
        assert len(conversations) == 1
        with svc.run(conversations[0], worker_id="w-lc") as agent_run:
            found = agent_run.search_history("favourite city Lisbon")
        assert any("Lisbon" in hit["snippet"] for hit in found["results"])


def test_messages_written_by_others_read_as_langchain_messages(integrations):
    history = made(integrations, f"s-{uuid.uuid4().hex[:8]}")
    history.add_user_message("first")
    with Client(integrations.base, integrations.keys["svc"]) as svc:
        conversation = svc.list_conversations(user="alice", external_id=history.session_id)["results"][0]["id"]
        svc.add_messages(
            conversation,
            [
                {"role": "assistant", "content": "from the API"},
                {"role": "system", "content": "a rule"},
                {"role": "tool", "type": "tool_result", "content": "42"},
            ],
        )
    assert history.messages == [
        HumanMessage("first"),
        AIMessage("from the API"),
        SystemMessage("a rule"),
        ChatMessage(role="tool", content="42"),
    ]


def test_only_a_service_key_for_a_user_in_its_reach(integrations):
    session_id = f"s-{uuid.uuid4().hex[:8]}"
    alices = made(integrations, session_id)
    alices.add_user_message("alice's quokka")
    # Limited to bob, alice does not exist for the key; nor does nobody for any key. Their
    # histories read as histories nothing was added to, and adding to them is refused.
    for key, user in (("lsvc", "alice"), ("svc", "nobody")):
        other = made(integrations, session_id, user=user, key=key)
        assert other.messages == [] and run(other.aget_messages()) == []
        other.clear()
        run(other.aclear())
        with pytest.raises(memsvc.NotFound):
            other.add_user_message("mine now")
        with pytest.raises(memsvc.NotFound):
            run(other.aadd_messages([HumanMessage("mine now")]))
    forged = MemoryChatMessageHistory(session_id, user="alice", base_url=integrations.base, token="forged")
    for call in (lambda: forged.messages, lambda: forged.add_user_message("x"), forged.clear):
        with pytest.raises(memsvc.AuthenticationFailed):
            call()
    # A user's own key writes no conversations; it reads its own, as the API lets it.
    own = made(integrations, session_id, key="alice")
    with pytest.raises(memsvc.PermissionDenied):
        own.add_user_message("mine now")
    assert own.messages == [HumanMessage("alice's quokka")] == alices.messages
    # bob's history with the same id is another conversation
    bobs = made(integrations, session_id, user="bob", key="lsvc")
    assert bobs.messages == []
    bobs.add_user_message("bob's own")
    assert alices.messages == [HumanMessage("alice's quokka")] and bobs.messages == [HumanMessage("bob's own")]


def test_clear_forgets_the_messages(integrations):
    history = made(integrations, f"s-{uuid.uuid4().hex[:8]}")
    history.add_messages([HumanMessage("I am learning the oboe"), AIMessage("Lovely")])
    conversation = history._found()
    history.clear()
    with Client(integrations.base, integrations.keys["svc"]) as svc:
        assert svc.list_messages(conversation)["count"] == 0
        with svc.run(conversation, user="alice", worker_id="w-lc2") as agent_run:
            found = agent_run.search_history("learning the oboe")["results"]
        # the user's other chats may still answer; nothing of this one, nor the oboe
        assert all(hit["thread_id"] != conversation and "oboe" not in hit["snippet"] for hit in found)


def test_a_message_too_large_is_refused_before_anything_of_the_call_is_stored(integrations):
    history = made(integrations, f"s-{uuid.uuid4().hex[:8]}")
    huge = ToolMessage("<html>" + "p" * 300_000, tool_call_id="c1")
    for add in (history.add_messages, lambda messages: run(history.aadd_messages(messages))):
        with pytest.raises(ValueError, match="Nothing of this call was stored"):
            add([HumanMessage("fetch it"), huge])
    assert history.messages == []
    # 180,001 bytes of text kept whole (a NUL) is kept as it is written, not escaped to twice that
    kept = HumanMessage("日本" * 30_000 + "\x00")
    history.add_messages([kept])
    assert history.messages == [kept]


def test_a_call_is_written_whole_whatever_its_messages_hold(integrations):
    """Found by a review: 120 messages and one holding NaN stopped after the first call (100)."""
    history = made(integrations, f"s-{uuid.uuid4().hex[:8]}")
    many = [HumanMessage(f"message {n}") for n in range(120)]
    odd = AIMessage("scored", response_metadata={"logprob": float("nan")})
    history.add_messages([*many, odd])
    read = history.messages
    assert read[:120] == many and len(read) == 121
    assert read[120].content == "scored" and read[120].response_metadata["logprob"] != 0  # NaN


@pytest.mark.parametrize(
    ("chunk", "role"),
    [
        (HumanMessageChunk("streamed in"), "user"),
        (AIMessageChunk("streamed out"), "assistant"),
        (SystemMessageChunk("a rule"), "system"),
        (ToolMessageChunk("42", tool_call_id="c1"), "tool"),
    ],
)
def test_a_streamed_chunk_is_kept_under_its_messages_role(chunk, role):
    encoded = encode_message(chunk)
    assert encoded["role"] == role and decode_message(encoded) == chunk


def test_a_history_closes_only_the_connections_it_opened(integrations):
    with Client(integrations.base, integrations.keys["svc"]) as client:
        shared = memsvc.AsyncClient(integrations.base, integrations.keys["svc"])
        session_id = f"s-{uuid.uuid4().hex[:8]}"
        first = MemoryChatMessageHistory(session_id, user="alice", client=client, aclient=shared)
        first.add_user_message("one")
        first.close()
        run(first.aclose())
        second = MemoryChatMessageHistory(session_id, user="alice", client=client, aclient=shared)
        assert second.messages == [HumanMessage("one")] == run(second.aget_messages())
        own = made(integrations, session_id)
        assert own.messages == [HumanMessage("one")]
        own.close()
        own.close()  # again: nothing left to close


@pytest.mark.parametrize("session_id", ["", "   ", "x" * 201])
def test_an_empty_session_id_is_refused_rather_than_a_new_conversation_each_time(integrations, session_id):
    with pytest.raises(ValueError, match="session_id"):
        made(integrations, session_id)


def test_reading_a_history_nothing_was_added_to_makes_no_conversation(integrations, monkeypatch):
    session_id = f"s-{uuid.uuid4().hex[:8]}"
    history = made(integrations, session_id)
    assert history.messages == [] and run(history.aget_messages()) == []
    history.clear()
    history.add_messages([])
    with Client(integrations.base, integrations.keys["svc"]) as svc:
        assert svc.list_conversations(user="alice", external_id=session_id)["count"] == 0
    monkeypatch.setenv("MEMSVC_URL", integrations.base)
    monkeypatch.setenv("MEMSVC_TOKEN", integrations.keys["svc"])
    MemoryChatMessageHistory.from_env(session_id, user="alice").add_user_message("now there is one")
    assert made(integrations, session_id).messages == [HumanMessage("now there is one")]
    with Client(integrations.base, integrations.keys["svc"]) as svc:
        assert svc.list_conversations(user="alice", external_id=session_id)["count"] == 1
