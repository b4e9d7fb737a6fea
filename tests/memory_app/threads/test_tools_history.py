import json
from collections import OrderedDict

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from config.budgets import truncate_utf8
from config.lowtrust import DATA_MARK
from memory_app.notes import services as notes_services
from memory_app.search import dialogue
from memory_app.threads import candidates
from memory_app.threads import services as thread_services
from memory_app.threads.history import (
    READ_CONTENT_BYTES,
    READ_MESSAGE_BYTES,
    READ_RESPONSE_BYTES,
    READ_TOOL_CALL_BYTES,
    READ_TOOL_CALLS_BYTES,
    SEARCH_HIT_BYTES,
    SEARCH_RESPONSE_BYTES,
)

pytestmark = pytest.mark.django_db

SEARCH = "/api/runs/{}/tools/search_thread_messages"
READ = "/api/runs/{}/tools/read_thread_messages"


def _thread(svc, user, **kwargs):
    return thread_services.conversation_create(
        actor=svc, username=user.username, title=kwargs.pop("title", "thread"), **kwargs
    )


def _say(svc, thread, content, role="user", **kwargs):
    return thread_services.message_create(actor=svc, conversation_id=thread.pk, role=role, content=content, **kwargs)


def _search(run_api, handle, query, **extra):
    response = run_api(handle.token).post(SEARCH.format(handle.id), {"query": query, **extra}, format="json")
    assert response.status_code == 200, response.content
    return response


def _read(run_api, handle, thread_id, **extra):
    response = run_api(handle.token).post(READ.format(handle.id), {"thread_id": thread_id, **extra}, format="json")
    return response


# --- truncate_utf8 --------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["中文字符" * 300, "🙂" * 500, "aé中🙂" * 200, "x" * 2000])
@pytest.mark.parametrize("limit", [0, 1, 5, 13, 14, 15, 100, 511, 512, 513])
def test_truncate_utf8_never_exceeds_budget_or_splits_code_points(text, limit):
    cut, truncated = truncate_utf8(text, limit)
    data = cut.encode("utf-8")
    assert len(data) <= limit
    data.decode("utf-8")  # valid UTF-8
    assert truncated
    if limit >= 20:
        assert cut.endswith("…[truncated]")
        # As close to the limit as the code point width allows.
        assert len(data) > limit - 4


def test_truncate_utf8_leaves_short_text_alone():
    assert truncate_utf8("中文🙂", 10) == ("中文🙂", False)
    # No room for the marker: the text is omitted whole, never shown cut without a marker.
    assert truncate_utf8("中文🙂", 9) == ("", True)
    assert truncate_utf8("中文🙂", 20, marker="~") == ("中文🙂", False)
    assert truncate_utf8("中文🙂abc", 11, marker="~") == ("中文🙂~", True)
    assert truncate_utf8("中文🙂abc", 10, marker="~") == ("中文~", True)


# --- visibility -----------------------------------------------------------------------------


@pytest.fixture
def leaky_history(svc, alice, mallory):
    """Alice's visible thread plus every kind of thing that must never appear."""
    visible = _thread(svc, alice, title="Billing")
    _say(svc, visible, "We picked PostgreSQL for the billing database. MARK-VISIBLE-USER")
    answer = _say(
        svc,
        visible,
        "Agreed, billing database is PostgreSQL. MARK-VISIBLE-ASSISTANT",
        role="assistant",
        metadata={"note": "billing database MARK-METADATA"},
        attachments=[{"name": "billing database MARK-ATTACHMENT"}],
        images=[{"url": "billing database MARK-IMAGE"}],
        feedback={"comment": "billing database MARK-FEEDBACK"},
        tool_calls=[
            {
                "name": "sql",
                "input": {"q": "billing database MARK-TOOLINPUT"},
                "output": "MARK-TOOLOUTPUT",
                "status": "ok",
                "error": "MARK-TOOLERROR",
            }
        ],
    )
    _say(svc, visible, "billing database system prompt MARK-SYSTEM", role="system")
    _say(svc, visible, "billing database tool output MARK-TOOLROLE", role="tool")
    _say(svc, visible, "billing database call MARK-TOOLCALLTYPE", role="assistant", type="tool_call")
    _say(svc, visible, "billing database result MARK-TOOLRESULTTYPE", role="assistant", type="tool_result")
    _say(svc, visible, "billing database picture MARK-IMAGETYPE", role="user", type="image")
    other_user = _thread(svc, mallory)
    _say(svc, other_user, "billing database MARK-OTHER-USER")
    agent_call = _thread(svc, alice, source="agent_call")
    _say(svc, agent_call, "billing database MARK-AGENT-CALL")
    evaluation = _thread(svc, alice, source="agent_evaluation")
    _say(svc, evaluation, "billing database MARK-EVALUATION")
    child = _thread(svc, alice, parent_id=visible.pk)
    _say(svc, child, "billing database MARK-SUBAGENT-CHILD")
    archived = _thread(svc, alice)
    _say(svc, archived, "billing database MARK-ARCHIVED")
    archived.status = "archived"
    archived.save(update_fields=["status"])
    return {"visible": visible, "answer": answer, "hidden": [other_user, agent_call, evaluation, child, archived]}


HIDDEN_MARKERS = [
    "MARK-METADATA",
    "MARK-ATTACHMENT",
    "MARK-IMAGE",
    "MARK-FEEDBACK",
    "MARK-TOOLINPUT",
    "MARK-TOOLOUTPUT",
    "MARK-TOOLERROR",
    "MARK-SYSTEM",
    "MARK-TOOLROLE",
    "MARK-TOOLCALLTYPE",
    "MARK-TOOLRESULTTYPE",
    "MARK-IMAGETYPE",
    "MARK-OTHER-USER",
    "MARK-AGENT-CALL",
    "MARK-EVALUATION",
    "MARK-SUBAGENT-CHILD",
    "MARK-ARCHIVED",
]


def test_search_shows_only_visible_user_and_assistant_text(run_api, make_run, alice, leaky_history):
    handle = make_run(alice)
    body = _search(run_api, handle, "billing database").content.decode()
    assert "MARK-VISIBLE-USER" in body and "MARK-VISIBLE-ASSISTANT" in body
    for marker in HIDDEN_MARKERS:
        assert marker not in body, marker
    data = json.loads(body)
    assert data["trust"] == "low"
    assert {hit["thread_id"] for hit in data["results"]} == {leaky_history["visible"].pk}


