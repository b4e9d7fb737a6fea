"""The "Connect your agent" page (docs/mcp.md, "Connect your agent"): ready-to-paste
configuration for MCP clients (streamable HTTP, and stdio for an assistant on the service's own
machine), the Python client, the mem0-compatible client and the LangGraph store, each with this
service's address (``config.public_address``) — and a button that makes an API key for it
(``identity_app.services.token_create``: shown on this response only, then only its hash is
kept), which the snippets then carry."""

import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.urls import path
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from config.http import AuthenticatedHttpRequest
from config.public_address import public_address
from identity_app.permissions import is_service_principal
from identity_app.services import token_create

KEY_PLACEHOLDER = "<your API key>"
TOKEN_NAME = "agent connection"


@dataclass(frozen=True)
class Snippet:
    ident: str  # the element id (and its copy button's target)
    language: str
    text: str


def _python_command() -> str:
    venv = Path(settings.BASE_DIR) / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def stdio_config(*, key: str, local: bool) -> dict:
    """The ``mcpServers`` entry that starts ``manage.py mcp_server`` over stdio. On a local
    development set-up (DEBUG, SQLite) its real paths and ``DEBUG=1`` are all it needs; anywhere
    else the service's own settings, named, never shown (the database URL and secret key are the
    operator's)."""
    if local:
        command, manage = _python_command(), str(Path(settings.BASE_DIR) / "manage.py")
        env = {"MEMORY_API_TOKEN": key, "DEBUG": "1"}
    else:
        command, manage = "/path/to/memory-service/.venv/bin/python", "/path/to/memory-service/manage.py"
        env = {
            "MEMORY_API_TOKEN": key,
            "DATABASE_URL": "<the service's DATABASE_URL>",
            "SECRET_KEY": "<the service's SECRET_KEY>",
            "WORKSPACE_ROOT": "<the service's WORKSPACE_ROOT>",
        }
    return {"mcpServers": {"memory": {"command": command, "args": [manage, "mcp_server"], "env": env}}}


def http_config(*, mcp_url: str, key: str, acting_for: str | None) -> dict:
    headers = {"Authorization": f"Token {key}"}
    if acting_for:
        headers["X-Memory-User"] = acting_for
    return {"mcpServers": {"memory": {"type": "http", "url": mcp_url, "headers": headers}}}


def _py(text: str) -> str:
    """A Python string literal of ``text`` (double quotes, as the snippets' other strings)."""
    return json.dumps(text, ensure_ascii=False)


def connection_snippets(*, base_url: str, mcp_url: str, key: str, username: str, service: bool, local: bool):
    """Every snippet of the page, filled with this service's address and ``key``."""
    acting_for = "<username it acts for>" if service else None
    user_id = "<username it acts for>" if service else username
    return {
        "mcp_http": Snippet(
            "snippet-mcp-http",
            "json",
            json.dumps(http_config(mcp_url=mcp_url, key=key, acting_for=acting_for), indent=2, ensure_ascii=False),
        ),
        "mcp_stdio": Snippet(
            "snippet-mcp-stdio", "json", json.dumps(stdio_config(key=key, local=local), indent=2, ensure_ascii=False)
        ),
        "python": Snippet(
            "snippet-python",
            "python",
            "from memsvc import Client  # clients/python in the service's repository\n\n"
            f"with Client({_py(base_url)}, {_py(key)}) as memory:\n"
            '    memory.add_memory("I prefer short answers.", "preference")\n'
            '    for hit in memory.search_home("how do I like answers?")["results"]:\n'
            '        print(hit["content"])\n',
        ),
        "mem0": Snippet(
            "snippet-mem0",
            "python",
            "from mem0 import MemoryClient  # pip install mem0ai\n\n"
            f"client = MemoryClient(api_key={_py(key)}, host={_py(base_url)})\n"
            f'client.add([{{"role": "user", "content": "I prefer short answers."}}], user_id={_py(user_id)})\n'
            f'client.search("how do I like answers?", filters={{"user_id": {_py(user_id)}}})\n',
        ),
        "langgraph_env": Snippet(
            "snippet-langgraph-env",
            "sh",
            f"export MEMSVC_URL={shlex.quote(base_url)}\nexport MEMSVC_TOKEN={shlex.quote(key)}\n",
        ),
        "langgraph": Snippet(
            "snippet-langgraph",
            "python",
            "from memsvc.integrations.langgraph import MemoryStore  # clients/python, with langgraph\n\n"
            "store = MemoryStore.from_env()  # MEMSVC_URL, MEMSVC_TOKEN\n"
            f'store.put(("users", {_py(user_id)}), "seating", {{"content": "Prefers aisle seats."}})\n',
        ),
    }


@login_required
@require_http_methods(["GET", "POST"])
def connect(request: AuthenticatedHttpRequest):
    """The page; a POST makes a new API key for the agent and shows it, in the snippets too, on
    this response only."""
    issued: dict[str, Any] | None = None
    if request.method == "POST":
        token, key = token_create(
            actor=request.user, name=f"{TOKEN_NAME} {timezone.localdate():%Y-%m-%d}", expires_in_days=None
        )
        issued = {"token": token, "key": key}
    address = public_address(request)
    mcp_url = settings.MCP_PUBLIC_URL or f"{address.url}/mcp"
    service = is_service_principal(request.user)
    snippets = connection_snippets(
        base_url=address.url,
        mcp_url=mcp_url,
        key=issued["key"] if issued else KEY_PLACEHOLDER,
        username=request.user.get_username(),
        service=service,
        local=settings.DEBUG and settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"),
    )
    response = render(
        request,
        "mcp/connect.html",
        {
            "address": address,
            "mcp_url": mcp_url,
            "snippets": snippets,
            "issued": issued,
            "service": service,
            "key_days": settings.API_TOKEN_DEFAULT_DAYS,
        },
    )
    if issued:
        response["Cache-Control"] = "no-store"  # the key is on this page and nowhere else
    return response


urlpatterns = [path("connect/", connect, name="connect")]
