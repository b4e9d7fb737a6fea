"""Request bodies are bounded before they are parsed, on every API route: over
``API_MAX_BODY_BYTES`` → 413 ``payload_too_large`` without reading the body, nesting deeper
than ``API_MAX_JSON_DEPTH`` → 400 ``too_deep`` without decoding it; nothing is written."""

import io
import json

import pytest
from django.test import Client

from config.errors import InvalidInput, PayloadTooLarge
from config.validation import SafeJSONParser, json_nesting_depth
from identity_app.models import Project
from memory_app.memories.models import Memory
from memory_app.threads.models import Conversation, Message, ToolCall

pytestmark = pytest.mark.django_db

SESSION = "milky:private:10001"


# (name, client, method, path, a valid body whose JSON object fields can carry deep values)
ROUTES = [
    ("my_memories", "alice", "post", "/api/users/me/memories", {"kind": "fact", "content": "x"}),
    ("project_memories", "alice", "post", "/api/projects/{project_id}/identity-memories", {"kind": "fact"}),
    ("projects", "alice", "post", "/api/projects", {"name": "Zeus"}),
    ("project_update", "alice", "put", "/api/projects/{project_id}", {"description": "d"}),
    ("workspace", "alice", "put", "/api/users/me/workspace/MEMORY.md", {"content": "- x\n"}),
    ("messages", "svc", "post", "/api/conversations/{conversation_id}/messages", {"role": "user"}),
    ("items", "svc", "post", "/api/memory/items", {"kind": "fact", "content": "x", "session_id": SESSION}),
    ("remember_tool", "run", "post", "/api/runs/{run_id}/tools/remember_memory", {"content": "x"}),
    ("search_tool", "run", "post", "/api/runs/{run_id}/tools/search_thread_messages", {"query": "x"}),
    ("run_finish", "run", "post", "/api/runs/{run_id}/finish", {"status": "completed"}),
]
ROUTE_IDS = [route[0] for route in ROUTES]


def snapshot(world) -> dict:
    path = world["memory_file"]
    return {
        "memories": list(Memory.objects.order_by("pk").values_list("pk", "content", "metadata", "status")),
        "projects": list(Project.objects.order_by("pk").values_list("pk", "name", "description")),
        "messages": Message.objects.count(),
        "tool_calls": ToolCall.objects.count(),
        "conversations": Conversation.objects.count(),
        "memory_file": path.read_bytes() if path.exists() else None,
    }


def send(world, client_name, method, path, body: bytes, **extra):
    client = world[client_name]
    url = path.format(**world)
    return getattr(client, method)(url, data=body, content_type="application/json", **extra)


def nested(depth: int) -> str:
    """A JSON object nested ``depth`` levels deep."""
    return '{"a":' * (depth - 1) + "{}" + "}" * (depth - 1)


def assert_error(response, status, code):
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["error"]["code"] == code


@pytest.mark.parametrize("name, client_name, method, path, body", ROUTES, ids=ROUTE_IDS)
def test_deep_brackets_are_400_and_write_nothing(world, name, client_name, method, path, body):
    before = snapshot(world)
    for payload in ("[" * 100000 + "]" * 100000, "[" * 100000, '{"a":' * 5000):
        assert_error(send(world, client_name, method, path, payload.encode()), 400, "too_deep")
    assert snapshot(world) == before


@pytest.mark.parametrize("name, client_name, method, path, body", ROUTES, ids=ROUTE_IDS)
def test_deep_metadata_is_400_and_writes_nothing(world, name, client_name, method, path, body):
    before = snapshot(world)
    deep = json.dumps(body)[:-1] + ', "metadata": ' + nested(5000) + "}"
    assert_error(send(world, client_name, method, path, deep.encode()), 400, "too_deep")
    assert snapshot(world) == before


@pytest.mark.parametrize("name, client_name, method, path, body", ROUTES, ids=ROUTE_IDS)
def test_ten_megabytes_are_413_before_parsing(world, name, client_name, method, path, body):
    before = snapshot(world)
    # Not even JSON: a parsed body would be 400 malformed_request, so 413 proves it was not read.
    huge = b"x" * (10 * 1024 * 1024)
    assert_error(send(world, client_name, method, path, huge), 413, "payload_too_large")
    padded = json.dumps({**body, "content": "y" * (10 * 1024 * 1024)}).encode()
    assert_error(send(world, client_name, method, path, padded), 413, "payload_too_large")
    assert snapshot(world) == before


def test_body_cap_is_configurable(world, settings):
    settings.API_MAX_BODY_BYTES = 4096
    body = {"kind": "fact", "content": "z" * 3000}
    assert world["alice"].post("/api/users/me/memories", body, format="json").status_code == 201
    before = snapshot(world)
    body["content"] = "z" * 5000
    assert_error(world["alice"].post("/api/users/me/memories", body, format="json"), 413, "payload_too_large")
    assert snapshot(world) == before