@pytest.mark.parametrize("include_tools", [False, True])
def test_read_shows_only_visible_messages(run_api, make_run, alice, leaky_history, include_tools):
    handle = make_run(alice)
    response = _read(run_api, handle, leaky_history["visible"].pk, include_tools=include_tools)
    assert response.status_code == 200, response.content
    body = response.content.decode()
    assert "MARK-VISIBLE-USER" in body and "MARK-VISIBLE-ASSISTANT" in body
    allowed_with_tools = {"MARK-TOOLINPUT", "MARK-TOOLOUTPUT", "MARK-TOOLERROR"} if include_tools else set()
    for marker in HIDDEN_MARKERS:
        if marker not in allowed_with_tools:
            assert marker not in body, marker
    data = json.loads(body)
    assert [m["role"] for m in data["messages"]] == ["user", "assistant"]
    assert set(data["messages"][0]) == {"id", "role", "created_at", "sent_at", "content", "truncated"}
    if include_tools:
        assert [set(call) for call in data["tool_calls"]] == [
            {"id", "name", "input", "output", "status", "error", "truncated", "omitted"}
        ]
    else:
        assert "tool_calls" not in data


def test_hits_and_read_messages_say_when_each_was_said(run_api, make_run, svc, alice):
    """A transcript imported later keeps its dates: a hit and a read message carry ``sent_at``
    (when it was said), and a message given none is said when it was stored."""
    from datetime import UTC, datetime

    thread = _thread(svc, alice, title="trip")
    said = datetime(2023, 5, 7, 19, 0, tzinfo=UTC)
    old = _say(svc, thread, "I went to the pottery class with my sister", sent_at=said)
    new = _say(svc, thread, "The pottery bowl came out of the kiln today", role="assistant")
    handle = make_run(alice)
    hits = {hit["message_id"]: hit for hit in json.loads(_search(run_api, handle, "pottery").content)["results"]}
    assert set(hits) == {old.pk, new.pk}
    assert hits[old.pk]["sent_at"] == said.isoformat() != hits[old.pk]["created_at"]
    new.refresh_from_db()
    assert hits[new.pk]["sent_at"] == hits[new.pk]["created_at"] == new.created_at.isoformat()
    read = json.loads(_read(run_api, handle, thread.pk).content)["messages"]
    assert [(m["id"], m["sent_at"]) for m in read] == [(old.pk, said.isoformat()), (new.pk, new.created_at.isoformat())]


def test_hidden_threads_cannot_be_read(run_api, make_run, alice, leaky_history):
    handle = make_run(alice)
    for thread in leaky_history["hidden"]:
        response = _read(run_api, handle, thread.pk)
        assert (response.status_code, response.json()["error"]["code"]) == (404, "thread_not_found")
        assert "MARK" not in response.content.decode()


def test_search_never_loads_tool_calls_and_read_only_when_asked(make_run, alice, leaky_history):
    from memory_app.runs import tools

    handle = make_run(alice)
    with CaptureQueriesContext(connection) as queries:
        tools.search_thread_messages(credential=handle.credential, query="billing database")
    assert not any("toolcall" in q["sql"].lower() for q in queries.captured_queries)
    with CaptureQueriesContext(connection) as queries:
        tools.read_thread_messages(credential=handle.credential, thread_id=leaky_history["visible"].pk)
    assert not any("toolcall" in q["sql"].lower() for q in queries.captured_queries)
    with CaptureQueriesContext(connection) as queries:
        tools.read_thread_messages(
            credential=handle.credential, thread_id=leaky_history["visible"].pk, include_tools=True
        )
    assert sum("toolcall" in q["sql"].lower() for q in queries.captured_queries) == 1


def test_history_tools_refuse_subagents_and_disabled_memory(run_api, make_run, alice, leaky_history):
    sub = make_run(alice, kind="subagent")
    response = run_api(sub.token).post(SEARCH.format(sub.id), {"query": "billing"}, format="json")
    assert (response.status_code, response.json()["error"]["code"]) == (403, "not_top_level_run")
    response = _read(run_api, sub, leaky_history["visible"].pk)
    assert (response.status_code, response.json()["error"]["code"]) == (403, "not_top_level_run")
    handle = make_run(alice)
    notes_services.user_settings_update(user=alice, enable_memory=False)
    response = run_api(handle.token).post(SEARCH.format(handle.id), {"query": "billing"}, format="json")
    assert (response.status_code, response.json()["error"]["code"]) == (403, "memory_disabled")
    assert "MARK" not in response.content.decode()


def test_history_tool_schemas_take_no_identity_arguments(run_api, make_run, alice, leaky_history):
    handle = make_run(alice)
    for url, body in (
        (SEARCH, {"query": "billing", "user_id": 1}),
        (READ, {"thread_id": leaky_history["visible"].pk, "owner": "mallory"}),
    ):
        response = run_api(handle.token).post(url.format(handle.id), body, format="json")
        assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_arguments")


# --- ranking --------------------------------------------------------------------------------


def test_search_ranks_a_natural_language_question(run_api, make_run, svc, alice, settings):
    thread = _thread(svc, alice)
    _say(svc, thread, "For the billing service we picked PostgreSQL as the database, not MySQL.")
    _say(svc, thread, "The weather is nice today and we went for a walk.")
    _say(svc, thread, "Which color did you pick for the logo?")
    _say(svc, thread, "The analytics database is ClickHouse.")
    handle = make_run(alice)
    hits = _search(run_api, handle, "which database did we pick for billing?").json()["results"]
    assert hits and "PostgreSQL" in hits[0]["snippet"]
    # Ranked by meaning too, so a message sharing no word may follow; by words only it is not a hit.
    assert all("weather" not in hit["snippet"] for hit in hits[:3])
    settings.MEMORY_SEARCH_MODE = "lexical"
    hits = _search(run_api, handle, "which database did we pick for billing?").json()["results"]
    assert "PostgreSQL" in hits[0]["snippet"] and all("weather" not in hit["snippet"] for hit in hits)


