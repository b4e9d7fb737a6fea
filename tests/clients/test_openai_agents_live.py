"""``memsvc.integrations.openai_agents.MemorySession`` with the OpenAI Agents SDK itself, against a
live server: the session's contract (what ``SQLiteSession`` does), a real ``Runner.run`` that keeps
its history in the service (the model — an LLM endpoint — is the one thing replaced), the same
session found from another process, its turns in the history tools, and the rules."""

import asyncio
import uuid

import httpx
import memsvc
import pytest
from agents import Agent, Runner, set_tracing_disabled
from agents.items import ModelResponse
from agents.memory import SQLiteSession
from agents.memory.session import SessionABC
from agents.models.interface import Model
from agents.usage import Usage
from memsvc import Client
from memsvc.integrations.openai_agents import MemorySession, decode, encode, settled
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

set_tracing_disabled(True)  # traces would go to the model's makers

ITEMS = [
    {"role": "user", "content": "Hi, I'm planning a trip to Kyoto."},
    {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Kyoto in spring is lovely!", "annotations": [], "logprobs": []}],
    },
    {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": '{"city": "Kyoto"}', "id": "fc_1"},
    {"type": "function_call_output", "call_id": "call_1", "output": "18°C, sunny"},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Look up the weather."}]},
    {
        "role": "user",
        "content": [{"type": "input_text", "text": "Book a ryokan"}, {"type": "input_text", "text": "near Gion"}],
    },
    {"role": "developer", "content": "Be brief."},
]


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(params=["sqlite", "service"])
def session(request, integrations):
    """The same cases on the SDK's own SQLiteSession and on ours."""
    session_id = f"s-{uuid.uuid4().hex[:10]}"
    if request.param == "sqlite":
        return SQLiteSession(session_id)
    return MemorySession(session_id, user="alice", base_url=integrations.base, token=integrations.keys["svc"])


def test_it_is_an_agents_session():
    assert issubclass(MemorySession, SessionABC)


@pytest.mark.parametrize("item", ITEMS)
def test_every_item_comes_back_exactly(item):
    assert decode({"role": "x", "content": "", **encode(item)}) == item


def test_add_get_limit_pop_clear(session):
    async def scenario():
        assert await session.get_items() == []
        assert await session.pop_item() is None
        await session.add_items(ITEMS[:4])
        await session.add_items(ITEMS[4:])
        assert await session.get_items() == ITEMS
        assert await session.get_items(limit=2) == ITEMS[-2:]
        assert await session.get_items(limit=100) == ITEMS
        assert await session.get_items(limit=0) == []
        assert await session.pop_item() == ITEMS[-1]
        assert await session.get_items() == ITEMS[:-1]
        await session.clear_session()
        assert await session.get_items() == []

    run(scenario())


def test_many_items_page(session):
    async def scenario():
        items = [{"role": "user" if i % 2 else "assistant", "content": f"turn {i}"} for i in range(120)]
        await session.add_items(items)
        assert await session.get_items() == items
        assert await session.get_items(limit=75) == items[-75:]

    run(scenario())


class EchoModel(Model):
    """The LLM endpoint, replaced: answers what the user said last, and keeps what it was given."""

    def __init__(self):
        self.inputs = []

    async def get_response(
        self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, **kwargs
    ):
        self.inputs.append(list(input) if isinstance(input, list) else [{"role": "user", "content": input}])
        last = next(i for i in reversed(self.inputs[-1]) if i.get("role") == "user")
        text = last["content"] if isinstance(last["content"], str) else last["content"][0]["text"]
        message = ResponseOutputMessage(
            id=f"msg_{uuid.uuid4().hex[:8]}",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text=f"You said: {text}", annotations=[])],
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError


