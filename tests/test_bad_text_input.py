"""Text with NUL characters or unpaired UTF-16 surrogates is refused with a 4xx JSON
error everywhere and changes nothing. Request bodies are raw JSON text, so a lone surrogate
(which no client can encode) arrives exactly as a hostile caller would send it."""

import json

import pytest

from config.errors import InvalidInput, NotFound
from config.validation import clean_text, is_valid_id, validate_json_value
from identity_app.permissions import READ, project_require_permission
from memory_app.memories import services as memory_services
from memory_app.memories.models import Memory
from memory_app.notes import workspace
from memory_app.runs import tools
from memory_app.runs.models import AgentRun
from memory_app.scoped import services as scoped_items
from memory_app.threads import history
from memory_app.threads import services as thread_services
from memory_app.threads.models import Conversation, Message, ToolCall
from tests.memory_app.runs.helpers import memory_path

pytestmark = pytest.mark.django_db

SESSION = "milky:private:10001"
# How each kind of bad text is written inside a JSON document, and inside a query string.
BAD_JSON = {"nul": "\\u0000", "surrogate": "\\ud800"}
BAD_QUERY = {"nul": "%00", "surrogate": "%ED%A0%80"}
BAD_TEXT = {"nul": "a\x00b", "surrogate": "a\ud800b"}
CLIENT_ERRORS = range(400, 500)


def snapshot(world) -> dict:
    path = world["memory_file"]
    return {
        "memories": Memory.objects.count(),
        "messages": Message.objects.count(),
        "tool_calls": ToolCall.objects.count(),
        "conversations": Conversation.objects.count(),
        "runs": AgentRun.objects.count(),
        "memory_file": path.read_bytes() if path.exists() else None,
        "memory_rows": list(Memory.objects.order_by("pk").values_list("pk", "content", "metadata", "status")),
    }


# (name, client, method, path, body template, clean substitute, writes)
# ``{X}`` marks where the bad text goes; the clean substitute proves the same request succeeds.
JSON_CASES = [
    (
        "my_memory_content",
        "alice",
        "post",
        "/api/users/me/memories",
        {"content": "abc{X}def", "kind": "fact"},
        "x",
        True,
    ),
    (
        "my_memory_metadata",
        "alice",
        "post",
        "/api/users/me/memories",
        {"content": "abc", "kind": "fact", "metadata": {"a": "b{X}"}},
        "x",
        True,
    ),
    (
        "item_content",
        "svc",
        "post",
        "/api/memory/items",
        {"content": "abc{X}def", "kind": "fact", "session_id": SESSION},
        "x",
        True,
    ),
    (
        "item_metadata",
        "svc",
        "post",
        "/api/memory/items",
        {"content": "abc", "kind": "fact", "session_id": SESSION, "metadata": {"a": "b{X}"}},
        "x",
        True,
    ),
    (
        "item_metadata_key",
        "svc",
        "post",
        "/api/memory/items",
        {"content": "abc", "kind": "fact", "session_id": SESSION, "metadata": {"k{X}": "v"}},
        "x",
        True,
    ),
    ("item_search_query", "svc", "post", "/api/memory/search", {"query": "tea{X}", "session_id": SESSION}, "x", False),
    (
        "message_content",
        "svc",
        "post",
        "/api/conversations/{conv}/messages",
        {"role": "user", "content": "a{X}"},
        "x",
        True,
    ),
    (
        "message_metadata",
        "svc",
        "post",
        "/api/conversations/{conv}/messages",
        {"role": "user", "content": "x", "metadata": {"k": "a{X}"}},
        "x",
        True,
    ),
    (
        "message_attachments",
        "svc",
        "post",
        "/api/conversations/{conv}/messages",
        {"role": "user", "content": "x", "attachments": [{"name": "a{X}"}]},
        "x",
        True,
    ),
    (
        "message_tool_input",
        "svc",
        "post",
        "/api/conversations/{conv}/messages",
        {"role": "assistant", "content": "x", "tool_calls": [{"name": "n", "input": {"a": "{X}"}}]},
        "x",
        True,
    ),
    ("conversation_title", "svc", "post", "/api/conversations", {"user": "alice", "title": "a{X}"}, "x", True),
    ("remember_memory", "run", "post", "/api/runs/{run}/tools/remember_memory", {"content": "abc{X}def"}, "x", True),
    (
        "search_thread_messages",
        "run",
        "post",
        "/api/runs/{run}/tools/search_thread_messages",
        {"query": "tea{X}"},
        "x",
        False,
    ),
    (
        "read_thread_messages",
        "run",
        "post",
        "/api/runs/{run}/tools/read_thread_messages",
        {"thread_id": "{conv}{X}"},
        "",
        False,
    ),
    ("workspace_file", "alice", "put", "/api/users/me/workspace/MEMORY.md", {"content": "abc{X}def"}, "x", True),
]