def test_search_matches_chinese_without_exact_substring(run_api, make_run, svc, alice, settings):
    thread = _thread(svc, alice)
    _say(svc, thread, "我们决定账单系统使用 PostgreSQL 数据库。")
    _say(svc, thread, "今天天气很好，我们去公园散步了。")
    handle = make_run(alice)
    hits = _search(run_api, handle, "账单用什么数据库").json()["results"]
    assert hits and "PostgreSQL" in hits[0]["snippet"]
    # The next turn is embedded with this one as its context: by meaning it may follow, by
    # words it is no hit.
    settings.MEMORY_SEARCH_MODE = "lexical"
    hits = _search(run_api, handle, "账单用什么数据库").json()["results"]
    assert len(hits) == 1 and "PostgreSQL" in hits[0]["snippet"]


def test_search_matches_words_not_pieces_of_other_words(run_api, make_run, svc, alice):
    thread = _thread(svc, alice)
    _say(svc, thread, "The application location is set to Berlin.")
    _say(svc, thread, "Release 2025-05-01 is out.")
    _say(svc, thread, "My cat is called Mochi and I have 5 plants.")
    for query in ("cat", "5"):
        hits = _search(run_api, make_run(alice, request_id=f"req-{query}"), query).json()["results"]
        assert [h["snippet"] for h in hits] == [DATA_MARK + "My cat is called Mochi and I have 5 plants."], query


# --- budgets --------------------------------------------------------------------------------


def test_search_budgets_with_multibyte_text(run_api, make_run, svc, alice):
    for index in range(15):
        thread = _thread(svc, alice)
        _say(svc, thread, f"数据库 {index} " + "中文🙂" * 3000)
    data = _search(run_api, make_run(alice), "数据库").json()
    assert len(data["results"]) == 10
    for hit in data["results"]:
        assert len(hit["snippet"].encode()) <= SEARCH_HIT_BYTES
        assert len(hit["snippet"].encode()) > SEARCH_HIT_BYTES - 4
        assert hit["truncated"] and hit["snippet"].endswith("…[truncated]")
    raw = _search(run_api, make_run(alice, request_id="r2"), "数据库").content
    assert len(raw) <= SEARCH_RESPONSE_BYTES


def test_search_response_cap_holds_with_escaping(run_api, make_run, svc, alice):
    thread = _thread(svc, alice)
    for _ in range(12):
        _say(svc, thread, "needle " + "\x01" * 600)  # each control char becomes 6 bytes of JSON
    response = _search(run_api, make_run(alice), "needle")
    assert len(response.content) <= SEARCH_RESPONSE_BYTES
    assert response.json()["truncated"] is True


def test_read_budgets_with_multibyte_text(run_api, make_run, svc, alice):
    thread = _thread(svc, alice)
    for _ in range(25):
        _say(svc, thread, "汉字🙂é" * 2000)  # ~18 KB each
    handle = make_run(alice)
    response = _read(run_api, handle, thread.pk)
    data = response.json()
    assert len(response.content) <= READ_RESPONSE_BYTES
    sizes = [len(m["content"].encode()) for m in data["messages"]]
    assert all(size <= READ_MESSAGE_BYTES for size in sizes)
    assert sum(sizes) <= READ_CONTENT_BYTES
    assert sizes[0] > READ_MESSAGE_BYTES - 4  # cut at the limit, not far below it
    assert data["truncated"] and data["has_more"]
    for message in data["messages"]:
        message["content"].encode("utf-8")
        assert message["truncated"] and message["content"].endswith("…[truncated]")


def test_read_paginates_backwards_with_at_most_20(run_api, make_run, svc, alice):
    thread = _thread(svc, alice)
    ids = [_say(svc, thread, f"message {i}").pk for i in range(30)]
    handle = make_run(alice)
    first = _read(run_api, handle, thread.pk).json()
    assert [m["id"] for m in first["messages"]] == ids[10:]
    assert first["has_more"] is True
    older = _read(run_api, handle, thread.pk, before_message_id=ids[10]).json()
    assert [m["id"] for m in older["messages"]] == ids[:10]
    assert older["has_more"] is False
    response = _read(run_api, handle, thread.pk, limit=21)
    assert response.status_code == 400


def test_read_tool_call_budgets(run_api, make_run, svc, alice):
    thread = _thread(svc, alice)
    _say(svc, thread, "start")
    calls = [
        {"name": f"tool{i}", "input": {"q": "输入" * 3000}, "output": "出" * 5000, "status": "ok", "error": "错" * 2000}
        for i in range(12)
    ]
    _say(svc, thread, "ran tools", role="assistant", tool_calls=calls)
    data = _read(run_api, make_run(alice), thread.pk, include_tools=True).json()
    items = data["tool_calls"]
    assert 1 <= len(items) <= 10
    sizes = [sum(len(item[k].encode()) for k in ("name", "status", "input", "output", "error")) for item in items]
    assert all(size <= READ_TOOL_CALL_BYTES for size in sizes)
    assert sum(sizes) <= READ_TOOL_CALLS_BYTES
    assert all(item["truncated"] for item in items)


def test_the_reply_after_a_matching_turn_is_found_with_it(run_api, make_run, svc, alice, settings):
    settings.MEMORY_SEARCH_MODE = "lexical"  # the reply shares no word with the question
    thread = _thread(svc, alice)
    _say(svc, thread, "Should I take the lisinopril in the morning or in the evening?")
    reply = _say(svc, thread, "In the morning, with breakfast.", role="assistant")
    _say(svc, thread, "Thanks! Also, what's a good pasta recipe?")
    _say(svc, thread, "Try aglio e olio.", role="assistant")
    other = _thread(svc, alice)
    _say(svc, other, "I picked up the lisinopril prescription today.")
    _say(svc, other, "Noted the pharmacy hours too.")  # same speaker: not a reply
    hits = _search(run_api, make_run(alice), "when do I take lisinopril").json()["results"]
    ids = [hit["message_id"] for hit in hits]
    assert reply.pk in ids
    assert all("pharmacy" not in hit["snippet"] and "aglio" not in hit["snippet"] for hit in hits)


@pytest.mark.parametrize("mode", ["lexical", "dense", "hybrid"])
def test_search_takes_a_bounded_number_of_statements(svc, alice, settings, mode):
    """Both rankings come from one statement, candidates and their next turns from one more:
    no statement per hit or per term, however many hits (a scope's refs and vectors are read
    once per version of the scope)."""
    from memory_app.threads.history import history_search

    settings.MEMORY_SEARCH_MODE = mode
    for t in range(3):
        thread = _thread(svc, alice, title=f"billing {t}")
        for i in range(12):
            _say(
                svc,
                thread,
                f"The billing invoice number {t}-{i} for the database plan",
                role=("user", "assistant")[i % 2],
            )
    history_search(user_id=alice.pk, query="billing invoice database plan")  # the scope's refs and vectors
    for query in ("billing invoice database plan", "invoice for the plan", "database billing numbers"):
        with CaptureQueriesContext(connection) as queries:
            hits = history_search(user_id=alice.pk, query=query)["results"]
        assert len(hits) == 10
        assert len(queries.captured_queries) <= 3, [q["sql"][:120] for q in queries.captured_queries]


