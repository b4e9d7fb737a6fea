"""Text that can be stored: no NUL characters (PostgreSQL text and jsonb refuse them) and no
lone UTF-16 surrogates (they have no UTF-8 form). Every service validator that accepts text
or JSON from outside calls these, and the API's JSON parser applies the same rule to whole
request bodies.

Request bodies sent to the API are bounded before they are parsed: at most
``API_MAX_BODY_BYTES`` (413 ``payload_too_large``) and at most ``API_MAX_JSON_DEPTH`` levels
of nested arrays and objects (400 ``too_deep``)."""

import io
import json
import re
from itertools import accumulate

from django.conf import settings
from django.core.handlers.wsgi import LimitedStream
from django.http import Http404, HttpRequest, HttpResponseBadRequest, JsonResponse
from django.utils.translation import gettext as _
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.utils.json import strict_constant

from config.api.errors import error_body
from config.api.routes import is_api_request
from config.budgets import json_size
from config.errors import ErrorCode, InvalidInput, PayloadTooLarge, TooLarge

ID_RE = re.compile(r"^[\w-]{1,40}$", re.ASCII)


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored, or None when it can."""
    if "\x00" in value:
        return _("may not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return _("may not contain unpaired UTF-16 surrogates")
    return None


def clean_text(value, *, field: str):
    """Return ``value`` unchanged when it is a storable string (or not a string at all; type
    checks stay with the caller); raise ``InvalidInput`` (code ``invalid_text``) otherwise."""
    if isinstance(value, str):
        problem = text_problem(value)
        if problem:
            raise InvalidInput(
                _("%(field)s %(problem)s.") % {"field": field, "problem": problem}, code=ErrorCode.INVALID_TEXT
            )
    return value


def search_query(value, *, max_chars: int, field: str = "query", allow_empty: bool = False) -> str:
    """The one check of a search's question, wherever it comes from (a tool's argument, a query
    parameter, a context request): a storable string (``clean_text``), stripped, of 1 (or, with
    ``allow_empty``, 0) to ``max_chars`` characters; ``InvalidInput`` (``invalid_query``) else."""
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string.", code=ErrorCode.INVALID_QUERY)
    value = clean_text(value, field=field).strip()
    if len(value) > max_chars or not (value or allow_empty):
        least = 0 if allow_empty else 1
        raise InvalidInput(f"{field} must be {least} to {max_chars} characters.", code=ErrorCode.INVALID_QUERY)
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
        raise InvalidInput(
            _("%(field)s %(problem)s.") % {"field": field, "problem": problem}, code=ErrorCode.INVALID_TEXT
        )
    return value


def validate_json_container(value, *, field: str, code: str, max_bytes: int, kind: type = dict):
    """A JSON object (or, with ``kind=list``, array) of storable strings, at most ``max_bytes``
    rendered; ``None`` becomes an empty one; ``code``: the caller's error code for the wrong type
    (``invalid_metadata``…). Every JSON field a caller supplies goes through here."""
    if value is None:
        return kind()
    if not isinstance(value, kind):
        message = _("%(field)s must be a JSON object.") if kind is dict else _("%(field)s must be a JSON array.")
        raise InvalidInput(message % {"field": field}, code=code)
    validate_json_value(value, field=field)
    if json_size(value) > max_bytes:
        raise TooLarge(_("%(field)s is larger than %(n)s bytes.") % {"field": field, "n": max_bytes})
    return value


def is_valid_id(value) -> bool:
    """A TEXT primary key as the service issues them (letters, digits, ``_``, ``-``)."""
    return isinstance(value, str) and ID_RE.fullmatch(value) is not None


# A JSON string literal (escapes included), and anything that is not a bracket.
_JSON_STRING_RE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET_RE = re.compile(r"[^\[\]{}]+")
_BRACKET_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def json_nesting_depth(text: str) -> int:
    """How deep arrays and objects nest in the JSON document ``text``, found without parsing it:
    brackets outside string literals, counted. ``json.loads`` recurses once per level and a
    deep enough document exhausts the interpreter's stack, so this runs first. On a malformed
    document the figure may be off; the parser that runs next refuses it anyway."""
    brackets = _NOT_BRACKET_RE.sub("", _JSON_STRING_RE.sub("", text))
    return max(accumulate(map(_BRACKET_STEP.__getitem__, brackets)), default=0)


def payload_too_large_message(limit: int) -> str:
    return f"The request body is larger than {limit} bytes."


class DuplicateKey(ValueError):
    def __init__(self, key: str):
        shown = key if len(key) <= 40 else key[:40] + "…"
        super().__init__(f"The JSON object has the key {shown!r} twice.")


def unique_keys(pairs: list[tuple[str, object]]) -> dict:
    """``object_pairs_hook`` of every JSON the service reads: an object that names a key twice
    is refused (``DuplicateKey``) instead of keeping the last value silently."""
    data = dict(pairs)
    if len(data) != len(pairs):
        seen = set()
        for key, _value in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return data


class SafeJSONParser(JSONParser):
    """The API's JSON parser. It reads at most ``API_MAX_BODY_BYTES`` (413 beyond), refuses
    nesting deeper than ``API_MAX_JSON_DEPTH`` before decoding (400 ``too_deep``), refuses an
    object that names a key twice (400 ``duplicate_key``: the last value would otherwise win
    silently), and treats a body carrying NUL characters or unpaired surrogates anywhere as
    malformed (400 ``malformed_request``), all before any view sees it."""

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.API_MAX_BODY_BYTES
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise PayloadTooLarge(payload_too_large_message(limit))
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = raw.decode(encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        max_depth = settings.API_MAX_JSON_DEPTH
        # Fewer opening brackets than the limit cannot nest deeper: most bodies skip the scan.
        if text.count("[") + text.count("{") > max_depth and json_nesting_depth(text) > max_depth:
            raise InvalidInput(f"JSON nests deeper than {max_depth} levels.", code=ErrorCode.TOO_DEEP)
        try:
            data = json.loads(
                text, parse_constant=strict_constant if self.strict else None, object_pairs_hook=unique_keys
            )
        except DuplicateKey as exc:
            raise InvalidInput(str(exc), code=ErrorCode.DUPLICATE_KEY) from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        except RecursionError:  # unreachable after the depth check; never a 500 all the same
            raise InvalidInput(f"JSON nests deeper than {max_depth} levels.", code=ErrorCode.TOO_DEEP) from None
        problem = json_text_problem(data)
        if problem:
            raise ParseError(f"a string {problem}.")
        return data


class ApiBodyLimitMiddleware:
    """Bodies sent to ``/api/`` are capped before anything reads them. A declared
    ``Content-Length`` over ``API_MAX_BODY_BYTES`` is answered 413 at once. A chunked body (no
    ``Content-Length``) is read up to the cap when the server marks its input as terminated
    (``wsgi.input_terminated``, as gunicorn does) and refused the same way when longer; other
    servers hand such a body to nobody, since the request stream is limited to the declared
    length, which is then 0."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not is_api_request(request):
            return self.get_response(request)
        limit = settings.API_MAX_BODY_BYTES
        declared = _declared_length(request.META)
        if declared is not None and declared > limit:
            return _payload_too_large(limit)
        if declared is None and _is_chunked(request.META) and request.META.get("wsgi.input_terminated"):
            body = request.META["wsgi.input"].read(limit + 1)
            if len(body) > limit:
                return _payload_too_large(limit)
            request.META["CONTENT_LENGTH"] = str(len(body))
            request._stream = LimitedStream(io.BytesIO(body), len(body))
        return self.get_response(request)