def test_a_runner_keeps_its_history_in_the_service_across_processes(integrations):
    session_id = f"trip-{uuid.uuid4().hex[:8]}"
    model = EchoModel()
    agent = Agent(name="Planner", instructions="Plan trips.", model=model)

    async def scenario():
        first = MemorySession(session_id, user="alice", base_url=integrations.base, token=integrations.keys["svc"])
        result = await Runner.run(agent, "My favourite city is Lisbon", session=first)
        assert result.final_output == "You said: My favourite city is Lisbon"
        # another process: a new session object with the same id finds the conversation
        later = MemorySession(session_id, user="alice", base_url=integrations.base, token=integrations.keys["svc"])
        await Runner.run(agent, "Where should I go?", session=later)
        seen = model.inputs[-1]
        assert [i.get("content") for i in seen if i.get("role") == "user"] == [
            "My favourite city is Lisbon",
            "Where should I go?",
        ]
        assert await later.conversation_id() == await first.conversation_id()
        assert len(await later.get_items()) == 4

    run(scenario())
    # the turns are the user's conversation, which the history tools search
    with Client(integrations.base, integrations.keys["svc"]) as svc:
        conversations = [c for c in svc.iter_conversations(user="alice") if c.get("external_id") == session_id]
        assert len(conversations) == 1
        chat = conversations[0]
        with svc.run(chat, worker_id="w1") as agent_run:
            found = agent_run.search_history("favourite city Lisbon")
        assert any("Lisbon" in hit["snippet"] for hit in found["results"])


def test_only_a_service_key_for_a_user_in_its_reach(integrations):
    keys = integrations.keys

    async def scenario():
        alices = MemorySession(f"s-{uuid.uuid4().hex[:8]}", user="alice", base_url=integrations.base, token=keys["svc"])
        await alices.add_items([{"role": "user", "content": "alice's quokka"}])
        # Limited to bob, alice does not exist for the key; nor does nobody for any key. Their
        # sessions read as sessions nothing was added to (empty: a reader learns nothing), and
        # adding to them is refused.
        for token, user in ((keys["lsvc"], "alice"), (keys["svc"], "nobody")):
            other = MemorySession(alices.session_id, user=user, base_url=integrations.base, token=token)
            assert await other.get_items() == [] and await other.pop_item() is None
            await other.clear_session()
            with pytest.raises(memsvc.NotFound):
                await other.add_items([{"role": "user", "content": "mine now"}])
        forged = MemorySession(alices.session_id, user="alice", base_url=integrations.base, token="forged")
        for call in (forged.get_items(), forged.add_items([{"role": "user", "content": "x"}]), forged.clear_session()):
            with pytest.raises(memsvc.AuthenticationFailed):
                await call
        # A user's own key writes no conversations; it reads its own, as the API lets it.
        own = MemorySession(alices.session_id, user="alice", base_url=integrations.base, token=keys["alice"])
        with pytest.raises(memsvc.PermissionDenied):
            await own.add_items([{"role": "user", "content": "mine now"}])
        assert await own.get_items() == [{"role": "user", "content": "alice's quokka"}]
        assert await alices.get_items() == [{"role": "user", "content": "alice's quokka"}]
        # the limited key's own user: a session of bob's with the same id is another conversation
        bobs = MemorySession(alices.session_id, user="bob", base_url=integrations.base, token=keys["lsvc"])
        assert await bobs.get_items() == []
        assert await bobs.conversation_id() != await alices.conversation_id()

    run(scenario())


def test_pop_and_clear_forget_the_messages(integrations):
    async def scenario():
        session = MemorySession(
            f"s-{uuid.uuid4().hex[:8]}", user="alice", base_url=integrations.base, token=integrations.keys["svc"]
        )
        await session.add_items(
            [{"role": "user", "content": "I am learning the oboe"}, {"role": "assistant", "content": "Lovely"}]
        )
        conversation = await session.conversation_id()
        await session.pop_item()
        await session.clear_session()
        return conversation

    conversation = run(scenario())
    with Client(integrations.base, integrations.keys["svc"]) as svc:
        assert svc.list_messages(conversation)["count"] == 0
        with svc.run(conversation, user="alice", worker_id="w2") as agent_run:
            found = agent_run.search_history("learning the oboe")["results"]
        # the user's other chats (other tests') may still answer; nothing of this one, nor the oboe
        assert all(hit["thread_id"] != conversation and "oboe" not in hit["snippet"] for hit in found)


# --- found by running the SDK's own session beside ours ----------------------------------------
UNSTORABLE = [
    {"role": "user", "content": "a NUL \x00 inside"},
    {"type": "function_call_output", "call_id": "c9", "output": "half a pair \ud800 here"},
    {"role": "assistant", "content": [{"type": "output_text", "text": "nul\x00", "annotations": []}]},
]
# Found by a review: two lone surrogates side by side came back as one character (as they do
# from the SDK's SQLiteSession, which keeps JSON), and no JSON value (an infinity) failed the call
# after the first of its requests.
BEYOND_JSON = [
    {"role": "user", "content": "\ud83d\ude00 two halves"},
    {"type": "reasoning", "id": "rs_9", "summary": [], "score": float("inf")},
]