def _two_person_thread(svc, alice, key="name"):
    thread = _thread(svc, alice, title="catching up")
    mia = _say(svc, thread, "I flew to Porto for my sister's wedding", metadata={key: "Mia"})
    _say(svc, thread, "How lovely!", role="assistant", metadata={key: "Jon"})
    _say(svc, thread, "Anything new with you?", metadata={key: "Mia"})
    jon = _say(svc, thread, "I flew to Lisbon for my sister's wedding too", role="assistant", metadata={key: "Jon"})
    return mia, jon


@pytest.mark.parametrize("key", ["name", "speaker"])
@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_a_question_naming_a_speaker_favours_their_turns(svc, alice, settings, mode, key):
    """The speaker is the metadata's ``name``, else its ``speaker``."""
    from memory_app.threads.history import history_search

    settings.MEMORY_SEARCH_MODE = mode
    mia, jon = _two_person_thread(svc, alice, key)
    first = lambda query: history_search(user_id=alice.pk, query=query)["results"][0]["message_id"]  # noqa: E731
    assert first("Where did Mia fly for her sister's wedding?") == mia.pk
    assert first("Where did Jon fly for his sister's wedding?") == jon.pk
    assert first("where did mia fly for the wedding") == mia.pk  # any case


def test_the_metadatas_name_wins_over_its_speaker_and_other_keys_name_nobody(svc, alice):

    thread = _thread(svc, alice, title="catching up")
    both = _say(svc, thread, "I flew to Porto for my sister's wedding", metadata={"name": "Mia", "speaker": "Jon"})
    other = _say(svc, thread, "I flew to Lisbon", role="assistant", metadata={"author": "Jon", "name": " "})
    alt = _say(svc, thread, "How lovely!", metadata={"name": "", "speaker": "Lena"})
    rows = candidates.candidate_loader(alice.pk)([both.pk, other.pk, alt.pk])
    assert [dialogue.speaker(rows[m.pk]) for m in (both, other, alt)] == ["Mia", "", "Lena"]
    # The names searches look for are the ones turns are read as: not the losing ``speaker``,
    # not another key, not a blank name.
    assert candidates.history_speakers(alice.pk) == frozenset({"Mia", "Lena"})


@pytest.mark.parametrize(
    ("metadata", "speaker"),
    [
        ({"name": 42, "speaker": "Lena"}, "Lena"),
        ({"name": None, "speaker": "Lena"}, "Lena"),
        ({"name": True}, ""),
        ({"name": {"first": "Mia"}, "speaker": ["Jon"]}, ""),
        ({"name": "  Mia  ", "speaker": "Jon"}, "Mia"),
        ({"name": "\t\n ", "speaker": "Jon"}, "Jon"),  # blanks name nobody, as the vectors read it
        ({"speaker": 3.5}, ""),
        ({"name": "null"}, "null"),  # a string is a name, whatever it says
    ],
)
def test_only_a_json_string_names_a_speaker_on_every_database(svc, alice, metadata, speaker):
    """A number, ``true``, ``null``, an object or a list names nobody: read as text, PostgreSQL
    would call ``42`` a speaker and SQLite would call ``null`` one (and then take the number
    out of the question the model embeds)."""
    from memory_app.threads import indexing

    message = _say(svc, _thread(svc, alice, title="types"), "I flew to Porto", metadata=metadata)
    rows = candidates.candidate_loader(alice.pk)([message.pk])
    assert dialogue.speaker(rows[message.pk]) == speaker
    assert indexing.metadata_speaker(metadata) == speaker  # the vectors read the same name
    assert candidates.history_speakers(alice.pk) == (frozenset({speaker}) if speaker else frozenset())


def test_the_speakers_a_history_has_are_counted_by_name(svc, alice, monkeypatch):
    """``SPEAKERS_MAX`` bounds names, not the pairs of keys that spell them: many turns whose
    losing ``speaker`` key differs still leave room for the next name."""

    monkeypatch.setattr(candidates, "SPEAKERS_MAX", 4)
    thread = _thread(svc, alice, title="group")
    for n in range(6):
        _say(svc, thread, f"turn {n}", metadata={"name": "Ann", "speaker": f"member-{n}"})
    _say(svc, thread, "hello", metadata={"name": "Zoe"})
    assert candidates.history_speakers(alice.pk) == frozenset({"Ann", "Zoe"})


def test_a_transcripts_written_speaker_names_the_turn_when_the_metadata_does_not(svc, alice):
    """A name written before the text, "Mia: …" (title case, up to three words) or "小雨：…" (two
    to four CJK characters), names the speaker; the metadata wins over it, and it over the user's display name.
    "note: …", "TODO: …", "I think: …" or a long Chinese clause before a colon name nobody."""
    from identity_app.models import Profile

    Profile.objects.update_or_create(user=alice, defaults={"display_name": "Alice"})
    thread = _thread(svc, alice, title="transcript")
    said = {
        "Mia: My sister is tying the knot": "Mia",
        "Mia Chen: Back from Porto": "Mia Chen",
        "小雨：我姐姐下个月结婚": "小雨",
        "Zoë: salut": "Zoë",
        "note: buy milk": "Alice",
        "TODO: call the vet": "Alice",
        "I think: maybe": "Alice",
        "我觉得这个问题很难：是的": "Alice",
        "Mia:no space": "Alice",
        "A B C D: four words": "Alice",
    }
    messages = {text: _say(svc, thread, text) for text in said}
    named = _say(svc, thread, "Jon: hello", metadata={"name": "Mia"})
    reply = _say(svc, thread, "note: nothing", role="assistant")
    rows = candidates.candidate_loader(alice.pk)([m.pk for m in [*messages.values(), named, reply]])
    assert {text: dialogue.speaker(rows[m.pk]) for text, m in messages.items()} == said
    assert dialogue.speaker(rows[named.pk]) == "Mia" and dialogue.speaker(rows[reply.pk]) == ""


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_a_question_naming_a_written_speaker_favours_their_turns(svc, alice, settings, mode):
    from memory_app.threads.history import history_search

    settings.MEMORY_SEARCH_MODE = mode
    thread = _thread(svc, alice, title="catching up")
    # Each turn holds both names; only who wrote it tells them apart.
    mia = _say(svc, thread, "Mia: Jon, I flew to Porto for my sister's wedding")
    _say(svc, thread, "Kai: How lovely", role="assistant")  # the turn after each shares its words' score
    jon = _say(svc, thread, "Jon: Mia, I flew to Lisbon for my sister's wedding", role="assistant")
    _say(svc, thread, "Kai: Lovely too")

    def first(query):
        return history_search(user_id=alice.pk, query=query)["results"][0]["message_id"]

    assert first("Where did Jon fly for his sister's wedding?") == jon.pk
    assert first("Where did Mia fly for her sister's wedding?") == mia.pk