# (name, client, path template with {Q}, clean substitute)
QUERY_CASES = [
    ("identity_context_project", "alice", "/api/users/me/identity-context?project_id={project}{Q}", ""),
    ("run_context_query", "run", "/api/runs/{run}/context?query=tea{Q}", "x"),
]


def _fill(text: str, world) -> str:
    return (
        text.replace("{conv}", world["conversation_id"])
        .replace("{run}", world["run_id"])
        .replace("{project}", world["project_id"])
    )


def _send(world, client, method, path, template, substitute):
    # JSON text written by hand: the placeholder is swapped inside the encoded document.
    body = _fill(json.dumps(template), world).replace("{X}", substitute)
    return getattr(world[client], method)(_fill(path, world), body, content_type="application/json")


def assert_error_shape(response, status_range=CLIENT_ERRORS):
    assert response.status_code in status_range, (response.status_code, response.content)
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    assert isinstance(body["error"]["code"], str) and body["error"]["code"]
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body["error"]


@pytest.mark.parametrize("bad", sorted(BAD_JSON))
@pytest.mark.parametrize("case", JSON_CASES, ids=[c[0] for c in JSON_CASES])
def test_bad_text_in_a_json_body_is_refused_and_changes_nothing(world, case, bad):
    _name, client, method, path, template, _clean, _writes = case
    before = snapshot(world)
    error = assert_error_shape(_send(world, client, method, path, template, BAD_JSON[bad]))
    assert response_is_about_text(error)
    assert snapshot(world) == before


@pytest.mark.parametrize("case", JSON_CASES, ids=[c[0] for c in JSON_CASES])
def test_the_same_request_with_clean_text_succeeds(world, case):
    _name, client, method, path, template, clean, writes = case
    before = snapshot(world)
    response = _send(world, client, method, path, template, clean)
    assert 200 <= response.status_code < 300, response.content
    assert (snapshot(world) != before) is writes


@pytest.mark.parametrize("bad", sorted(BAD_QUERY))
@pytest.mark.parametrize("case", QUERY_CASES, ids=[c[0] for c in QUERY_CASES])
def test_bad_text_in_a_query_string_is_refused(world, case, bad):
    name, client, path, _clean = case
    before = snapshot(world)
    response = world[client].get(_fill(path, world).replace("{Q}", BAD_QUERY[bad]))
    if name == "run_context_query" and bad == "surrogate":
        # Invalid UTF-8 in a query string is decoded with U+FFFD replacements: plain text.
        assert response.status_code == 200, response.content
    else:
        assert_error_shape(response)
    assert snapshot(world) == before


@pytest.mark.parametrize("case", QUERY_CASES, ids=[c[0] for c in QUERY_CASES])
def test_query_string_control_succeeds(world, case):
    _name, client, path, clean = case
    response = world[client].get(_fill(path, world).replace("{Q}", clean))
    assert response.status_code == 200, response.content


def response_is_about_text(error) -> bool:
    return error["code"] in ("malformed_request", "invalid_text") and (
        "NUL" in error["message"] or "surrogate" in error["message"]
    )


@pytest.mark.parametrize(
    "path, status",
    [
        ("/memories/a%00b/", 404),
        ("/projects/a%00b/", 404),
        ("/conversations/a%00b/", 404),
        ("/runs/a%00b/", 404),
        ("/admin/memory_app/memory/a%00b/change/", 404),
        ("/memories/?q=a%00b", 400),
        ("/admin/memory_app/memory/?q=a%00b", 400),
    ],
)
def test_web_pages_refuse_nul_in_the_url(client, admin, path, status):
    client.force_login(admin)
    memories = Memory.objects.count()
    assert client.get(path).status_code == status
    assert Memory.objects.count() == memories


@pytest.mark.parametrize("path", ["/api/users/me/memories/mem_1%00", "/api/users/me/workspace/MEMORY.md%00"])
def test_api_paths_with_nul_are_not_found(api, alice, path):
    assert assert_error_shape(api(alice).get(path))["code"] == "not_found"


