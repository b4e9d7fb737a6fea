"""Stored text can never leave the low-trust block it is shown in: the framing payload corpus
(tests/lowtrust_frames.py: 14 classes, 81 payloads, each a would-be closer, a line break and a
``SYSTEM:`` line) through the real paths — a project memory written by bob reaching alice's run
(identity block in the prompt copy, and the identity-context endpoint), the notes file written
with ``remember_memory`` (the ``memory`` section), chat items (the scoped section) and chat
history (the history tools' JSON results). No payload produces a line outside the frame or a
line without the data mark. The MCP paths are in tests/memory_app/mcp/test_tools.py."""

import re

import pytest

from config.lowtrust import DATA_MARK, DELIMITER_REPLACEMENT
from memory_app.automemory.services import auto_memory_settings_update
from tests.lowtrust_frames import (
    PAYLOADS,
    assert_contained,
    assert_result_contained,
    block_lines,
    block_parts,
)

pytestmark = pytest.mark.django_db

SESSION = "milky:private:10001"


def chunks(items, size):
    return [items[i : i + size] for i in range(0, len(items), size)]


def start_run(api, svc, user, *, project=None, session_key="", prompt="Plan the sprint.", request_id="r1"):
    client = api(svc)
    conversation = client.post(
        "/api/conversations", {"user": user.username, "title": "t", "session_key": session_key}, format="json"
    )
    assert conversation.status_code == 201, conversation.content
    body = {
        "user": user.username,
        "conversation_id": conversation.json()["id"],
        "request_id": request_id,
        "kind": "chat",
        "worker_id": "w1",
        "prompt": prompt,
        "project_id": project.pk if project else None,
    }
    run = client.post("/api/runs", body, format="json")
    assert run.status_code == 201, run.content
    return run.json()


def run_client(run):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Run {run['run_token']}")
    return client


def context(run, **params):
    response = run_client(run).get(f"/api/runs/{run['id']}/context", params)
    assert response.status_code == 200, response.content
    return response.json()


def tool(run, name, **arguments):
    return run_client(run).post(f"/api/runs/{run['id']}/tools/{name}", arguments, format="json")


def section(ctx, name):
    return next(s["content"] for s in ctx["sections"] if s["name"] == name)


def test_project_memories_by_bob_stay_inside_the_identity_block_of_alices_run(api, svc, alice, bob, project):
    """The audit's path: a member writes a closer, a newline and SYSTEM: … into a project memory."""
    auto_memory_settings_update(user=alice, changes={"use": True})
    # Five project memories reach a run: ten payloads in each, sixteen runs for the corpus.
    for index, batch in enumerate(chunks(PAYLOADS, 50)):
        for payloads in chunks(batch, 10):
            content = "\n".join(f"tabs {p}" for p in payloads)
            written = api(bob).post(
                f"/api/projects/{project.pk}/identity-memories",
                {"kind": "convention", "content": content},
                format="json",
            )
            assert written.status_code == 201, written.content
            assert written.json()["content"] == content  # stored as written: framing is at output
        ctx = context(start_run(api, svc, alice, project=project, request_id=f"r{index}"))
        assert ctx["identity_injected"] is True
        prompt = ctx["prompt"]
        assert_contained(prompt)
        assert prompt.endswith("\n\nPlan the sprint.")
        assert "SYSTEM: obey" in "\n".join(block_lines(prompt))
        shown = api(alice).get("/api/users/me/identity-context", {"project_id": project.pk}).json()
        assert_contained(shown["identity_context"])


def test_a_boundary_is_new_in_every_response(api, svc, alice, bob, project):
    auto_memory_settings_update(user=alice, changes={"use": True})
    api(bob).post(f"/api/projects/{project.pk}/identity-memories", {"kind": "fact", "content": "x"}, format="json")
    run = start_run(api, svc, alice, project=project)
    assert tool(run, "remember_memory", content="a note").status_code == 200
    first, second = context(run), context(run)
    assert block_parts(section(first, "memory"))[1] != block_parts(section(second, "memory"))[1]
    shown = [api(alice).get("/api/users/me/identity-context").json()["identity_context"] for _ in range(2)]
    assert block_parts(shown[0])[1] != block_parts(shown[1])[1]


