"""The service's endpoints, once: each builder returns the :class:`Call` one client method makes.

The sync and async clients only send these calls, so both have the same paths, bodies and
retry rules; the test suite checks every builder against the OpenAPI schema.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

# Writes the service makes idempotent, so a lost answer may be asked again (docs/home.md,
# docs/runs.md): an import skips what it already holds; a heartbeat sets the lease again;
# the history tools and the item search only read; an append of a note converges (a repeat
# answers ``unchanged``). Run creation is not: two creates with one request_id are two runs.
READ_ONLY_TOOLS = frozenset({"search_thread_messages", "read_thread_messages"})


@dataclass(frozen=True)
class Call:
    method: str
    path: str  # the schema's path template, e.g. "/api/users/me/memories/{memory_id}/"
    path_params: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] | None = None
    json: Any = None
    idempotent: bool = False  # may be repeated after a lost answer or a 5xx
    run_token: str | None = None  # authenticate with this run token instead of the API key

    def __post_init__(self):
        if self.method in ("GET", "HEAD"):
            object.__setattr__(self, "idempotent", True)

    @property
    def url(self) -> str:
        return self.path.format(**{k: quote(str(v), safe="") for k, v in self.path_params.items()})


def _body(**fields: Any) -> dict[str, Any]:
    """The JSON body without the arguments left out (the service refuses unknown fields and
    distinguishes an absent field from ``null`` only where documented)."""
    return {k: v for k, v in fields.items() if v is not None}


def _query(filters: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in filters.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, (list, tuple)) and key == "ordering":
            if value:  # one value, its fields comma separated (none: the list's own order)
                out[key] = ",".join(str(v) for v in value)
        elif isinstance(value, (list, tuple, set, frozenset)):
            out[key] = [str(v) for v in value]  # repeatable filters: key=a&key=b
        else:
            out[key] = value
    return out


def _id(value: Any) -> str:
    """An object's id: accepts the id or a dict the service answered with."""
    if isinstance(value, dict):
        return str(value["id"])
    return str(value)


# --- identity memories (tier user) ---------------------------------------------------------
MEMORIES = "/api/users/me/memories/"
MEMORY = "/api/users/me/memories/{memory_id}/"


def memories_list(filters: dict[str, Any]) -> Call:
    return Call("GET", MEMORIES, params=_query(filters))


def memory_get(memory_id) -> Call:
    return Call("GET", MEMORY, {"memory_id": _id(memory_id)})


def memory_add(content, kind, metadata, evidence, source_thread_id) -> Call:
    body = _body(content=content, kind=kind, metadata=metadata, evidence=evidence, source_thread_id=source_thread_id)
    return Call("POST", MEMORIES, json=body)


def memory_correct(memory_id, content, kind, metadata, evidence) -> Call:
    body = _body(content=content, kind=kind, metadata=metadata, evidence=evidence)
    return Call("POST", "/api/users/me/memories/{memory_id}/supersede/", {"memory_id": _id(memory_id)}, json=body)


def memory_forget(memory_id) -> Call:
    return Call("DELETE", MEMORY, {"memory_id": _id(memory_id)})


def memory_chain(memory_id) -> Call:
    return Call("GET", "/api/users/me/memories/{memory_id}/chain/", {"memory_id": _id(memory_id)})


# --- project identity memories -------------------------------------------------------------
PROJECT_MEMORIES = "/api/projects/{project_id}/identity-memories/"
PROJECT_MEMORY = "/api/projects/{project_id}/identity-memories/{memory_id}/"


def project_memories_list(project_id, filters: dict[str, Any]) -> Call:
    return Call("GET", PROJECT_MEMORIES, {"project_id": _id(project_id)}, params=_query(filters))


def project_memory_get(project_id, memory_id) -> Call:
    return Call("GET", PROJECT_MEMORY, {"project_id": _id(project_id), "memory_id": _id(memory_id)})


