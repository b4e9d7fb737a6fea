"""The OpenAPI schema tells the truth: response shapes as returned, strict inputs closed
(``additionalProperties: false``), required fields required, the error shape documented, and
the query parameters it declares validated as declared. Unknown API paths answer in the error
shape in development mode too."""

import json
import re

import pytest
from django.test import Client

from config.api.inputs import NOT_ONLY_SPACE
from identity_app.session_keys import SESSION_KEY_PATTERN, ChatAddress, SessionKey, chat_key_pattern
from tests.factories import ProjectMemoryFactory, UserMemoryFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    with django_db_blocker.unblock():
        response = Client().get("/api/schema/?format=json")
    assert response.status_code == 200
    return json.loads(response.content)


def component(schema, ref_or_schema):
    if len(ref_or_schema.get("allOf", [])) == 1:
        ref_or_schema = ref_or_schema["allOf"][0]
    ref = ref_or_schema.get("$ref", "")
    return schema["components"]["schemas"][ref.rsplit("/", 1)[-1]] if ref else ref_or_schema


def response_schema(schema, path, method, status="200"):
    content = schema["paths"][path][method]["responses"][status]["content"]["application/json"]
    return component(schema, content["schema"])


def request_schema(schema, path, method):
    content = schema["paths"][path][method]["requestBody"]["content"]["application/json"]
    return component(schema, content["schema"])


@pytest.mark.parametrize(
    "path",
    ["/api/users/me/memories/{memory_id}/chain/", "/api/projects/{project_id}/identity-memories/{memory_id}/chain/"],
)
def test_chain_is_documented_as_the_object_it_returns(schema, path, api, alice, project):
    documented = response_schema(schema, path, "get")
    assert documented["type"] == "object"
    assert documented["properties"]["results"]["type"] == "array"
    assert component(schema, documented["properties"]["results"]["items"])["properties"]["superseded_by"]
    memory = UserMemoryFactory(owner=alice) if "users" in path else ProjectMemoryFactory(project=project)
    url = path.format(memory_id=memory.pk, project_id=project.pk)
    body = api(alice).get(url).json()
    assert set(body) == {"results"} and [m["id"] for m in body["results"]] == [memory.pk]


def test_consolidate_is_documented_as_the_object_it_returns(schema):
    documented = response_schema(schema, "/api/memory/consolidate/", "post")
    assert set(documented["properties"]) == {"session_id", "candidates", "counts"}
    assert request_schema(schema, "/api/memory/consolidate/", "post")["properties"]["messages"]["minItems"] == 1


def test_every_request_body_is_closed(schema):
    """Every input serializer refuses unknown fields, and every request body says so."""
    bodies = {}
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if content and "$ref" in content["schema"]:
                bodies[f"{method.upper()} {path}"] = component(schema, content["schema"])
    assert len(bodies) > 25
    open_bodies = [name for name, body in bodies.items() if body.get("additionalProperties") is not False]
    assert open_bodies == []
    nested = schema["components"]["schemas"]["TurnMessageInputRequest"]
    assert nested["additionalProperties"] is False