@pytest.mark.parametrize("item", UNSTORABLE + BEYOND_JSON)
def test_an_item_of_text_no_service_stores_as_it_is_comes_back_exactly(item):
    encoded = encode(item)
    assert "\x00" not in encoded["content"]
    encoded["content"].encode("utf-8")  # storable
    assert decode({"role": "x", "content": "", **encoded}) == item


def test_those_items_go_through_the_service_too(session):
    async def scenario():
        await session.add_items(UNSTORABLE)
        assert await session.get_items() == UNSTORABLE

    run(scenario())


def test_items_json_cannot_hold_exactly_are_kept_whole_with_the_rest_of_the_call(integrations):
    session = MemorySession(
        f"s-{uuid.uuid4().hex[:8]}", user="alice", base_url=integrations.base, token=integrations.keys["svc"]
    )
    items = [{"role": "user", "content": f"item {n}"} for n in range(120)] + BEYOND_JSON

    async def scenario():
        await session.add_items(items)
        return await session.get_items()

    assert run(scenario()) == items


def test_an_item_too_large_is_refused_before_anything_of_the_call_is_stored(integrations):
    session = MemorySession(
        f"s-{uuid.uuid4().hex[:8]}", user="alice", base_url=integrations.base, token=integrations.keys["svc"]
    )
    huge = {"type": "function_call_output", "call_id": "c1", "output": "<html>" + "p" * 300_000}

    async def scenario():
        with pytest.raises(ValueError, match="Nothing of this call was stored"):
            await session.add_items([{"role": "user", "content": "fetch it"}, huge])
        return await session.get_items()

    assert run(scenario()) == []


def test_a_session_works_from_one_event_loop_after_another(session):
    run(session.add_items(ITEMS[:2]))
    assert run(session.get_items()) == ITEMS[:2]
    assert run(session.pop_item()) == ITEMS[1]


def test_session_settings_may_be_a_dict_as_for_the_sdks_own_sessions(integrations):
    model = EchoModel()
    agent = Agent(name="Helper", model=model)
    settings = {"limit": 2}
    ours = MemorySession(
        f"s-{uuid.uuid4().hex[:8]}",
        user="alice",
        base_url=integrations.base,
        token=integrations.keys["svc"],
        session_settings=settings,
    )
    theirs = SQLiteSession(f"s-{uuid.uuid4().hex[:8]}", session_settings=settings)
    for session in (ours, theirs):
        for text in ("one", "two", "three"):
            run(Runner.run(agent, text, session=session))
    assert ours.session_settings.limit == 2

    def said(given):
        return [
            (i.get("role"), i["content"] if isinstance(i["content"], str) else i["content"][0]["text"]) for i in given
        ]

    # The third turn saw the same two items before it with either session (ids apart).
    assert (
        said(model.inputs[2])
        == said(model.inputs[5])
        == [("user", "two"), ("assistant", "You said: two"), ("user", "three")]
    )


def test_pop_item_is_none_only_when_the_session_is_empty_while_others_pop(integrations):
    session_id = f"s-{uuid.uuid4().hex[:8]}"

    def made():
        return MemorySession(session_id, user="alice", base_url=integrations.base, token=integrations.keys["svc"])

    items = [{"role": "user", "content": f"i{n}"} for n in range(12)]

    async def scenario():
        await made().add_items(items)
        popped = await asyncio.gather(*(made().pop_item() for _ in range(6)))
        return popped, await made().get_items()

    popped, left = run(scenario())
    assert None not in popped and left == items[:6]
    assert sorted(p["content"] for p in popped) == sorted(i["content"] for i in items[6:])


@pytest.mark.parametrize("session_id", ["", "   "])
def test_an_empty_session_id_is_refused_rather_than_a_new_conversation_each_time(integrations, session_id):
    with pytest.raises(ValueError, match="session_id"):
        MemorySession(session_id, user="alice", base_url=integrations.base, token=integrations.keys["svc"])