def _declared_length(meta) -> int | None:
    try:
        return int(meta["CONTENT_LENGTH"])
    except (KeyError, TypeError, ValueError):
        return None


def _is_chunked(meta) -> bool:
    return "chunked" in meta.get("HTTP_TRANSFER_ENCODING", "").lower()


def _payload_too_large(limit: int) -> JsonResponse:
    return JsonResponse(error_body(ErrorCode.PAYLOAD_TOO_LARGE, payload_too_large_message(limit)), status=413)


class RejectNulInRequestMiddleware:
    """URLs, query strings and cookies reach database lookups (ids, filters, session keys); a
    NUL character in any of them is answered before any view runs: a path with one names
    nothing (404), a query string or cookie with one is a bad request (400). Invalid UTF-8
    there is already decoded with replacement characters, which are plain text."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        if "\x00" in request.path:
            raise Http404("No such page.")
        if _query_or_cookies_have_nul(request):
            message = "NUL characters are not allowed in the query string or cookies."
            if request.path.startswith("/api/"):
                return JsonResponse(error_body(ErrorCode.MALFORMED_REQUEST, message), status=400)
            return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")
        return self.get_response(request)


def _query_or_cookies_have_nul(request: HttpRequest) -> bool:
    for key, values in request.GET.lists():
        if "\x00" in key or any("\x00" in value for value in values):
            return True
    return any("\x00" in key or "\x00" in value for key, value in request.COOKIES.items())
