"""Paths under /api/: a route whose trailing slash is optional, and whether a request is one."""

from django.http import HttpRequest
from django.urls import re_path

# The mem0-compatible API (docs/integrations.md) is also served at the site root, where mem0's
# clients call it: these paths are API paths too (JSON errors, the body limits).
COMPAT_ROOT_PREFIXES = ("/v1/", "/v2/", "/v3/")
COMPAT_API_PREFIX = "/api/mem0/"
COMPAT_VERSIONED_PREFIXES = (*COMPAT_ROOT_PREFIXES, *(COMPAT_API_PREFIX + p.lstrip("/") for p in COMPAT_ROOT_PREFIXES))


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
    """mem0's ``AsyncMemoryClient`` checks its key at ``f"{host}/v1/ping/"``, and its
    JavaScript client makes every path so, so a host given with a trailing slash
    ("https://memory.example.com/", "…/api/mem0/") asks for "//v1/ping/" or
    "/api/mem0//v1/ping/". A path of the mem0-compatible API (at the root or under
    ``/api/mem0/``) with more than one slash before its version is taken as that path with one;
    no other path is touched."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        path = request.path_info
        for base in ("/", COMPAT_API_PREFIX):
            if path.startswith(base + "/"):
                single = base + path[len(base) :].lstrip("/")
                if single.startswith(COMPAT_VERSIONED_PREFIXES):
                    request.path = request.path[: len(request.path) - len(path)] + single
                    request.path_info = single
                break
        return self.get_response(request)
