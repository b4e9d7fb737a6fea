"""What each tool does: the REST API's service or selector, called as the session."""

from collections.abc import Callable

from config.errors import NotFound
from config.validation import is_valid_id, search_query
from memory_app.home.services.item import home_item_change
from memory_app.mcp import selectors
from memory_app.mcp.tools.spec import (
    SERVICE,
    USER,
    CallContext,
    ToolSpec,
)
from memory_app.memories import services as memory_services
from memory_app.memories.identity_context import identity_context_build
from memory_app.memories.models import Kind, Origin, Tier
from memory_app.reads import recorder as reads
from memory_app.reads.models import ItemKind, ReadPath
from memory_app.runs import tools as agent_tools
from memory_app.scoped import search as scoped_search
from memory_app.scoped.selectors import searchable_scopes


def record_reads(ctx: CallContext, ids, path: str) -> None:
    """Who read what (docs/home.md): the session's principal and token (``reading_as``)."""
    reads.record(item_kind=ItemKind.MEMORY, refs=ids, path=path, user_id=ctx.principal.user.pk)


def search_memories(ctx: CallContext, *, query, limit=selectors.SEARCH_DEFAULT_HITS) -> dict:
    response = selectors.memory_search(user=ctx.principal.user, query=query, limit=limit)
    record_reads(ctx, [hit["id"] for hit in response["results"]], ReadPath.MCP_SEARCH)
    return response


def add_memory(ctx: CallContext, *, content, kind=Kind.FACT, expires_at=None) -> dict:
    memory = memory_services.memory_create(
        actor=ctx.principal.user, tier=Tier.USER, kind=kind, content=content, origin=Origin.API, expires_at=expires_at
    )
    return selectors.memory_written("created", memory)


def correct_memory(ctx: CallContext, *, memory_id, content, kind=None, expires_at=memory_services.KEEP_EXPIRY) -> dict:
    new = memory_services.memory_supersede(
        actor=ctx.principal.user,
        memory_id=memory_id,
        tier=Tier.USER,
        content=content,
        kind=kind,
        origin=Origin.API,
        expires_at=expires_at,
    )
    return selectors.memory_written("corrected", new, replaced_id=memory_id)


def change_memory(
    ctx: CallContext,
    *,
    memory_id,
    paused=memory_services.NOT_GIVEN,
    expires_at=memory_services.NOT_GIVEN,
) -> dict:
    memory = home_item_change(actor=ctx.principal.user, memory_id=memory_id, paused=paused, expires_at=expires_at)
    return selectors.memory_written("changed", memory)


def forget_memory(ctx: CallContext, *, memory_id) -> dict:
    forgotten = memory_services.memory_forget(actor=ctx.principal.user, memory_id=memory_id, tier=Tier.USER)
    return {"result": "forgotten", "forgotten_ids": forgotten}


def identity_context(ctx: CallContext, *, project_id=None) -> dict:
    if project_id is not None and not is_valid_id(project_id):
        raise NotFound("Project not found.")
    built = identity_context_build(user=ctx.principal.user, project_id=project_id)
    record_reads(ctx, [m.pk for m in [*built.user_memories, *built.project_memories]], ReadPath.MCP_IDENTITY)
    return {
        "result": "ok",
        "trust": "low",
        "identity_context": built.identity_context,
        "project_summary_context": built.project_summary_context,
    }


def _run_tool(name: str) -> Callable[..., dict]:
    handler = agent_tools.HANDLERS[name]  # the run tools' own dispatch table

    def call(ctx: CallContext, **arguments) -> dict:
        return handler(credential=ctx.credential(), **arguments)

    return call


def search_chat_memories(ctx: CallContext, *, session_id, query, limit=10, mode="hybrid") -> dict:
    query = search_query(query, max_chars=scoped_search.MAX_QUERY_CHARS)
    # The session works for its user: a service session acting for bob never reaches a
    # private chat bound to alice (docs/mcp.md, chat reach).
    scopes = searchable_scopes(user=ctx.principal.actor, session_id=session_id, acting_for_id=ctx.principal.user.pk)
    warnings: list[str] = []
    hits = scoped_search.cascade_search(scopes=scopes, query=query, limit=limit, mode=mode, warnings=warnings)
    response = selectors.chat_search_response(query=query, hits=hits, mode=mode, warnings=warnings)
    record_reads(ctx, [hit["id"] for hit in response["results"]], ReadPath.MCP_CHAT_SEARCH)
    return response


def run_tool_spec(schema: dict, **options) -> ToolSpec:
    """A notes-file/history tool: the run context's own name, description and schema."""
    return ToolSpec(
        name=schema["name"],
        title=schema["name"].replace("_", " ").capitalize(),
        description=schema["description"],
        input_schema=schema["parameters"],
        handler=_run_tool(schema["name"]),
        audiences=frozenset({USER, SERVICE}),
        **options,
    )
