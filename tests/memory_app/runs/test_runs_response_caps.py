"""Response caps on the serialized size (escaping included), every cut marked, bounded lists."""

import json

import pytest

from config.budgets import TRUNCATION_MARKER, truncate_json_text, truncate_utf8, utf8_len
from config.lowtrust import DATA_MARK
from config.validation import json_size
from memory_app.runs import leases
from memory_app.runs import services as run_services
from memory_app.threads import services as thread_services
from memory_app.threads.history import READ_RESPONSE_BYTES, SEARCH_RESPONSE_BYTES

pytestmark = pytest.mark.django_db

READ = "/api/runs/{}/tools/read_thread_messages"
SEARCH = "/api/runs/{}/tools/search_thread_messages"
# Escapes that grow in JSON: control characters (6 bytes), quotes and backslashes (2 bytes).
NASTY = '\x01"\\\x1f'


# --- every cut is marked --------------------------------------------------------------------
@pytest.mark.parametrize("text", ["abcdefghijklmnopqrstuvwxyz" * 3, "中文🙂" * 20, NASTY * 30])
def test_every_cut_of_truncate_utf8_is_marked_or_omitted(text):
    for budget in range(0, utf8_len(text) + 2):
        result, cut = truncate_utf8(text, budget)
        assert utf8_len(result) <= budget
        if not cut:
            assert result == text
        else:
            # Either a marked prefix or nothing at all: never a silent partial text.
            assert result == "" or (
                result.endswith(TRUNCATION_MARKER) and text.startswith(result[: -len(TRUNCATION_MARKER)])
            )
    assert truncate_utf8("abcdefghijklmnopqrstuvwxyz", 5) == ("", True)


@pytest.mark.parametrize("text", [NASTY * 500, "中" * 100 + NASTY * 100, json.dumps({"a": NASTY * 50, "b": [NASTY]})])
def test_truncate_json_text_bounds_the_escaped_size(text):
    for budget in (2, 10, 16, 17, 100, 1000, 4096):
        result, cut = truncate_json_text(text, budget)
        assert json_size(result) <= budget
        assert cut == (result != text)
        assert not cut or result == "" or result.endswith(TRUNCATION_MARKER)


# --- read / search response caps ------------------------------------------------------------
def test_read_with_escape_heavy_messages_and_tool_calls_stays_under_64_kib(svc, alice, make_run, run_api):
    thread = thread_services.conversation_create(actor=svc, username="alice", title=NASTY * 40)
    nested = {"query": NASTY * 2000, "inner": json.dumps({"deep": NASTY * 1000})}
    for i in range(20):
        calls = [
            {"name": f"tool{NASTY}{j}", "input": nested, "output": NASTY * 4000, "error": NASTY * 1000, "status": "ok"}
            for j in range(3)
        ]
        thread_services.message_create(
            actor=svc,
            conversation_id=thread.pk,
            role="assistant" if i % 2 else "user",
            content=NASTY * 3000,
            tool_calls=calls if i % 2 else None,
        )
    handle = make_run(alice)
    response = run_api(handle.token).post(
        READ.format(handle.id), {"thread_id": thread.pk, "include_tools": True}, format="json"
    )
    assert response.status_code == 200, response.content
    assert len(response.content) <= READ_RESPONSE_BYTES
    data = json.loads(response.content)
    assert data["truncated"] is True and data["messages"]
    for message in data["messages"]:
        assert not message["truncated"] or message["content"].endswith(TRUNCATION_MARKER)
    for call in data.get("tool_calls", []):
        for field in ("input", "output", "error"):
            assert field in call["omitted"] or call[field].endswith(TRUNCATION_MARKER), (field, call[field][-20:])


def test_read_tool_calls_alone_cannot_break_the_cap(svc, alice, make_run, run_api):
    thread = thread_services.conversation_create(actor=svc, username="alice", title="t")
    # Control characters grow sixfold as JSON: the raw tool-call budgets alone would be ~96 KiB.
    calls = [
        {"name": "t", "input": {"x": "\x01" * 8000}, "output": "\x01" * 12000, "error": "\x02" * 12000}
        for _ in range(10)
    ]
    thread_services.message_create(
        actor=svc, conversation_id=thread.pk, role="assistant", content="short", tool_calls=calls
    )
    handle = make_run(alice)
    response = run_api(handle.token).post(
        READ.format(handle.id), {"thread_id": thread.pk, "include_tools": True}, format="json"
    )
    assert response.status_code == 200 and len(response.content) <= READ_RESPONSE_BYTES
    data = json.loads(response.content)
    assert data["messages"][0]["content"] == DATA_MARK + "short"