def test_the_users_display_name_names_the_users_turns(svc, alice, settings):
    from identity_app.models import Profile
    from memory_app.threads.history import history_search

    settings.MEMORY_SEARCH_MODE = "lexical"
    Profile.objects.update_or_create(user=alice, defaults={"display_name": "Alice Chen"})
    own = _say(svc, _thread(svc, alice), "I adopted a beagle called Biscuit yesterday")
    _say(svc, _thread(svc, alice), "I adopted a beagle", role="assistant")  # shorter: first by words alone
    hits = history_search(user_id=alice.pk, query="Which dog did Alice adopt?")["results"]
    assert hits[0]["message_id"] == own.pk


def test_a_question_naming_nobody_keeps_the_word_ranking(svc, alice, settings):
    from memory_app.threads import history

    settings.MEMORY_SEARCH_MODE = "lexical"
    _two_person_thread(svc, alice)
    query = "Where did someone fly for a sister's wedding?"
    with_speakers = [hit["message_id"] for hit in history.history_search(user_id=alice.pk, query=query)["results"]]
    settings_weight, dialogue.SPEAKER_WEIGHT = dialogue.SPEAKER_WEIGHT, 0.0
    try:
        plain = [hit["message_id"] for hit in history.history_search(user_id=alice.pk, query=query)["results"]]
    finally:
        dialogue.SPEAKER_WEIGHT = settings_weight
    assert with_speakers == plain


def test_a_search_tool_call_reads_its_run_once(svc, alice, make_run, run_api, settings):
    """Through the API, the run row (with its conversation and the user's memory switch) is read
    once, by authentication: the tool reuses it, then the search's statements and the read record."""
    settings.MEMORY_SEARCH_MODE = "lexical"
    thread = _thread(svc, alice, title="billing")
    for i in range(12):
        _say(svc, thread, f"The billing invoice number {i} for the database plan", role=("user", "assistant")[i % 2])
    handle = make_run(alice)
    client = run_api(handle.token)
    assert client.post(SEARCH.format(handle.id), {"query": "billing plan"}, format="json").status_code == 200
    for query in ("invoice database", "plan numbers"):
        with CaptureQueriesContext(connection) as queries:
            response = client.post(SEARCH.format(handle.id), {"query": query}, format="json")
        assert response.status_code == 200 and response.json()["results"]
        sqls = [q["sql"] for q in queries.captured_queries]
        assert sum('FROM "memory_app_agentrun"' in sql for sql in sqls) == 1, sqls
        assert not any(sql.startswith('SELECT "memory_app_usersettings"') for sql in sqls), sqls


def test_a_search_tool_call_sees_the_memory_switch_its_authentication_read(svc, alice, make_run, run_api):
    handle = make_run(alice)
    notes_services.user_settings_update(user=alice, enable_memory=False)
    response = run_api(handle.token).post(SEARCH.format(handle.id), {"query": "billing"}, format="json")
    assert (response.status_code, response.json()["error"]["code"]) == (403, "memory_disabled")
    notes_services.user_settings_update(user=alice, enable_memory=True)
    response = run_api(handle.token).post(SEARCH.format(handle.id), {"query": "billing"}, format="json")
    assert response.status_code == 200


def _dense_ids(alice, query):
    from memory_app.threads.history import history_search

    return [hit["message_id"] for hit in history_search(user_id=alice.pk, query=query)["results"]]


def _window_thread(svc, alice):
    """A fact said after a long, unrelated turn, then a short reply: the fact's vector is half its
    own text (the other half is the pair with that long turn), the reply's half the fact."""
    thread = _thread(svc, alice, title="news")
    words = "tomato seedlings compost watering trellis mulch aphids pruning harvest basil zucchini shade".split()
    _say(svc, thread, "Gardening notes: " + " ".join(f"{w}{i}" for i in range(6) for w in words))
    fact = _say(svc, thread, "We brought home a border collie called Biscuit", role="assistant")
    reply = _say(svc, thread, "Lovely!")
    for i in range(12):
        _say(svc, _thread(svc, alice, title=f"other {i}"), f"A border collie at the park number {i} with a ball")
    return fact, reply


def test_a_fact_is_found_by_its_own_text_and_a_reply_brings_the_turn_it_answers(svc, alice, settings):

    settings.MEMORY_SEARCH_MODE = "dense"
    fact, reply = _window_thread(svc, alice)
    query = "border collie called Biscuit"
    saved, dialogue.WINDOW_SOURCES = dialogue.WINDOW_SOURCES, 0
    try:
        without = _dense_ids(alice, query)
    finally:
        dialogue.WINDOW_SOURCES = saved
    # The long turn before it does not bury the fact: its own text is half its vector.
    assert without[0] == fact.pk
    assert _dense_ids(alice, query)[0] == fact.pk
    # A hit on the reply (its vector holds the fact it answers) ranks that fact right after it.
    rows = candidates.candidate_loader(alice.pk)([fact.pk, reply.pk])
    lifted = dialogue.with_previous_turns([(str(reply.pk), 0.9), ("999999", 0.8)], rows)
    assert [ref for ref, _ in lifted] == [str(reply.pk), str(fact.pk), "999999"]


