"""The client's hand-written calls and models against the server's OpenAPI schema, as served at
``/api/schema/``: fails when they disagree (a path or method the schema lacks, a body field or
query parameter it does not take, a response field it does not answer with)."""

import inspect
import json
import typing
import urllib.request

import memsvc
import pytest
from memsvc import _api, models

ANY = "x"
# Every builder of memsvc._api with arguments that fill every field it can send.
BUILDS = {
    "memories_list": lambda: _api.memories_list(MEMORY_FILTERS),
    "memory_get": lambda: _api.memory_get(ANY),
    "memory_add": lambda: _api.memory_add(ANY, "fact", {}, {}, ANY),
    "memory_correct": lambda: _api.memory_correct(ANY, ANY, "fact", {}, {}),
    "memory_forget": lambda: _api.memory_forget(ANY),
    "memory_chain": lambda: _api.memory_chain(ANY),
    "project_memories_list": lambda: _api.project_memories_list(ANY, MEMORY_FILTERS),
    "project_memory_get": lambda: _api.project_memory_get(ANY, ANY),
    "project_memory_add": lambda: _api.project_memory_add(ANY, ANY, "fact", {}, {}, ANY),
    "project_memory_correct": lambda: _api.project_memory_correct(ANY, ANY, ANY, "fact", {}, {}),
    "project_memory_forget": lambda: _api.project_memory_forget(ANY, ANY),
    "project_memory_chain": lambda: _api.project_memory_chain(ANY, ANY),
    "home_search": lambda: _api.home_search(ANY, 5),
    "export": _api.export,
    "import_": lambda: _api.import_({"format": ANY, "version": 2, "memories": {"user": []}}),
    "item_add": lambda: _api.item_add(ANY, "fact", ANY, {}, {}, "global"),
    "items_search": lambda: _api.items_search(ANY, ANY, 5, "fts"),
    "consolidate": lambda: _api.consolidate(ANY, []),
    "conversations_list": lambda: _api.conversations_list({"user": ANY, "page": 1, "page_size": 2, "q": ANY}),
    "conversation_create": lambda: _api.conversation_create(ANY, ANY, ANY, "chat", ANY, ANY, True, ANY),
    "conversation_get": lambda: _api.conversation_get(ANY),
    "conversation_update": lambda: _api.conversation_update(ANY, ANY, "archived", True),
    "messages_list": lambda: _api.messages_list(
        ANY, {"page": 1, "page_size": 2, "fields": "full", "ordering": "-created_at"}
    ),
    "message_forget": lambda: _api.message_forget(ANY, 1),
    "messages_forget": lambda: _api.messages_forget(ANY),
    "store_batch": lambda: _api.store_batch([{"op": "get", "namespace": ["users", ANY], "key": ANY}]),
    "message_add": lambda: _api.message_add(ANY, "user", ANY, "text", {}, [], ANY, []),
    "message_get": lambda: _api.message_get(ANY, 1),
    "messages_add": lambda: _api.messages_add(ANY, [{"role": "user", "content": ANY}]),
    "runs_list": lambda: _api.runs_list({"conversation": ANY, "user": ANY, "page": 1, "page_size": 1}),
    "run_create": lambda: _api.run_create(ANY, ANY, ANY, "chat", ANY, 60, ANY, ANY, ANY, ANY),
    "run_get": lambda: _api.run_get(ANY),
    "run_claim": lambda: _api.run_claim(ANY, ANY, 60),
    "run_heartbeat": lambda: _api.run_heartbeat(ANY, ANY, 60),
    "run_finish": lambda: _api.run_finish(ANY, ANY, "completed", {}),
    "run_context": lambda: _api.run_context(ANY, ANY, ANY, 1),
    "run_tool": lambda: _api.run_tool(ANY, ANY, "remember_memory", {}),
}
# The list filters the client names (every keyword of list_memories but paging).
MEMORY_FILTERS = {
    name: ANY
    for name in inspect.signature(memsvc.Client.list_memories).parameters
    if name not in ("self", "project_id")
}
# Response fields the client's own code reads, per schema component.
READS = {
    "RunIssuedOutput": {"id", "run_token", "conversation_id", "lease_expires_at"},
    "ConversationOutput": {"id", "owner"},
    "PaginatedMemoryOutputList": {"results", "next"},
    "PaginatedConversationOutputList": {"results", "next"},
    "PaginatedMessageListItemList": {"results", "next"},  # a list's messages, or whole ones (fields=full)
    "PaginatedRunListOutputList": {"results", "next"},
}