def test_search_with_escape_heavy_hits_stays_under_16_kib(svc, alice, make_run, run_api):
    thread = thread_services.conversation_create(actor=svc, username="alice", title=NASTY * 40)
    for i in range(15):
        thread_services.message_create(
            actor=svc, conversation_id=thread.pk, role="user", content=f"needle {i} " + NASTY * 3000
        )
    handle = make_run(alice)
    response = run_api(handle.token).post(SEARCH.format(handle.id), {"query": "needle " + NASTY * 100}, format="json")
    assert response.status_code == 200, response.content
    assert len(response.content) <= SEARCH_RESPONSE_BYTES
    data = json.loads(response.content)
    assert data["results"] and all(hit["snippet"].endswith(TRUNCATION_MARKER) for hit in data["results"])


# --- bounded list endpoints -----------------------------------------------------------------
MESSAGE_LIST_PAGE_BYTES = 256 * 1024  # docs/runs.md
RUN_LIST_PAGE_BYTES = 700 * 1024  # docs/runs.md


def test_message_list_is_capped_and_detail_has_the_full_text(api, svc, alice):
    thread = thread_services.conversation_create(actor=svc, username="alice", title="t")
    big = NASTY * 16000  # 64 KiB raw, ~224 KiB as JSON
    calls = [{"name": "t", "input": {"x": NASTY * 1000}, "output": NASTY * 4000}] * 5
    ids = [
        thread_services.message_create(
            actor=svc,
            conversation_id=thread.pk,
            role="user",
            content=big,
            tool_calls=calls,
            metadata={"m": NASTY * 1000},
        ).pk
        for _ in range(55)
    ]
    response = api(alice).get(f"/api/conversations/{thread.pk}/messages", {"page_size": 200})
    assert response.status_code == 200
    assert len(response.content) <= MESSAGE_LIST_PAGE_BYTES
    data = response.json()
    assert len(data["results"]) == 50 and data["count"] == 55
    first = data["results"][0]
    assert first["content_truncated"] is True and first["content"].endswith(TRUNCATION_MARKER)
    assert first["tool_call_count"] == 5
    detail = api(alice).get(f"/api/conversations/{thread.pk}/messages/{ids[0]}")
    assert detail.status_code == 200 and detail.json()["content"] == big and len(detail.json()["tool_calls"]) == 5
    # The detail endpoint keeps the owner rule.
    assert api(svc).get(f"/api/conversations/{thread.pk}/messages/{ids[0]}").status_code == 200


def test_message_detail_of_another_user_or_thread_is_404(api, svc, alice, mallory):
    thread = thread_services.conversation_create(actor=svc, username="alice", title="t")
    other = thread_services.conversation_create(actor=svc, username="alice", title="o")
    message = thread_services.message_create(actor=svc, conversation_id=thread.pk, role="user", content="secret")
    assert api(mallory).get(f"/api/conversations/{thread.pk}/messages/{message.pk}").status_code == 404
    assert api(alice).get(f"/api/conversations/{other.pk}/messages/{message.pk}").status_code == 404


def test_run_list_is_capped_and_detail_has_the_full_prompt(api, svc, alice):
    thread = thread_services.conversation_create(actor=svc, username="alice", title="t")
    prompt = NASTY * 60000  # 240 KiB raw
    for i in range(55):
        issued = run_services.run_create(
            actor=svc,
            username="alice",
            conversation_id=thread.pk,
            request_id='"' * 100,
            worker_id="\x01" * 200,
            prompt=prompt,
            goal=NASTY * 16000,
        )
        if i == 0:
            first_id = issued.run.pk
            run_services.run_finish(
                credential=leases.run_credential_from_token(issued.run_token),
                status="completed",
                usage={"u": "x" * 8000},
            )
    response = api(alice).get("/api/runs", {"page_size": 200})
    assert response.status_code == 200
    assert len(response.content) <= RUN_LIST_PAGE_BYTES
    data = response.json()
    assert len(data["results"]) == 50
    assert all(r["prompt_truncated"] and r["prompt"].endswith(TRUNCATION_MARKER) for r in data["results"])
    assert all(r["goal_truncated"] and r["goal"].endswith(TRUNCATION_MARKER) for r in data["results"])
    detail = api(alice).get(f"/api/runs/{first_id}")
    assert detail.status_code == 200 and detail.json()["prompt"] == prompt


def test_run_list_keeps_short_texts_whole(api, svc, alice, make_run):
    make_run(alice, prompt="short prompt", goal=None)
    make_run(alice, prompt="", goal="a goal")
    results = api(alice).get("/api/runs").json()["results"]
    assert {(r["prompt"], r["goal"], r["prompt_truncated"], r["goal_truncated"]) for r in results} == {
        ("short prompt", None, False, False),
        ("", "a goal", False, False),
    }