def test_nesting_at_the_limit_is_accepted_and_one_more_is_not(world, settings):
    settings.API_MAX_JSON_DEPTH = 6
    # The body object is level 1, so metadata may nest five levels.
    ok = '{"kind": "fact", "content": "deep ok", "metadata": ' + nested(5) + "}"
    assert send(world, "alice", "post", "/api/users/me/memories", ok.encode()).status_code == 201
    too_deep = '{"kind": "fact", "content": "deep no", "metadata": ' + nested(6) + "}"
    assert_error(send(world, "alice", "post", "/api/users/me/memories", too_deep.encode()), 400, "too_deep")
    assert not Memory.objects.filter(content="deep no").exists()


def test_brackets_inside_strings_do_not_count(world):
    content = "[" * 5000 + '{"\\"' + "]" * 5000
    body = json.dumps({"kind": "fact", "content": content[:4000]}).encode()
    response = send(world, "alice", "post", "/api/users/me/memories", body)
    assert response.status_code == 201, response.content[:300]


def test_unknown_api_path_with_a_huge_body_is_refused_unread(world):
    assert_error(send(world, "alice", "post", "/api/no/such/route", b"x" * (2 * 1024 * 1024)), 413, "payload_too_large")


def test_anonymous_huge_body_is_413_before_authentication(db):
    response = Client().post("/api/users/me/memories", data=b"[" * (2 * 1024 * 1024), content_type="application/json")
    assert_error(response, 413, "payload_too_large")


class TerminatedInput(io.BytesIO):
    """The input of a server that decodes chunked bodies and signals their end (gunicorn)."""


def chunked(world, client_name, path, body: bytes):
    """A request without Content-Length whose body the server streams, as with chunked encoding."""
    client = world[client_name]
    return client.generic(
        "POST",
        path.format(**world),
        content_type="application/json",
        **{
            "HTTP_TRANSFER_ENCODING": "chunked",
            "wsgi.input": TerminatedInput(body),
            "wsgi.input_terminated": True,
        },
    )


def test_chunked_body_over_the_cap_is_413_and_writes_nothing(world, settings):
    settings.API_MAX_BODY_BYTES = 4096
    before = snapshot(world)
    body = json.dumps({"kind": "fact", "content": "c" * 5000}).encode()
    assert_error(chunked(world, "alice", "/api/users/me/memories", body), 413, "payload_too_large")
    assert_error(chunked(world, "run", "/api/runs/{run_id}/tools/remember_memory", body), 413, "payload_too_large")
    assert snapshot(world) == before


def test_chunked_body_under_the_cap_is_read(world, settings):
    settings.API_MAX_BODY_BYTES = 4096
    body = json.dumps({"kind": "fact", "content": "chunked fact"}).encode()
    response = chunked(world, "alice", "/api/users/me/memories", body)
    assert response.status_code == 201, response.content
    assert Memory.objects.filter(content="chunked fact").count() == 1


def test_parser_reads_no_more_than_the_cap(settings):
    settings.API_MAX_BODY_BYTES = 1024
    stream = io.BytesIO(b"[" + b"1," * 4096 + b"1]")
    with pytest.raises(PayloadTooLarge):
        SafeJSONParser().parse(stream, "application/json", {})
    assert stream.tell() == 1025


@pytest.mark.parametrize(
    "text, depth",
    [
        ("1", 0),
        ("[]", 1),
        ('{"a": [1, {"b": []}]}', 4),
        ('["[[[[", "]]", {"x": "{\\"[["}]', 2),
        ("[" * 50, 50),
        ("[[]][[[]]]", 3),
    ],
)
def test_json_nesting_depth(text, depth):
    assert json_nesting_depth(text) == depth


def _with_a_key_twice(body: dict) -> bytes:
    """``body`` as JSON with its first key given a second time (the second value last)."""
    key, value = next(iter(body.items()))
    text = json.dumps(body)
    return ("{" + json.dumps(key) + ": " + json.dumps(value) + ", " + text[1:]).encode()


@pytest.mark.parametrize("name, client_name, method, path, body", ROUTES, ids=ROUTE_IDS)
def test_a_key_named_twice_is_400_and_writes_nothing(world, name, client_name, method, path, body):
    before = snapshot(world)
    assert_error(send(world, client_name, method, path, _with_a_key_twice(body)), 400, "duplicate_key")
    assert snapshot(world) == before


def test_a_key_named_twice_at_any_depth_is_refused():
    parser = SafeJSONParser()
    for text in ('{"a": 1, "a": 2}', '{"m": {"x": 1, "x": 1}}', '[{"k": 1}, {"k": 2, "k": 3}]'):
        with pytest.raises(InvalidInput) as refused:
            parser.parse(io.BytesIO(text.encode()))
        assert refused.value.code == "duplicate_key"
    assert parser.parse(io.BytesIO(b'[{"k": 1}, {"k": 2}]')) == [{"k": 1}, {"k": 2}]


def test_an_imported_file_with_a_key_named_twice_is_refused(world):
    body = b'{"format": "memory-service-export", "version": 2, "memories": {"user": [], "user": []}}'
    upload = io.BytesIO(body)
    upload.name = "export.json"
    response = world["alice"].post("/api/users/me/import", {"file": upload}, format="multipart")
    if response.status_code == 415:  # the API takes the export as the JSON body
        response = world["alice"].post("/api/users/me/import", data=body, content_type="application/json")
    assert_error(response, 400, "duplicate_key")