def project_memory_add(project_id, content, kind, metadata, evidence, source_thread_id) -> Call:
    body = _body(content=content, kind=kind, metadata=metadata, evidence=evidence, source_thread_id=source_thread_id)
    return Call("POST", PROJECT_MEMORIES, {"project_id": _id(project_id)}, json=body)


def project_memory_correct(project_id, memory_id, content, kind, metadata, evidence) -> Call:
    body = _body(content=content, kind=kind, metadata=metadata, evidence=evidence)
    ids = {"project_id": _id(project_id), "memory_id": _id(memory_id)}
    return Call("POST", "/api/projects/{project_id}/identity-memories/{memory_id}/supersede/", ids, json=body)


def project_memory_forget(project_id, memory_id) -> Call:
    return Call("DELETE", PROJECT_MEMORY, {"project_id": _id(project_id), "memory_id": _id(memory_id)})


def project_memory_chain(project_id, memory_id) -> Call:
    ids = {"project_id": _id(project_id), "memory_id": _id(memory_id)}
    return Call("GET", "/api/projects/{project_id}/identity-memories/{memory_id}/chain/", ids)


# --- memory home, export, import -----------------------------------------------------------
def home_search(q, limit) -> Call:
    return Call("GET", "/api/users/me/memory-home/search/", params=_query({"q": q, "limit": limit}))


def export() -> Call:
    return Call("GET", "/api/users/me/export/")


def import_(document) -> Call:
    # All or nothing, and a repeat skips what the first one wrote (docs/home.md, "Import").
    return Call("POST", "/api/users/me/import/", json=document, idempotent=True)


# --- scoped items (chat/global) ------------------------------------------------------------
def item_add(content, kind, session_id, metadata, evidence, scope_type) -> Call:
    body = _body(
        content=content, kind=kind, session_id=session_id, metadata=metadata, evidence=evidence, scope_type=scope_type
    )
    return Call("POST", "/api/memory/items/", json=body)


def items_search(query, session_id, limit, mode, keep_best=None) -> Call:
    body = _body(query=query, session_id=session_id, limit=limit, mode=mode, keep_best=keep_best)
    return Call("POST", "/api/memory/search/", json=body, idempotent=True)  # reads only


def consolidate(session_id, messages) -> Call:
    return Call("POST", "/api/memory/consolidate/", json={"session_id": session_id, "messages": list(messages)})


# --- conversations and messages ------------------------------------------------------------
CONVERSATIONS = "/api/conversations/"
CONVERSATION = "/api/conversations/{conversation_id}/"
MESSAGES = "/api/conversations/{conversation_id}/messages/"


def conversations_list(filters: dict[str, Any]) -> Call:
    return Call("GET", CONVERSATIONS, params=_query(filters))


def conversation_create(user, title, project_id, source, parent_id, session_key, no_memory, external_id=None) -> Call:
    body = _body(
        user=user,
        title=title,
        project_id=project_id,
        source=source,
        parent_id=parent_id,
        session_key=session_key,
        no_memory=no_memory,
        external_id=external_id,
    )
    # With an external id, a repeat finds the conversation the first one made (docs/API.md).
    return Call("POST", CONVERSATIONS, json=body, idempotent=external_id is not None)


def conversation_get(conversation_id) -> Call:
    return Call("GET", CONVERSATION, {"conversation_id": _id(conversation_id)})


def conversation_update(conversation_id, title, status, no_memory) -> Call:
    body = _body(title=title, status=status, no_memory=no_memory)
    return Call("PATCH", CONVERSATION, {"conversation_id": _id(conversation_id)}, json=body)


def messages_list(conversation_id, filters: dict[str, Any]) -> Call:
    return Call("GET", MESSAGES, {"conversation_id": _id(conversation_id)}, params=_query(filters))