def test_a_messages_vector_is_the_mean_of_its_own_and_of_the_pair_with_the_turn_before(svc, alice, settings):
    """The recipe, stored: the first turn of a thread is its own text's vector; a later one the
    mean (not normalised) of its own and of the previous turn's end with it."""
    import numpy as np

    from memory_app.search.embeddings import from_bytes, get_provider
    from memory_app.search.models import SearchDocument

    thread = _thread(svc, alice)
    first = _say(svc, thread, "We adopted a beagle")
    second = _say(svc, thread, "What is its name?", role="assistant")
    provider = get_provider()

    def stored(message):
        doc = SearchDocument.objects.get(source="message", ref=str(message.pk))
        return from_bytes(doc.vector, provider.dim)

    assert np.allclose(stored(first), provider.embed(["We adopted a beagle"])[0], atol=1e-6)
    alone, pair = provider.embed(["What is its name?", "We adopted a beagle\nWhat is its name?"])
    assert np.allclose(stored(second), (alone + pair) / 2, atol=1e-6)
    assert np.linalg.norm(stored(second)) < 1.0


def test_a_named_speakers_turns_are_embedded_after_their_name(svc, alice, settings):
    """Where the metadata names the speaker, each text the vector is made of starts with the
    name ("Mia: …"): a question about Mia finds Mia's own turns, which rarely say her name. A
    text that starts with that name already is not given it twice; a turn whose metadata names
    nobody (no key, a number) is embedded as it is."""
    import numpy as np

    from memory_app.search.embeddings import from_bytes, get_provider
    from memory_app.search.models import SearchDocument

    thread = _thread(svc, alice)
    first = _say(svc, thread, "We adopted a beagle", metadata={"name": "Mia"})
    second = _say(svc, thread, "What is its name?", role="assistant", metadata={"speaker": " Jon "})
    third = _say(svc, thread, "Mia: Biscuit!", metadata={"name": "Mia"})
    fourth = _say(svc, thread, "Lovely", role="assistant", metadata={"name": 42})
    provider = get_provider()

    def stored(message):
        doc = SearchDocument.objects.get(source="message", ref=str(message.pk))
        return from_bytes(doc.vector, provider.dim)

    def mean(alone: str, pair: str):
        return provider.embed([alone, pair]).mean(axis=0)

    assert np.allclose(stored(first), provider.embed(["Mia: We adopted a beagle"])[0], atol=1e-6)
    assert np.allclose(
        stored(second), mean("Jon: What is its name?", "Mia: We adopted a beagle\nJon: What is its name?"), atol=1e-6
    )
    assert np.allclose(stored(third), mean("Mia: Biscuit!", "Jon: What is its name?\nMia: Biscuit!"), atol=1e-6)
    assert np.allclose(stored(fourth), mean("Lovely", "Mia: Biscuit!\nLovely"), atol=1e-6)
    fifth = _say(svc, thread, "小雨：好可爱", metadata={"name": "小雨"})
    assert np.allclose(stored(fifth), mean("小雨：好可爱", "Lovely\n小雨：好可爱"), atol=1e-6)


def test_a_window_never_reaches_across_threads_or_users(svc, alice, bob, settings):
    settings.MEMORY_SEARCH_MODE = "dense"
    earlier = _thread(svc, alice, title="earlier")
    _say(svc, earlier, "Unrelated: the quarterly tax forms are due in April")
    opener = _thread(svc, alice, title="opener")
    first = _say(svc, opener, "border collie Biscuit border collie Biscuit")  # the first turn of its thread
    bobs = _thread(svc, bob, title="bob")
    _say(svc, bobs, "Bob's secret: the vault code is 4711")
    _say(svc, bobs, "border collie Biscuit", role="assistant")
    ids = _dense_ids(alice, "border collie Biscuit")
    assert ids[0] == first.pk
    from memory_app.threads.models import Message

    owners = set(Message.objects.filter(pk__in=ids).values_list("conversation__owner_id", flat=True))
    assert owners == {alice.pk}


def test_a_speakers_name_found_in_no_turn_leaves_the_coverage_mass():
    from memory_app.search.engine import Rankings

    def rankings():
        return Rankings(
            lexical=[("1", 3.0), ("2", 1.0)],
            dense=[],
            terms=["mia", "pet"],
            mode="hybrid",
            depth=10,
            coverage={"1": 0.4, "2": 0.1},
            absent={"mia": 6.0, "": 10.0},
        )

    rows = {1: {"speaker": "Mia", "role": "user", "display_name": ""}, 2: {"speaker": "Jon", "role": "assistant"}}
    named = rankings()
    dialogue.names_out_of_coverage(named, rows, "What pet did Mia get?")
    assert named.coverage == pytest.approx({"1": 1.0, "2": 0.25})
    # A name that is no speaker's stays a word the answer misses.
    other = rankings()
    dialogue.names_out_of_coverage(other, rows, "What pet did Lena get?")
    assert other.coverage == {"1": 0.4, "2": 0.1}
    # A speaker's name that some turn holds is a word like any other (it is not absent).
    held = rankings()
    held.absent = {"": 10.0}
    dialogue.names_out_of_coverage(held, rows, "What pet did Mia get?")
    assert held.coverage == {"1": 0.4, "2": 0.1}


def test_the_compiled_candidates_statement_keeps_visibility_and_takes_any_number_of_ids(alice, mallory, leaky_history):
    """Compiled once (while the query is embedded), run with the ids: only the visible user and
    assistant text of the owner comes back, whatever ids are asked (another user's, hidden
    threads', tool and system turns, ids that do not exist), one statement a call."""
    from memory_app.threads.models import Message

    every_id = list(Message.objects.values_list("id", flat=True))
    visible = set(
        Message.objects.filter(
            conversation=leaky_history["visible"], role__in=("user", "assistant"), type="text"
        ).values_list("id", flat=True)
    )
    assert len(visible) == 2 and len(every_id) > 10
    load = candidates.candidate_loader(alice.pk)
    for asked in (every_id, [*every_id, 10**12, -1], sorted(visible)[:1], [max(every_id) + 1]):
        with CaptureQueriesContext(connection) as queries:
            rows = load(asked)
        assert len(queries.captured_queries) == 1
        assert set(rows) == visible & set(asked)
    with CaptureQueriesContext(connection) as queries:
        assert load([]) == {}
    assert not queries.captured_queries
    rows = load(every_id)
    first, second = (rows[key] for key in sorted(rows))
    assert (first["role"], first["next_id"], first["next_role"]) == ("user", second["id"], "assistant")
    assert first["created_at"].tzinfo is not None and "MARK-VISIBLE-USER" in first["head"]
    assert first["conversation__title"] == "Billing" and first["speaker"] is None
    # Mallory's loader sees none of Alice's.
    assert candidates.candidate_loader(mallory.pk)(every_id).keys().isdisjoint(visible)