def test_a_nul_in_a_cookie_is_refused(client, alice):
    client.force_login(alice)
    client.cookies["sessionid"] = "abc\x00def"
    assert client.get("/memories/").status_code == 400


def test_a_malformed_project_id_is_refused_and_an_unknown_one_is_not_found(world):
    error = assert_error_shape(world["alice"].get("/api/users/me/identity-context?project_id=prj.1"))
    assert error["code"] == "invalid"
    response = world["alice"].get("/api/users/me/identity-context?project_id=prj_missing")
    assert response.status_code == 404, response.content


# The service layer refuses the same text on its own: web forms, the admin and commands do not
# go through the API's parser.


@pytest.mark.parametrize("bad", sorted(BAD_TEXT))
def test_services_refuse_bad_text(alice, svc, make_run, workspace_root, bad):
    text = BAD_TEXT[bad]
    handle = make_run(alice)
    conversation_id = handle.run.conversation_id
    memories, messages = Memory.objects.count(), Message.objects.count()
    calls = [
        lambda: memory_services.memory_create(actor=alice, tier="user", kind="fact", content=text),
        lambda: memory_services.memory_create(
            actor=alice, tier="user", kind="fact", content="ok", metadata={"a": [text]}
        ),
        lambda: memory_services.memory_create(actor=alice, tier="user", kind="fact", content="ok", evidence={text: 1}),
        lambda: scoped_items.scoped_item_create(
            actor=svc, kind="fact", content="ok", session_id=SESSION, metadata={"a": {"b": text}}
        ),
        lambda: scoped_items.scoped_item_create(actor=svc, kind="fact", content=text, session_id=SESSION),
        lambda: thread_services.message_create(actor=svc, conversation_id=conversation_id, role="user", content=text),
        lambda: thread_services.message_create(
            actor=svc, conversation_id=conversation_id, role="user", content="x", metadata={"k": text}
        ),
        lambda: thread_services.message_create(
            actor=svc,
            conversation_id=conversation_id,
            role="assistant",
            content="x",
            tool_calls=[{"name": "n", "input": {"a": text}}],
        ),
        lambda: thread_services.message_create(
            actor=svc,
            conversation_id=conversation_id,
            role="assistant",
            content="x",
            tool_calls=[{"name": "n", "output": {"a": text}}],
        ),
        lambda: thread_services.conversation_create(actor=svc, username=alice.username, title=text),
        lambda: history.history_search(user_id=alice.pk, query=text),
        lambda: history.history_read(user_id=alice.pk, thread_id=text),
        lambda: tools.remember_memory(credential=handle.credential, content=text),
        lambda: tools.remember_memory(credential=handle.credential, content="ok", replaces=text),
        lambda: workspace.validate_workspace_content(text),
    ]
    for call in calls:
        with pytest.raises(InvalidInput) as caught:
            call()
        assert caught.value.code == "invalid_text"
    assert (Memory.objects.count(), Message.objects.count()) == (memories, messages)
    assert not memory_path(workspace_root, alice).exists()


@pytest.mark.parametrize("bad", sorted(BAD_TEXT))
def test_an_impossible_project_id_is_not_found(alice, project, bad):
    assert project_require_permission(user=alice, project_id=project.pk, permission=READ) == project
    with pytest.raises(NotFound):
        project_require_permission(user=alice, project_id=project.pk + BAD_TEXT[bad], permission=READ)


def test_validators_walk_nested_values_and_keys():
    good = {"a": ["b", {"c": "☕ 🍵 乌龙"}], "n": 1, "f": 1.5, "t": True, "z": None}
    assert validate_json_value(good, field="metadata") is good
    assert clean_text("🍵", field="content") == "🍵"
    assert clean_text(5, field="content") == 5  # type checks stay with the caller
    for bad in (["x", ["y", {"z": "\x00"}]], {"a": {"b\ud800": 1}}, {"\x00": "v"}, ("\udfff",)):
        with pytest.raises(InvalidInput) as caught:
            validate_json_value(bad, field="metadata")
        assert caught.value.code == "invalid_text"
        assert caught.value.message.startswith("metadata ")
    deep = current = []
    for _ in range(5000):
        current.append([])
        current = current[0]
    current.append("\x00")
    with pytest.raises(InvalidInput):
        validate_json_value(deep, field="metadata")
    assert is_valid_id("mem_01jabc-XYZ") and not is_valid_id("a\x00b") and not is_valid_id("a" * 41)
    assert not is_valid_id("é") and not is_valid_id("") and not is_valid_id(None)
