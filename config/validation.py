"""Text that can be stored: no NUL characters (PostgreSQL text and jsonb refuse them) and no
lone UTF-16 surrogates (they have no UTF-8 form). Every service validator that accepts text
or JSON from outside calls these, and the API's JSON parser applies the same rule to whole
request bodies."""

import json
import re

from django.http import Http404, HttpResponseBadRequest, JsonResponse
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from config.api import error_body
from config.errors import InvalidInput, TooLarge

ID_RE = re.compile(r"^[\w-]{1,40}$", re.ASCII)


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored, or None when it can."""
    if "\x00" in value:
        return "may not contain NUL characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "may not contain unpaired UTF-16 surrogates"
    return None


def clean_text(value, *, field: str):
    """Return ``value`` unchanged when it is a storable string (or not a string at all; type
    checks stay with the caller); raise ``InvalidInput`` (code ``invalid_text``) otherwise."""
    if isinstance(value, str):
        problem = text_problem(value)
        if problem:
            raise InvalidInput(f"{field} {problem}.", code="invalid_text")
    return value


def json_text_problem(value) -> str | None:
    """The first unstorable string in a decoded JSON value (keys included), or None."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                return problem
        elif isinstance(item, dict):
            pending.extend(key for key in item if isinstance(key, str))
            pending.extend(item.values())
        elif isinstance(item, (list, tuple)):
            pending.extend(item)
    return None


def validate_json_value(value, *, field: str):
    """Return ``value`` when every string in it (dict keys included) is storable; raise
    ``InvalidInput`` (code ``invalid_text``) otherwise."""
    problem = json_text_problem(value)
    if problem:
        raise InvalidInput(f"{field} {problem}.", code="invalid_text")
    return value


def json_size(value) -> int:
    """Bytes of ``value`` as the API renders it (compact separators, UTF-8, no ASCII escaping)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def validate_json_container(value, *, field: str, max_bytes: int, kind: type = dict):
    """A JSON object (or, with ``kind=list``, array) of storable strings, at most ``max_bytes``
    rendered; ``None`` becomes an empty one. Every JSON field a caller supplies goes through here."""
    if value is None:
        return kind()
    if not isinstance(value, kind):
        raise InvalidInput(f"{field} must be a JSON {'object' if kind is dict else 'array'}.", code=f"invalid_{field}")
    validate_json_value(value, field=field)
    if json_size(value) > max_bytes:
        raise TooLarge(f"{field} is larger than {max_bytes} bytes.")
    return value


def is_valid_id(value) -> bool:
    """A TEXT primary key as the service issues them (letters, digits, ``_``, ``-``)."""
    return isinstance(value, str) and ID_RE.fullmatch(value) is not None


class SafeJSONParser(JSONParser):
    """The API's JSON parser: a body carrying NUL characters or unpaired surrogates anywhere is
    a malformed request (400 ``malformed_request``) before any view sees it."""

    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type=media_type, parser_context=parser_context)
        problem = json_text_problem(data)
        if problem:
            raise ParseError(f"a string {problem}.")
        return data


class RejectNulInRequestMiddleware:
    """URLs, query strings and cookies reach database lookups (ids, filters, session keys); a
    NUL character in any of them is answered before any view runs: a path with one names
    nothing (404), a query string or cookie with one is a bad request (400). Invalid UTF-8
    there is already decoded with replacement characters, which are plain text."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if "\x00" in request.path:
            raise Http404("No such page.")
        if _query_or_cookies_have_nul(request):
            message = "NUL characters are not allowed in the query string or cookies."
            if request.path.startswith("/api/"):
                return JsonResponse(error_body("malformed_request", message), status=400)
            return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")
        return self.get_response(request)


def _query_or_cookies_have_nul(request) -> bool:
    for key, values in request.GET.lists():
        if "\x00" in key or any("\x00" in value for value in values):
            return True
    return any("\x00" in key or "\x00" in value for key, value in request.COOKIES.items())