# --- the meaning ranking embeds the question without the speakers' names ---------------------


def test_speakers_names_leave_the_question_the_model_embeds():

    names = frozenset({"Mia", "Jon Smith", "小雨", "Al"})
    assert dialogue.without_speakers("Which family celebration did Mia travel for?", names) == (
        "Which family celebration did travel for?"
    )
    assert dialogue.without_speakers("What did MIA's brother tell jon smith?", names) == "What did brother tell ?"
    assert dialogue.without_speakers("Did Jon call?", names) == "Did call?"  # a name's first word
    assert dialogue.without_speakers("小雨的姐姐在哪里结婚？", names) == "的姐姐在哪里结婚？"
    # Only whole words: "Miami" and "Alps" are not Mia and Al.
    assert dialogue.without_speakers("Miami or the Alps?", names) == "Miami or the Alps?"
    # Nothing named: the question as asked (its spacing too); nothing left: the question.
    assert dialogue.without_speakers("what  about\nthe dog", names) == "what  about\nthe dog"
    assert dialogue.without_speakers("Mia?", names) == "Mia?"
    assert dialogue.without_speakers("Mia and Jon", names) == "Mia and Jon"  # only a stop word would be left
    # A name whose first word is a common word is named only whole.
    doctor = frozenset({"The Doctor", "A"})
    assert dialogue.without_speakers("Where is the box?", doctor) == "Where is the box?"
    assert dialogue.without_speakers("Where did the doctor go?", doctor) == "Where did go?"


# (question, what the meaning ranking embeds of it in hybrid when no speaker is known)
PROPER_NAME_CASES = [
    ("Which family celebration did Mia travel for?", "Which family celebration did travel for?"),
    ("what did I say about Porto and Zoë's cat", "what did I say about and cat"),
    ("Hey, Émile: where is it", "Hey, : where is it"),
    # At the start of a sentence every word is capitalised; "I", acronyms and camel case are no
    # names; a question in title case, or one with more than two such words, keeps them all.
    ("Porto or Lisbon, which one?", "Porto or , which one?"),
    ("Did I tell you? Mia left.", "Did I tell you? Mia left."),
    ("when did I join the LGBTQ group at PostgreSQL", "when did I join the LGBTQ group at PostgreSQL"),
    ("What Did Mia Say About The Wedding", "What Did Mia Say About The Wedding"),
    ("did Ann, Bob and Cy go to Rome", "did Ann, Bob and Cy go to Rome"),
    # Only letters with a case: a lower-case word with an accent, a CJK run after a space.
    ("what about élan and the Émile letter", "what about élan and the letter"),
    ("我的 姐姐在哪里 结婚", "我的 姐姐在哪里 结婚"),
    # Nothing searchable would be left: the question.
    ("and Mia?", "and Mia?"),
]


@pytest.mark.parametrize(("query", "embedded"), PROPER_NAME_CASES)
def test_words_that_look_like_names_leave_the_question_the_model_embeds(query, embedded):
    """A name the history does not know as a speaker's (a runtime that sends none, a place, a
    product) leaves the embedded question too: the word ranking keeps it."""

    assert dialogue.without_proper_names(query) == embedded


def test_the_meaning_query_takes_out_the_speakers_then_in_hybrid_the_other_names():

    # A speaker's name goes first, then the rest; a lower-case name is left to the speakers' rule.
    assert dialogue.meaning_query("did Mia fly to Porto with jon", frozenset({"Jon"}), "hybrid") == "did fly to with"
    # In dense mode nothing else keeps the question's other names: only the speakers go.
    assert (
        dialogue.meaning_query("did Mia fly to Porto with jon", frozenset({"Jon"}), "dense")
        == "did Mia fly to Porto with"
    )


@given(query=st.text(max_size=80))
@hypothesis_settings(max_examples=300, deadline=None)
def test_leaving_proper_names_out_never_fails_and_keeps_a_searchable_question(query):
    from memory_app.search.analysis import query_terms

    out = dialogue.without_proper_names(query)
    assert isinstance(out, str)
    if query_terms(query):
        assert query_terms(out)
    assert out == query or len(out) < len(query)


@given(query=st.text(max_size=80), names=st.frozensets(st.text(max_size=20), max_size=4))
@hypothesis_settings(max_examples=300, deadline=None)
def test_leaving_names_out_never_fails_and_keeps_a_searchable_question(query, names):
    """Whatever the names and the question (regex characters, CJK, empty names): a string comes
    back, the question itself when no name is named, and never one without searchable words
    when the question had some."""
    from memory_app.search.analysis import query_terms

    out = dialogue.without_speakers(query, names)
    assert isinstance(out, str)
    if not any(dialogue.named(name, query, dialogue.speaker_names(query)) for name in names):
        assert out == query
    if query_terms(query):
        assert query_terms(out)


def history_module_speakers():

    return dict(candidates._speakers)


@pytest.fixture
def embedded(monkeypatch):
    """The texts the history search gives the model for the meaning ranking."""
    from memory_app.search import engine

    texts = []
    plain = engine.embed_query_soon

    def spy(provider, text, **kwargs):
        texts.append(text)
        return plain(provider, text, **kwargs)

    monkeypatch.setattr(engine, "embed_query_soon", spy)
    monkeypatch.setattr(candidates, "_speakers", OrderedDict())  # what this process remembers: nothing yet
    return texts


@pytest.mark.parametrize("mode", ["hybrid", "dense"])
def test_the_model_embeds_the_question_without_the_speakers_it_names(svc, alice, mallory, settings, mode, embedded):
    from memory_app.threads.history import history_search

    settings.MEMORY_SEARCH_MODE = mode
    mia, _ = _two_person_thread(svc, alice)
    # Names Alice's history does not show are left in: Mallory's speaker, a hidden chat's.
    _say(svc, _thread(svc, mallory), "hello", metadata={"name": "Zed"})
    hidden = _thread(svc, alice, source="agent_call")
    _say(svc, hidden, "hello", metadata={"name": "Ola"})
    hits = history_search(user_id=alice.pk, query="Where did Mia fly for her sister's wedding?")["results"]
    assert hits[0]["message_id"] == mia.pk
    assert embedded == ["Where did fly for her sister's wedding?"]
    # (Written in lower case: in hybrid a capitalised name leaves the embedded question anyway.)
    history_search(user_id=alice.pk, query="did zed or ola meet Jon?")
    assert embedded[1] == "did zed or ola meet ?"
    # The words still hold the name: the word ranking and the speaker preference see it.
    assert history_search(user_id=alice.pk, query="Mia Porto")["results"][0]["message_id"] == mia.pk


