"""The MCP resources: the notes file and the identity context, read through the tools' paths."""

from dataclasses import dataclass

from config.errors import NotFound
from memory_app.context.assembly import run_context_build
from memory_app.mcp.auth import Principal
from memory_app.mcp.errors import ErrorCode
from memory_app.mcp.tools.calls import charge_throttles
from memory_app.mcp.tools.handlers import record_reads
from memory_app.mcp.tools.spec import (
    SERVICE,
    USER,
    CallContext,
)
from memory_app.memories.identity_context import identity_context_build
from memory_app.reads import recorder as reads
from memory_app.reads.models import ReadPath

# --- resources ----------------------------------------------------------------------------
NOTES_URI = "memory://notes/MEMORY.md"
IDENTITY_URI = "memory://identity-context"


@dataclass(frozen=True)
class ResourceSpec:
    uri: str
    name: str
    title: str
    description: str
    audiences: frozenset


RESOURCES = (
    ResourceSpec(
        uri=NOTES_URI,
        name="MEMORY.md",
        title="Notes file (MEMORY.md)",
        description=(
            "The user's long-term notes file as a main agent sees it: at most 24 KiB, framed as low-trust "
            "data, only while the user's memory switch is on. Read-only; write with remember_memory."
        ),
        audiences=frozenset({USER, SERVICE}),
    ),
    ResourceSpec(
        uri=IDENTITY_URI,
        name="identity-context",
        title="Identity context",
        description="The user's profile and latest memories as one low-trust block (get_identity_context).",
        audiences=frozenset({USER}),
    ),
)


def resources_for(principal: Principal) -> list[ResourceSpec]:
    audience = SERVICE if principal.service else USER
    return [spec for spec in RESOURCES if audience in spec.audiences]


def resource_read(*, ctx: CallContext, uri: str) -> str:
    """The text of a resource; read-only, through the same paths as the tools."""
    if uri not in {spec.uri for spec in resources_for(ctx.principal)}:
        raise NotFound("Unknown resource.", code=ErrorCode.UNKNOWN_RESOURCE)
    if uri == IDENTITY_URI:
        built = identity_context_build(user=ctx.principal.user, project_id=None)
        with reads.reading_as(principal_id=ctx.principal.actor.pk, token_id=ctx.principal.token_id):
            record_reads(ctx, [m.pk for m in [*built.user_memories, *built.project_memories]], ReadPath.MCP_IDENTITY)
        return built.identity_context
    charge_throttles(ctx.principal, ("run",))
    # What the session's run gets as its ``memory`` section: the one gate (top-level run,
    # ``enable_memory``), the 24 KiB cut and the low-trust frame of context assembly.
    with reads.reading_as(principal_id=ctx.principal.actor.pk, token_id=ctx.principal.token_id):
        context = run_context_build(credential=ctx.credential(), recorded=frozenset({ReadPath.CONTEXT_NOTES}))
    for section in context["sections"]:
        if section["name"] == "memory":
            return section["content"]
    if not context["memory_enabled"]:
        return "Memory is turned off for this user: the notes file is not shared with agents."
    return "The notes file (MEMORY.md) is empty: nothing has been saved to it yet."
