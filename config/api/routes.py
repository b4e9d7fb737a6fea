"""Paths under /api/: a route whose trailing slash is optional, and whether a request is one."""

from django.http import HttpRequest
from django.urls import re_path

# The mem0-compatible API (docs/integrations.md) is also served at the site root, where mem0's
# clients call it: these paths are API paths too (JSON errors, the body limits).
COMPAT_ROOT_PREFIXES = ("/v1/", "/v2/", "/v3/")
COMPAT_API_PREFIX = "/api/mem0/"


def is_api_request(request: HttpRequest) -> bool:
    return request.path.startswith(("/api/", *COMPAT_ROOT_PREFIXES))


def is_compat_request(request: HttpRequest) -> bool:
    """A request to the mem0-compatible API, whose errors also carry mem0's ``detail``."""
    return request.path.startswith((COMPAT_API_PREFIX, *COMPAT_ROOT_PREFIXES))


def api_route(pattern: str, view, name: str):
    """A URL under /api/ whose trailing slash is optional (docs/API.md)."""
    return re_path(rf"^{pattern}/?$", view, name=name)


def compat_route(pattern: str, view, name: str):
    """A path of the mem0-compatible API, trailing slash optional as everywhere in the API."""
    return api_route(pattern, view, name)


class CompatDoubledSlashMiddleware:
    """mem0's ``AsyncMemoryClient`` checks its key at ``f"{host}/v1/ping/"``, so a host given
    with a trailing slash ("https://memory.example.com/") asks for "//v1/ping/" (its other calls,
    and every call of the sync client, join the paths properly). A path of the mem0-compatible
    API at the root that starts with more than one slash is taken as that path with one."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        path = request.path_info
        if path.startswith("//"):
            single = "/" + path.lstrip("/")
            if single.startswith(COMPAT_ROOT_PREFIXES):
                request.path = request.path[: len(request.path) - len(path)] + single
                request.path_info = single
        return self.get_response(request)