def test_reading_a_session_nothing_was_added_to_makes_no_conversation(integrations):
    session_id = f"s-{uuid.uuid4().hex[:8]}"
    session = MemorySession(session_id, user="alice", base_url=integrations.base, token=integrations.keys["svc"])

    async def reads():
        assert await session.get_items() == []
        assert await session.pop_item() is None
        await session.clear_session()

    run(reads())
    with Client(integrations.base, integrations.keys["svc"]) as svc:
        assert svc.list_conversations(user="alice", external_id=session_id)["count"] == 0
    run(session.add_items([{"role": "user", "content": "now there is one"}]))
    again = MemorySession(session_id, user="alice", base_url=integrations.base, token=integrations.keys["svc"])
    assert run(again.get_items()) == [{"role": "user", "content": "now there is one"}]
    with Client(integrations.base, integrations.keys["svc"]) as svc:
        assert svc.list_conversations(user="alice", external_id=session_id)["count"] == 1


def test_items_added_at_once_by_several_writers_stay_together(integrations):
    """As ``SQLiteSession`` keeps each ``add_items`` together: a reasoning item is followed by
    its own next item, whoever else writes to the session meanwhile."""
    session_id = f"s-{uuid.uuid4().hex[:8]}"

    def made():
        return MemorySession(session_id, user="alice", base_url=integrations.base, token=integrations.keys["svc"])

    async def scenario():
        await made().add_items([{"role": "user", "content": "start"}])
        await asyncio.gather(
            *(made().add_items([{"role": "user", "content": f"{w} {n}"} for n in range(4)]) for w in "abcdefgh")
        )
        return await made().get_items()

    names = [item["content"].split()[0] for item in run(scenario())[1:]]
    runs = [name for i, name in enumerate(names) if i == 0 or names[i - 1] != name]
    assert sorted(runs) == list("abcdefgh")


def _cancelled_at(integrations, session_id, method, path_end):
    """A session whose task is cancelled while its first ``method`` request to a path ending in
    ``path_end`` is on its way (the caller's task: ``state["task"]``, set by the test)."""
    state = {"task": None, "cancelled": 0}

    async def on_request(request):
        if request.method == method and request.url.path.rstrip("/").endswith(path_end) and not state["cancelled"]:
            state["cancelled"] += 1
            # While the request is on its way (from this hook, the cancellation would come before
            # it, where httpx lets none in).
            asyncio.get_running_loop().call_later(0.005, state["task"].cancel)

    http = httpx.AsyncClient(event_hooks={"request": [on_request]})
    client = memsvc.AsyncClient(integrations.base, integrations.keys["svc"], http=http)
    return MemorySession(session_id, user="alice", client=client), state, http


def test_a_write_cancelled_halfway_is_written_whole_then_the_cancellation_raised(integrations):
    """As the SDK's own sessions since 0.25: a runner cancelled while its turn's items are being
    written (here 150 items, two calls) must not leave the first call's items without the next
    (a function call kept without its output is refused by the model on the next turn)."""
    session_id = f"s-{uuid.uuid4().hex[:8]}"
    items = [{"role": "user", "content": f"item {n}"} for n in range(150)]
    fresh = MemorySession(session_id, user="alice", base_url=integrations.base, token=integrations.keys["svc"])

    async def cancelled(call, method, path_end):
        session, state, http = _cancelled_at(integrations, session_id, method, path_end)
        state["task"] = asyncio.ensure_future(call(session))
        with pytest.raises(asyncio.CancelledError):
            await state["task"]
        await http.aclose()
        assert state["cancelled"] == 1

    async def scenario():
        await cancelled(lambda s: s.add_items(items), "POST", "/messages/batch")
        assert await fresh.get_items() == items  # without the wait: none of them
        await cancelled(lambda s: s.pop_item(), "DELETE", "")
        assert await fresh.get_items() == items[:-1]
        await cancelled(lambda s: s.clear_session(), "DELETE", "/messages")
        assert await fresh.get_items() == []

    run(scenario())


def test_the_wait_for_a_write_passes_on_its_outcome_and_defers_a_cancellation():
    """``settled``, used where the SDK has no ``await_session_mutation`` (before 0.25)."""

    async def write(log, fail=False):
        await asyncio.sleep(0.05)
        log.append("written")
        if fail:
            raise ValueError("refused")
        return "done"

    async def scenario():
        log = []
        assert await settled(write(log)) == "done"
        with pytest.raises(ValueError, match="refused"):
            await settled(write(log, fail=True))
        for fail in (False, True):
            task = asyncio.ensure_future(settled(write(log, fail)))
            await asyncio.sleep(0.01)
            task.cancel()
            await asyncio.sleep(0.01)
            task.cancel()  # twice: still once the write has ended
            with pytest.raises(asyncio.CancelledError):
                await task
        return log

    assert run(scenario()) == ["written"] * 4
