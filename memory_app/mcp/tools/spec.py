"""What a tool is (``ToolSpec``), what a call knows (``CallContext``), the audiences, and the
argument schemas the tools share."""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator

from config.errors import DomainError
from memory_app.mcp.auth import Principal
from memory_app.mcp.errors import ErrorCode
from memory_app.mcp.runs import SessionRun
from memory_app.memories.models import IDENTITY_KINDS, MAX_CONTENT_CHARS
from memory_app.runs import tools as agent_tools

USER, SERVICE = "user", "service"
RUN_TOOLS = frozenset(agent_tools.TOOL_NAMES)


class Throttled(DomainError):
    status_code = 429
    code = ErrorCode.THROTTLED


@dataclass
class CallContext:
    """What a call knows about its session: who, and the run the session holds (if any)."""

    principal: Principal
    runs: SessionRun

    def credential(self):
        return self.runs.credential()


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    input_schema: dict
    handler: Callable[..., dict]
    audiences: frozenset = frozenset({USER})
    read_only: bool = True
    destructive: bool = False
    idempotent: bool = False
    throttle: tuple[str, ...] = ()
    validator: Draft202012Validator = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        Draft202012Validator.check_schema(self.input_schema)
        object.__setattr__(self, "validator", Draft202012Validator(self.input_schema))


def object_schema(properties: dict, required: list[str]) -> dict:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


MEMORY_ID = {
    "type": "string",
    "minLength": 1,
    "maxLength": 40,
    "pattern": "^[A-Za-z0-9_-]+$",
    "description": "The `id` of one of the user's own memories (tier 'user'), as search_memories returns it.",
}
CONTENT = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_CONTENT_CHARS,
    "description": "One self-contained statement, e.g. 'Prefers answers in British English.'",
}
EXPIRES_AT: dict[str, Any] = {
    "type": ["string", "null"],
    "format": "date-time",
    "maxLength": 64,
    "description": (
        "When the statement stops being true, as ISO 8601 with a time zone (e.g. 2026-12-12T18:00:00+01:00), "
        "in the future; after it the memory is no longer used or found. Null or left out: it does not expire."
    ),
}
KIND = {
    "type": "string",
    "enum": sorted(IDENTITY_KINDS),
    "description": "fact (default), preference, decision or convention.",
}
