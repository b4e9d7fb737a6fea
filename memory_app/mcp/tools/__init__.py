"""The MCP tools and resources (docs/mcp.md): their names, descriptions and JSON schemas, and
what each call does — always through the service or selector the REST API uses for the same
thing, with the identity of the session (``Principal``) and never an identity from the arguments.

Who gets which tool:

- a user session (a user token): every tool; the three notes-file/history tools run inside the
  session's leased top-level run (``runs.SessionRun``), like a main agent's;
- a service session (a service token acting for a named user): what the REST API lets a
  service do for a user — the notes-file/history tools inside a run it holds for that user,
  and the scoped search by session key. User memories stay readable by their owner only.

The notes-file/history tools are listed only while the user's ``enable_memory`` is on (the
gate of the run context's tool list); each call checks it again.

By job: ``spec`` (what a tool and a call are), ``handlers`` (what each does), ``catalog`` (the
tools, and who gets which), ``calls`` (one call, checked) and ``resources``.
"""

from memory_app.mcp.tools.calls import MAX_ECHOED_NAME, MAX_PROBLEM_CHARS, argument_problem, tool_call
from memory_app.mcp.tools.catalog import TOOLS, TOOLS_BY_NAME, tools_for
from memory_app.mcp.tools.resources import (
    IDENTITY_URI,
    NOTES_URI,
    RESOURCES,
    ResourceSpec,
    resource_read,
    resources_for,
)
from memory_app.mcp.tools.spec import RUN_TOOLS, SERVICE, USER, CallContext, Throttled, ToolSpec

__all__ = [
    "IDENTITY_URI",
    "MAX_ECHOED_NAME",
    "MAX_PROBLEM_CHARS",
    "NOTES_URI",
    "RESOURCES",
    "RUN_TOOLS",
    "SERVICE",
    "TOOLS",
    "TOOLS_BY_NAME",
    "USER",
    "CallContext",
    "ResourceSpec",
    "Throttled",
    "ToolSpec",
    "argument_problem",
    "resource_read",
    "resources_for",
    "tool_call",
    "tools_for",
]