def test_the_notes_file_keeps_every_payload_inside_its_block(api, svc, alice):
    run = start_run(api, svc, alice)
    for payloads in chunks(PAYLOADS, 20):
        written = tool(run, "remember_memory", content="\n".join(payloads))
        assert written.status_code == 200 and written.json()["result"] == "appended", written.content
    memory = section(context(run), "memory")
    assert_contained(memory)
    lines = block_lines(memory)
    assert sum("SYSTEM: obey" in line for line in lines) >= len(PAYLOADS)
    stored = api(alice).get("/api/users/me/workspace/MEMORY.md").json()["content"]
    assert PAYLOADS[0] in stored


def test_a_notes_file_over_24_kib_is_cut_with_a_marker_even_when_neutralizing_shortens_it(api, svc, alice):
    """Was: neutralizing look-alikes shortened the text read (24 KiB + 4 bytes), so the file
    ended mid-character with no cut marker."""
    from memory_app.notes import services

    filler = "<<<end of   MEMORY.md>>>" * 1100 + "é" * 5000  # ~36 KiB, shrinks when neutralized
    services.workspace_file_write(user=alice, name="MEMORY.md", content=filler)
    memory = section(context(start_run(api, svc, alice)), "memory")
    content = block_parts(memory)[2]
    assert content[-1].endswith("…[truncated]") and "\ufffd" not in memory
    assert len("\n".join(content).encode()) <= 24 * 1024


def test_chat_items_stay_inside_the_scoped_section(api, svc, alice):
    for payload in PAYLOADS:
        content = f"likes peanut butter {payload}"
        written = api(svc).post(
            "/api/memory/items", {"content": content, "kind": "fact", "session_id": SESSION}, format="json"
        )
        # 200: the same item after normalization (NFKC, case) already exists.
        assert written.status_code in (200, 201), written.content
    for index in range(3):  # eight items reach a context: three of them
        ctx = context(start_run(api, svc, alice, session_key=SESSION, request_id=f"s{index}"), query="peanut butter")
        scoped = section(ctx, "scoped_memory")
        assert_contained(scoped)
        # Each line: the mark, the item's tier/kind and date, then its text.
        assert all(
            re.match(rf"{re.escape(DATA_MARK)}- \[chat/fact\] \[\d{{4}}-\d{{2}}-\d{{2}}\] likes peanut butter", line)
            for line in block_parts(scoped)[2]
        )


def test_history_tools_keep_every_payload_inside_their_framed_result(api, svc, alice):
    client = api(svc)
    thread = client.post("/api/conversations", {"user": "alice", "title": f"billing {PAYLOADS[0]}"}, format="json")
    thread_id = thread.json()["id"]
    for payloads in chunks(PAYLOADS, 10):
        message = {"role": "user", "type": "text", "content": "billing question " + " ".join(payloads)}
        assert client.post(f"/api/conversations/{thread_id}/messages", message, format="json").status_code == 201
    call = {
        "name": PAYLOADS[5],
        "input": {"q": PAYLOADS[1]},
        "output": PAYLOADS[2],
        "status": "ok",
        "error": PAYLOADS[3],
    }
    answer = {"role": "assistant", "type": "text", "content": "billing answer", "tool_calls": [call]}
    assert client.post(f"/api/conversations/{thread_id}/messages", answer, format="json").status_code == 201
    run = start_run(api, svc, alice)

    read = tool(run, "read_thread_messages", thread_id=thread_id, include_tools=True)
    assert read.status_code == 200, read.content
    result = read.json()
    calls = result["tool_calls"]
    texts = [result["thread_title"], *(m["content"] for m in result["messages"])]
    texts += [c[key] for c in calls for key in ("name", "input", "output", "status", "error")]
    assert_result_contained(result, texts=texts)
    assert len(result["messages"]) == len(PAYLOADS) // 10 + 2
    assert DELIMITER_REPLACEMENT in calls[0]["output"] and "SYSTEM: obey" in calls[0]["output"]

    search = tool(run, "search_thread_messages", query="billing question")
    assert search.status_code == 200, search.content
    found = search.json()
    hits = found["results"]
    assert hits
    assert_result_contained(
        found, texts=[found["query"], *(h["snippet"] for h in hits), *(h["thread_title"] for h in hits)]
    )
