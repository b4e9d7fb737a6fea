"""``python manage.py mcp_server``: the MCP server (docs/mcp.md).

stdio (default): one session for the token in ``MEMORY_API_TOKEN``; a service token names the
user it acts for in ``MEMORY_MCP_USER``. The credentials are checked before the server starts,
so a refused session never serves anything. ``--http``: streamable HTTP on its own port, every
request authenticated by its ``Authorization: Token`` header (and ``X-Memory-User``).
"""

import os

from django.core.management.base import BaseCommand, CommandError

from config.errors import DomainError
from memory_app.mcp.auth import principal_resolve, token_header

TOKEN_ENV = "MEMORY_API_TOKEN"
USER_ENV = "MEMORY_MCP_USER"


class Command(BaseCommand):
    help = "Serve the memory tools over the Model Context Protocol (stdio, or streamable HTTP with --http)."
    # A desktop assistant starts this process for every session: no system checks on the way.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
        parser.add_argument("--host", default="127.0.0.1", help="HTTP address (default 127.0.0.1)")
        parser.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765); the path is /mcp")

    def handle(self, *args, http, host, port, **options):
        # The SDK is imported only now: a refused stdio session fails fast.
        if http:
            if not 0 < port < 65536:
                raise CommandError("--port must be between 1 and 65535")
            from memory_app.mcp.server import serve_http  # noqa: PLC0415

            serve_http(host=host, port=port)
            return
        authorization, acting_user = token_header(os.environ.get(TOKEN_ENV)), os.environ.get(USER_ENV)
        try:
            principal = principal_resolve(authorization=authorization, acting_user=acting_user)
        except DomainError as exc:
            raise CommandError(f"MCP session refused ({exc.code}): {exc.message}") from None
        from memory_app.mcp.server import serve_stdio  # noqa: PLC0415

        assert authorization is not None  # principal_resolve refuses a missing key

        serve_stdio(principal, authorization=authorization, acting_user=acting_user)