@pytest.mark.parametrize("mode", ["hybrid", "dense"])
def test_a_name_no_speaker_has_leaves_the_embedded_question_only_where_the_words_keep_it(
    svc, alice, settings, mode, embedded
):
    """A runtime that sends no speakers: the question's "Mia" is nobody the history knows. In
    hybrid the model embeds the question without it and the word ranking still holds it, so the
    turn that says the name exactly is found; in dense nothing else would keep it."""
    from memory_app.threads.history import history_search

    settings.MEMORY_SEARCH_MODE = mode
    thread = _thread(svc, alice, title="catching up")
    _say(svc, thread, "My sister is tying the knot in Porto")
    _say(svc, thread, "Mia, that's huge! Congratulations!", role="assistant")
    history_search(user_id=alice.pk, query="Where is Mia's sister getting married?")
    assert embedded == (
        ["Where is sister getting married?"] if mode == "hybrid" else ["Where is Mia's sister getting married?"]
    )
    paid = _say(svc, thread, "Brightline finally paid the invoice, 4,000 in all", role="assistant")
    _say(svc, thread, "The other client paid the invoice too")
    hits = history_search(user_id=alice.pk, query="what did Brightline pay")["results"]
    assert embedded[1] == ("what did pay" if mode == "hybrid" else "what did Brightline pay")
    assert hits[0]["message_id"] == paid.pk  # in hybrid, by the words that kept the name


def test_speakers_are_read_before_the_first_search_then_again_only_when_the_history_changed(
    svc, alice, settings, embedded
):
    from memory_app.threads.history import history_search

    settings.MEMORY_SEARCH_MODE = "hybrid"
    thread = _thread(svc, alice, title="catching up")
    _say(svc, thread, "I flew to Porto for my sister's wedding", metadata={"name": "Mia"})
    with CaptureQueriesContext(connection) as queries:
        history_search(user_id=alice.pk, query="Where did Mia fly?")
    # The first search of this user in the process: read before the question is embedded, and
    # again with the version of the history while the model works.
    assert sum("DISTINCT" in q["sql"] for q in queries.captured_queries) == 2
    with CaptureQueriesContext(connection) as queries:
        assert history_search(user_id=alice.pk, query="Where did Mia go for the wedding?")["results"]
    sqls = [q["sql"] for q in queries.captured_queries]
    assert len(sqls) == 2 and not any("DISTINCT" in sql for sql in sqls), sqls  # rankings, candidates
    assert embedded == ["Where did fly?", "Where did go for the wedding?"]
    # Someone new speaks; the process still remembers the old speakers when the next question
    # comes: it is embedded with them, the speakers are read again (a new version of the
    # history), and the rankings are made again with the new ones. (In lower case: a capitalised
    # name would leave the embedded question in hybrid anyway, ``_without_proper_names``.)
    kai = _say(svc, thread, "I went to Kyoto for a wedding", role="assistant", metadata={"name": "Kai"})
    hits = history_search(user_id=alice.pk, query="Where did kai go for a wedding?")["results"]
    assert embedded[2:] == ["Where did kai go for a wedding?", "Where did go for a wedding?"]
    assert hits[0]["message_id"] == kai.pk
    history_search(user_id=alice.pk, query="Where did Kai fly?")
    assert embedded[4:] == ["Where did fly?"]
    # A new message of someone already known: read again, nothing to do again.
    _say(svc, thread, "It rained all day", metadata={"name": "Mia"})
    history_search(user_id=alice.pk, query="Did it rain on Kai?")
    assert embedded[5:] == ["Did it rain on ?"]


def test_a_search_by_words_alone_reads_no_speakers(svc, alice, settings, embedded):
    from memory_app.threads.history import history_search

    settings.MEMORY_SEARCH_MODE = "lexical"
    mia, _ = _two_person_thread(svc, alice)
    history_search(user_id=alice.pk, query="wedding")  # the scope's refs are read once
    with CaptureQueriesContext(connection) as queries:
        hits = history_search(user_id=alice.pk, query="Where did Mia fly for her sister's wedding?")["results"]
    assert hits[0]["message_id"] == mia.pk and embedded == []
    sqls = [q["sql"] for q in queries.captured_queries]
    assert not any("DISTINCT" in sql for sql in sqls), sqls  # no speakers read
    assert history_module_speakers() == {}


def test_the_lever_of_the_speakers_names(svc, alice, settings, monkeypatch, embedded):
    """``SPEAKERS_OUT_OF_MEANING`` off: the question is embedded as asked; the word ranking keeps
    the name whatever the lever."""
    from memory_app.search import engine
    from memory_app.threads import history

    settings.MEMORY_SEARCH_MODE = "hybrid"
    _two_person_thread(svc, alice)
    words = []
    plain = engine.rank

    def spy(**kwargs):
        words.append(kwargs["query"])
        return plain(**kwargs)

    monkeypatch.setattr(engine, "rank", spy)
    history.history_search(user_id=alice.pk, query="Where did Mia fly?")
    monkeypatch.setattr(dialogue, "SPEAKERS_OUT_OF_MEANING", False)
    history.history_search(user_id=alice.pk, query="Where did Mia go?")
    monkeypatch.setattr(dialogue, "SPEAKERS_OUT_OF_MEANING", True)
    history.history_search(user_id=alice.pk, query="Where did Mia run?")
    assert embedded == ["Where did fly?", "Where did Mia go?", "Where did run?"]
    assert words == ["Where did Mia fly?", "Where did Mia go?", "Where did Mia run?"]


def test_a_history_of_many_speakers_is_read_up_to_a_bound(svc, alice, monkeypatch):

    monkeypatch.setattr(candidates, "SPEAKERS_MAX", 3)
    thread = _thread(svc, alice)
    for name in ("Dee", "Bo", "Al", "Cy", "x" * 101):
        _say(svc, thread, "hello", metadata={"name": name})
    assert candidates.history_speakers(alice.pk) == {"Al", "Bo", "Cy"}  # the first by name
    monkeypatch.setattr(candidates, "SPEAKERS_MAX", 10)
    assert candidates.history_speakers(alice.pk) == {"Al", "Bo", "Cy", "Dee"}  # a name too long is no name