@pytest.fixture(scope="module")
def schema(live):
    with urllib.request.urlopen(f"{live.base}/api/schema/?format=json", timeout=60) as response:
        return json.loads(response.read())


def resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[-1]]
    if "allOf" in node and len(node["allOf"]) == 1:
        return resolve(schema, node["allOf"][0])
    return node


def test_every_builder_is_checked():
    builders = {
        name
        for name, fn in inspect.getmembers(_api, inspect.isfunction)
        if not name.startswith("_")
        and fn.__module__ == _api.__name__
        and inspect.signature(fn).return_annotation == "Call"
    }
    assert builders == set(BUILDS)


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_calls_exist_in_the_schema(schema, name):
    call = BUILDS[name]()
    assert call.path in schema["paths"], call.path
    operation = schema["paths"][call.path].get(call.method.lower())
    assert operation is not None, f"{call.method} {call.path}"
    parameters = {(p["name"], p["in"]) for p in operation.get("parameters", [])}
    for key in call.path_params:
        assert (key, "path") in parameters, key
    for key in call.params or {}:
        assert (key, "query") in parameters, f"{name}: query parameter {key}"
    if call.json is not None:
        body = operation["requestBody"]["content"]["application/json"]["schema"]
        body = resolve(schema, body)
        if body.get("properties"):  # an open object (a tool's arguments) takes any field
            assert set(call.json) <= set(body["properties"]), f"{name}: {set(call.json) - set(body['properties'])}"


def model_fields(model) -> set[str]:
    return set(typing.get_type_hints(model))


@pytest.mark.parametrize("model", list(models.SCHEMA_NAMES), ids=lambda m: m.__name__)
def test_models_name_only_fields_the_schema_answers_with(schema, model):
    component = schema["components"]["schemas"][models.SCHEMA_NAMES[model]]
    properties = set(component["properties"])
    assert model_fields(model) <= properties, model_fields(model) - properties
    assert set(component.get("required", [])) <= model_fields(model) | {"metadata", "evidence"}


@pytest.mark.parametrize("component", sorted(READS))
def test_fields_the_client_reads_are_answered(schema, component):
    answered = schema["components"]["schemas"][component]
    assert READS[component] <= set(answered["properties"])
    assert READS[component] - {"next", "lease_expires_at"} <= set(answered.get("required", []))


def test_responses_of_the_methods_follow_their_models(schema):
    """The success answer of each call is the component its model follows."""
    expected = {
        ("POST", "/api/runs/"): "RunIssuedOutput",
        ("POST", "/api/runs/{run_id}/claim/"): "RunIssuedOutput",
        ("GET", "/api/users/me/memories/{memory_id}/"): "MemoryOutput",
        ("GET", "/api/users/me/memories/{memory_id}/chain/"): "MemoryChainOutput",
        ("GET", "/api/users/me/memory-home/search/"): "HomeSearchOutput",
        ("POST", "/api/users/me/import/"): "ImportOutput",
        ("POST", "/api/memory/search/"): "SearchOutput",
        ("POST", "/api/conversations/"): "ConversationOutput",
        ("POST", "/api/conversations/{conversation_id}/messages/"): "MessageOutput",
        ("POST", "/api/conversations/{conversation_id}/messages/batch/"): "MessagesCreated",
        ("GET", "/api/runs/{run_id}/"): "RunOutput",
    }
    for (method, path), component in expected.items():
        responses = schema["paths"][path][method.lower()]["responses"]
        success = next(v for k, v in responses.items() if k.startswith("2"))
        assert success["content"]["application/json"]["schema"]["$ref"].endswith("/" + component), (method, path)