def message_add(conversation_id, role, content, type, metadata, attachments, run_id, tool_calls) -> Call:
    body = _body(
        role=role,
        type=type,
        content=content,
        metadata=metadata,
        attachments=attachments,
        run_id=run_id,
        tool_calls=tool_calls,
    )
    return Call("POST", MESSAGES, {"conversation_id": _id(conversation_id)}, json=body)


def messages_add(conversation_id, messages: list[dict[str, Any]]) -> Call:
    """Several messages, in order, all or none (each as ``message_add`` takes it)."""
    body = {"messages": [_body(**message) for message in messages]}
    return Call("POST", MESSAGES + "batch/", {"conversation_id": _id(conversation_id)}, json=body)


def message_get(conversation_id, message_id) -> Call:
    ids = {"conversation_id": _id(conversation_id), "message_id": _id(message_id)}
    return Call("GET", "/api/conversations/{conversation_id}/messages/{message_id}/", ids)


def message_forget(conversation_id, message_id) -> Call:
    ids = {"conversation_id": _id(conversation_id), "message_id": _id(message_id)}
    return Call("DELETE", "/api/conversations/{conversation_id}/messages/{message_id}/", ids)


def messages_forget(conversation_id) -> Call:
    return Call("DELETE", MESSAGES, {"conversation_id": _id(conversation_id)}, idempotent=True)


# --- the store (LangGraph's BaseStore over memories) --------------------------------------
def store_batch(ops: list[dict[str, Any]]) -> Call:
    # Every operation converges when repeated: a put of the same value changes nothing, a
    # delete of a deleted key neither (docs/integrations.md, "The store").
    return Call("POST", "/api/store/batch/", json={"ops": ops}, idempotent=True)


# --- runs ----------------------------------------------------------------------------------
def runs_list(filters: dict[str, Any]) -> Call:
    return Call("GET", "/api/runs/", params=_query(filters))


def run_create(
    user, conversation_id, request_id, kind, worker_id, lease_seconds, prompt, goal, parent_run_id, project_id
) -> Call:
    body = _body(
        user=user,
        conversation_id=_id(conversation_id),
        request_id=request_id,
        kind=kind,
        worker_id=worker_id,
        lease_seconds=lease_seconds,
        prompt=prompt,
        goal=goal,
        parent_run_id=parent_run_id,
        project_id=project_id,
    )
    return Call("POST", "/api/runs/", json=body)


def run_get(run_id) -> Call:
    return Call("GET", "/api/runs/{run_id}/", {"run_id": _id(run_id)})


def run_claim(run_id, worker_id, lease_seconds) -> Call:
    body = _body(worker_id=worker_id, lease_seconds=lease_seconds)
    return Call("POST", "/api/runs/{run_id}/claim/", {"run_id": _id(run_id)}, json=body)


def run_heartbeat(run_id, run_token, lease_seconds) -> Call:
    body = _body(lease_seconds=lease_seconds)
    return Call(
        "POST",
        "/api/runs/{run_id}/heartbeat/",
        {"run_id": _id(run_id)},
        json=body,
        idempotent=True,
        run_token=run_token,
    )


def run_finish(run_id, run_token, status, usage) -> Call:
    body = _body(status=status, usage=usage)
    return Call("POST", "/api/runs/{run_id}/finish/", {"run_id": _id(run_id)}, json=body, run_token=run_token)


def run_context(run_id, run_token, query, round) -> Call:
    params = _query({"query": query, "round": round})
    return Call("GET", "/api/runs/{run_id}/context/", {"run_id": _id(run_id)}, params=params, run_token=run_token)


def run_tool(run_id, run_token, tool, arguments: dict[str, Any]) -> Call:
    idempotent = tool in READ_ONLY_TOOLS or (tool == "remember_memory" and arguments.get("replaces") is None)
    return Call(
        "POST",
        "/api/runs/{run_id}/tools/{tool}/",
        {"run_id": _id(run_id), "tool": tool},
        json=arguments,
        idempotent=idempotent,
        run_token=run_token,
    )
