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