def test_unknown_field_is_refused_where_the_schema_says_closed(api, svc):
    response = api(svc).post(
        "/api/memory/consolidate",
        {"session_id": "milky:private:1", "messages": [{"role": "user", "content": "hi", "extra": 1}]},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["error"]["details"]["messages"][0]["extra"] == ["Unknown field."]


def test_chat_bindings_document_the_chats_they_take(schema):
    chat_key = request_schema(schema, "/api/chat-bindings/", "post")["properties"]["chat_key"]
    assert re.fullmatch(chat_key["pattern"], "milky:private:1") and re.fullmatch(chat_key["pattern"], "qq:dm:2")
    assert not re.fullmatch(chat_key["pattern"], "milky:group:1")


def test_memory_items_needs_a_session_unless_the_scope_is_explicit(schema, api, svc):
    body = request_schema(schema, "/api/memory/items/", "post")
    assert body["anyOf"] == [{"required": ["session_id"]}, {"required": ["scope_type"]}]
    assert body["properties"]["session_id"]["pattern"] == SESSION_KEY_PATTERN
    response = api(svc).post("/api/memory/items", {"content": "x", "kind": "fact"}, format="json")
    assert response.status_code == 400


def test_identity_memories_document_the_kinds_they_take(schema):
    for path in ("/api/users/me/memories/", "/api/projects/{project_id}/identity-memories/"):
        kind = request_schema(schema, path, "post")["properties"]["kind"]
        assert component(schema, kind)["enum"] == ["convention", "decision", "fact", "preference"]


def test_patch_documents_the_fields_put_requires(schema):
    member = request_schema(schema, "/api/projects/{project_id}/members/{user_id}/", "patch")
    assert member["required"] == ["role"]


@pytest.mark.parametrize(
    "value, valid",
    [
        ("milky:private:10001", True),
        ("milky:private:10001:cron:abc", True),
        ("milky:10001", True),
        ("milky:10001:cron:abc", True),
        ("tg-2:group:-100.5@x", True),
        ("milky:private", False),
        ("milky:Private:10001", False),
        ("milky:PRIVATE:10001:cron:abc", False),
        ("milky:privat:10001", False),
        ("telegram:user:5", False),
        ("milky:private:10001:cron", False),
        ("Milky:private:1", False),
        ("milky", False),
        ("milky:private:a b", False),
        ("0", False),
        ("milky:dmx:1:2", True),
        ("milky:dmx:1:2:3", False),
    ],
)
def test_documented_session_key_pattern_agrees_with_the_parser(value, valid):
    try:
        SessionKey.parse(value)
        parsed = True
    except Exception:
        parsed = False
    assert parsed is valid
    assert (re.fullmatch(SESSION_KEY_PATTERN, value) is not None) is valid
    try:
        ChatAddress.parse(value)
        chat = True
    except Exception:
        chat = False
    assert (re.fullmatch(chat_key_pattern(), value) is not None) is chat


def test_every_operation_documents_the_error_shape(schema):
    error = schema["components"]["schemas"]["Error"]
    assert error["required"] == ["error"]
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            for status in ("400", "401", "403", "404", "429"):  # 400: a query parameter it does not take
                assert responses[status]["content"]["application/json"]["schema"] == {
                    "$ref": "#/components/schemas/Error"
                }, (method, path, status)
            if "requestBody" in operation:
                assert {"400", "413", "415"} <= set(responses), (method, path)


@pytest.mark.parametrize("query", ["page_size=null", "page_size=0", "page_size=-1", "page_size=", "page=0", "page=x"])
def test_bad_paging_is_400_not_ignored(api, alice, query):
    response = api(alice).get(f"/api/users/me/memories?{query}")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "invalid"


def test_paging_limits(schema, api, alice):
    UserMemoryFactory.create_batch(3, owner=alice)
    client = api(alice)
    assert len(client.get("/api/users/me/memories?page_size=2").json()["results"]) == 2
    assert len(client.get("/api/users/me/memories?page_size=100000").json()["results"]) == 3
    assert client.get("/api/users/me/memories?page=2&page_size=3").status_code == 404
    parameters = {p["name"]: p for p in schema["paths"]["/api/users/me/memories/"]["get"]["parameters"]}
    assert parameters["page_size"]["schema"]["minimum"] == 1 and parameters["page"]["schema"]["minimum"] == 1


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("method", ["get", "post", "delete"])
def test_unknown_api_paths_answer_in_the_error_shape(settings, api, alice, debug, method):
    settings.DEBUG = debug
    for client in (Client(), api(alice)):
        for path in ("/api/nope", "/api/users/me/nothing/", "/api/users/me/memories/a/b/c"):
            response = getattr(client, method)(path)
            assert response.status_code == 404, (path, response.status_code)
            assert response["Content-Type"] == "application/json"
            assert response.json() == {
                "error": {"code": "not_found", "message": "Not found.", "request_id": response["X-Request-ID"]}
            }


def test_schema_and_docs_answer_without_the_trailing_slash(client):
    assert client.get("/api/schema").status_code == 200
    assert client.get("/api/docs").status_code == 200


def test_member_id_too_large_for_the_database_is_404(api, alice, project):
    response = api(alice).put(f"/api/projects/{project.pk}/members/{'9' * 30}", {"role": "member"}, format="json")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_a_user_a_service_acts_for_who_does_not_exist_is_404(api, svc, alice):
    client = api(svc)
    conversation = client.post("/api/conversations", {"user": "alice", "title": "t"}, format="json").json()
    for path, body in (
        ("/api/conversations", {"user": "ghost"}),
        ("/api/runs", {"user": "ghost", "conversation_id": conversation["id"], "request_id": "r", "worker_id": "w"}),
        ("/api/chat-bindings", {"chat_key": "milky:private:1", "user": "ghost"}),
    ):
        response = client.post(path, body, format="json")
        assert response.status_code == 404, (path, response.content)
        assert response.json()["error"]["code"] == "unknown_user"


@pytest.mark.parametrize("query", ["created_before=", "created_after=", "status=", "origin=", "kind="])
def test_an_empty_filter_is_400_unless_it_is_free_text(api, alice, query):
    response = api(alice).get(f"/api/users/me/memories?{query}")
    assert response.status_code == 400, response.content
    assert api(alice).get("/api/users/me/memories?q=").status_code == 200


def test_integers_are_not_coerced_and_bounds_are_documented(schema, api, svc, alice):
    body = request_schema(schema, "/api/runs/", "post")
    assert body["properties"]["lease_seconds"]["minimum"] == 5
    assert body["properties"]["lease_seconds"]["maximum"] == 3600
    client = api(svc)
    conversation = client.post("/api/conversations", {"user": "alice"}, format="json").json()
    run = {"user": "alice", "conversation_id": conversation["id"], "request_id": "r", "worker_id": "w"}
    assert client.post("/api/runs", {**run, "lease_seconds": "60"}, format="json").status_code == 400
    assert client.post("/api/runs", {**run, "lease_seconds": 60}, format="json").status_code == 201


def test_message_json_fields_are_documented_as_the_service_takes_them(schema, api, svc, alice):
    body = request_schema(schema, "/api/conversations/{conversation_id}/messages/", "post")
    metadata = dict(body["properties"]["metadata"])
    assert "`name` (or `speaker`)" in metadata.pop("description")  # who said it: history search reads it
    assert metadata == {"type": "object", "additionalProperties": {}, "nullable": True}
    assert body["properties"]["tool_calls"]["items"]["required"] == ["name"]
    client = api(svc)
    conversation = client.post("/api/conversations", {"user": "alice"}, format="json").json()
    response = client.post(
        f"/api/conversations/{conversation['id']}/messages",
        {"role": "user", "content": "hi", "metadata": None, "attachments": None, "tool_calls": None},
        format="json",
    )
    assert response.status_code == 201, response.content


def test_choices_checked_by_the_services_are_documented(schema):
    conversation = request_schema(schema, "/api/conversations/{conversation_id}/", "patch")
    assert component(schema, conversation["properties"]["status"])["enum"] == ["active", "archived", "deleted"]
    finish = request_schema(schema, "/api/runs/{run_id}/finish/", "post")
    assert component(schema, finish["properties"]["status"])["enum"] == ["completed", "failed", "cancelled"]
    profile = request_schema(schema, "/api/users/me/profile/", "put")
    assert "Europe/Berlin" in component(schema, profile["properties"]["timezone"])["enum"]
    required_text = request_schema(schema, "/api/users/me/memories/", "post")["properties"]["content"]
    assert required_text["pattern"] == NOT_ONLY_SPACE  # trimmed, so white space alone is no content
    for blank in (" ", "\x1c", "\u3000\t"):
        assert not re.search(NOT_ONLY_SPACE, blank) and not blank.strip()


def test_home_sources_are_documented_as_the_parser_takes_them(schema):
    parameters = {p["name"]: p for p in schema["paths"]["/api/users/me/memory-home/items/"]["get"]["parameters"]}
    pattern = parameters["source"]["schema"]["pattern"]
    for value in ("user", "auto", "project:prj_1", "chat:milky:private:1"):
        assert re.fullmatch(pattern, value), value
    for value in (
        "notes",
        "all",
        "",
        "chat:milky:1",
        "project:",
        "chat:milky:private:1:cron:x",
        "chat:milky:Private:1",
    ):
        assert not re.fullmatch(pattern, value), value
    forget = request_schema(schema, "/api/users/me/memory-home/forget-all/", "post")
    assert component(schema, forget["properties"]["confirm"])["enum"] == ["FORGET"]
    assert re.fullmatch(forget["properties"]["source"]["pattern"], "all")


def test_max_length_holds_for_the_text_as_sent(api, alice, project):
    response = api(alice).put(
        f"/api/projects/{project.pk}", {"description": " " + "d" * 2000 + " " * 5000}, format="json"
    )
    assert response.status_code == 400 and "description" in response.json()["error"]["details"]


def test_notes_file_versions_are_documented_as_checked(schema):
    body = request_schema(schema, "/api/users/me/workspace/{name}/", "put")
    assert body["properties"]["base_sha256"]["pattern"] == "^[0-9a-f]{64}$"


def _query_parameters(schema):
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if isinstance(operation, dict):
                for parameter in operation.get("parameters", []):
                    if parameter.get("in") == "query":
                        yield f"{method.upper()} {path} {parameter['name']}", parameter["schema"]


def test_query_enums_hold_values_of_their_declared_type(schema):
    """A `true`/`false` choice is a string enum: `boolean` with string values accepts what the
    server refuses (`no_memory=2`) and refuses what it reads."""
    python_type = {"string": str, "integer": int, "boolean": bool}
    wrong = [
        name
        for name, item in _query_parameters(schema)
        if "enum" in item and not all(isinstance(v, python_type.get(item.get("type"), object)) for v in item["enum"])
    ]
    assert wrong == []


def test_repeatable_query_parameters_take_at_least_one_item(schema):
    """Sent empty, a repeatable filter is a 400 ("May not be empty"), so the schema says so."""
    assert [
        name for name, item in _query_parameters(schema) if item.get("type") == "array" and not item.get("minItems")
    ] == []


def test_a_filter_with_a_pattern_documents_it_and_the_server_agrees(schema, api, alice):
    platform = dict(_query_parameters(schema))["GET /api/chat-bindings/ platform"]
    pattern = re.compile(platform["pattern"])
    client = api(alice)
    for value, ok in (("milky", True), ("Milky", False), ("a" * 33, False), ("qq_2", True)):
        assert bool(pattern.search(value)) is ok
        assert (client.get("/api/chat-bindings", {"platform": value}).status_code == 200) is ok


def test_the_import_body_names_what_it_takes(schema):
    body = request_schema(schema, "/api/users/me/import/", "post")
    properties = body["properties"]
    assert properties["notes_files"]["additionalProperties"] is False
    assert set(properties["notes_files"]["properties"]) == {"AGENTS.md", "USER.md", "MEMORY.md"}
    assert properties["settings"]["additionalProperties"] is False
    assert properties["settings"]["properties"]["auto_memory"]["additionalProperties"] is False


def test_every_operation_documents_429(schema):
    missing = [
        f"{method} {path}"
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if isinstance(operation, dict) and "429" not in operation.get("responses", {})
    ]
    assert missing == []
