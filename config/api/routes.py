"""Paths under /api/: a route whose trailing slash is optional, and whether a request is one."""

from django.urls import re_path


def is_api_request(request) -> bool:
    return request.path.startswith("/api/")


def api_route(pattern: str, view, name: str):
    """A URL under /api/ whose trailing slash is optional (docs/API.md)."""
    return re_path(rf"^{pattern}/?$", view, name=name)
