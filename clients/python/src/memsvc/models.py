"""The shapes the service answers with, as ``TypedDict``s (plain dicts at run time).

Written by hand from the OpenAPI schema (``/api/schema/``); ``SCHEMA_NAMES`` names the schema
component each one follows, and the client's test suite fails when a field listed here is not
in that component (tests/clients/test_schema_agreement.py). The service may add fields; it
never renames one (SPEC §5a), so a field the service adds simply shows up in the dict.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

IdentityKind = Literal["fact", "preference", "decision", "convention"]
ItemKind = Literal["fact", "preference", "decision", "convention", "task", "procedure", "warning", "summary"]
SearchMode = Literal["fts", "vector", "hybrid"]
FinishStatus = Literal["completed", "failed", "cancelled"]


class Page(TypedDict):
    """One page of a list (``page``/``page_size``); the ``iter_*`` methods walk every page."""

    count: int
    next: str | None
    previous: str | None
    results: list[Any]


class Memory(TypedDict):
    id: str
    scope_type: str
    scope_id: str
    project_id: str | None
    kind: str
    content: str
    status: str
    superseded_by: str | None
    origin: str
    source_thread_id: str | None
    metadata: dict[str, Any]
    evidence: dict[str, Any]
    expires_at: str | None
    expired: bool
    paused: bool  # listed, but used by no agent until resumed
    created_at: str
    updated_at: str


class MemoryChain(TypedDict):
    results: list[Memory]


class HomeSearch(TypedDict):
    query: str
    terms: list[str]
    results: list[dict[str, Any]]
    notes: list[dict[str, Any]]
    ranked: list[dict[str, Any]]
    more: bool
    warnings: list[Any]


class ImportResult(TypedDict):
    created: list[str]
    duplicates: int
    not_active: int
    redacted: int
    results: list[dict[str, Any]]
    notes_files: list[dict[str, Any]]
    settings: list[dict[str, Any]]
    conflicts: list[str]


class Item(TypedDict):
    id: str
    scope_type: str
    scope_id: str
    kind: str
    content: str
    status: str
    origin: str
    metadata: dict[str, Any]
    evidence: dict[str, Any]
    expires_at: str | None
    deduplicated: bool
    pending_review: bool
    candidate_id: str | None
    created_at: str


class ItemSearch(TypedDict):
    results: list[dict[str, Any]]
    mode: str
    warnings: list[Any]
    matched: bool  # False: nothing matched and ``keep_best`` asked for the closest items


class Consolidation(TypedDict):
    session_id: str
    candidates: list[dict[str, Any]]
    counts: dict[str, int]


class Conversation(TypedDict):
    id: str
    owner: str
    project_id: str | None
    title: str
    status: str
    source: str
    parent_id: str | None
    session_key: str | None
    no_memory: bool
    created_at: str
    updated_at: str


class Message(TypedDict):
    id: int
    conversation_id: str
    run_id: str | None
    role: str
    type: str
    content: str
    metadata: Any
    attachments: Any
    images: Any
    feedback: Any
    tool_calls: list[dict[str, Any]]
    sent_at: str
    created_at: str


class MessageSummary(TypedDict):
    id: int
    conversation_id: str
    run_id: str | None
    role: str
    type: str
    content: str
    content_truncated: bool
    tool_call_count: int
    created_at: str


class RunInfo(TypedDict):
    id: str
    user: str
    conversation_id: str
    project_id: str | None
    request_id: str
    kind: str
    parent_run_id: str | None
    status: str
    prompt: str
    goal: str | None
    worker_id: str
    lease_expires_at: str | None
    lease_generation: int
    lease_state: str
    started_at: str | None
    finished_at: str | None
    usage: Any
    auto_memory_generate: bool | None
    auto_memory_use: bool | None
    created_at: str
    updated_at: str


class IssuedRun(RunInfo):
    run_token: str


class RunSummary(RunInfo):
    prompt_truncated: bool
    goal_truncated: bool


class RunContext(TypedDict, total=False):
    """``GET /api/runs/{id}/context`` (SPEC §5a; the schema leaves it open)."""

    sections: list[dict[str, Any]]
    prompt: str
    goal: str | None
    tools: list[dict[str, Any]]
    memory_enabled: bool
    memory_off_reason: str
    warnings: list[Any]


ToolResult = dict[str, Any]
Export = dict[str, Any]

# Which schema component each model follows (checked by the test suite).
SCHEMA_NAMES: dict[type, str] = {
    Memory: "MemoryOutput",
    MemoryChain: "MemoryChainOutput",
    HomeSearch: "HomeSearchOutput",
    ImportResult: "ImportOutput",
    Item: "ItemCreateOutput",
    ItemSearch: "SearchOutput",
    Consolidation: "ConsolidateOutput",
    Conversation: "ConversationOutput",
    Message: "MessageOutput",
    MessageSummary: "MessageListOutput",
    RunInfo: "RunOutput",
    IssuedRun: "RunIssuedOutput",
    RunSummary: "RunListOutput",
    Page: "PaginatedMemoryOutputList",
}
