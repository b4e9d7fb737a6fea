"""Request ids and log lines.

- ``RequestIdMiddleware`` (first in ``MIDDLEWARE``): every request gets an id, the client's
  ``X-Request-ID`` when it is sane (1–128 characters of ``A-Za-z0-9._:-``) or a new one. It
  lives in a context variable while the request is served, comes back as the ``X-Request-ID``
  header, inside every JSON error body (``config.api.errors.error_body``) and in every log line
  written for the request (``RequestIdFilter``). With ``ACCESS_LOG`` on, one line per request
  (method, route, status, duration; never the query string, which may hold search text).
- ``JsonFormatter`` (``LOG_FORMAT=json``): one JSON object per line that keeps every ``extra``
  field of the record; ``PlainFormatter``: the usual text line, extras appended as
  ``key=value``.
"""

import json
import logging
import re
import time
import uuid
from contextvars import ContextVar
from datetime import UTC, datetime

from django.conf import settings
from django.http import HttpRequest

REQUEST_ID_HEADER = "X-Request-ID"
_SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_request_id: ContextVar[str | None] = ContextVar("request_id", default=None)

access_logger = logging.getLogger("config.access")


def current_request_id() -> str | None:
    """The id of the request being served by this thread, if any."""
    return _request_id.get()


def request_id_from(raw: str | None) -> str:
    """The client's id when it is sane, else a new random one."""
    if raw and _SANE_REQUEST_ID.fullmatch(raw):
        return raw
    return uuid.uuid4().hex


def route_name(request: HttpRequest) -> str:
    """The resolver's name of the route that served ``request`` (never the raw path, which
    holds ids): ``my-memories``, ``web:home``; ``unmatched`` when no route was resolved."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        return "unmatched"
    return match.view_name or match.route or "unnamed"


class RequestIdMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request_id = request_id_from(request.headers.get(REQUEST_ID_HEADER))
        request.request_id = request_id
        token = _request_id.set(request_id)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
            response[REQUEST_ID_HEADER] = request_id
            if settings.ACCESS_LOG:
                access_logger.info(
                    "%s %s %s",
                    request.method,
                    route_name(request),
                    response.status_code,
                    extra={
                        "method": request.method,
                        "route": route_name(request),
                        "status": response.status_code,
                        "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                    },
                )
            return response
        finally:
            _request_id.reset(token)


class RequestIdFilter(logging.Filter):
    """Stamps each record with the id of the request it was written for (``-`` outside)."""

    def filter(self, record):
        if not getattr(record, "request_id", None):
            record.request_id = current_request_id() or "-"
        return True


# Attributes every LogRecord has; anything else on a record came from ``extra``.
_RECORD_ATTRS = frozenset(
    logging.LogRecord("", 0, "", 0, "", (), None).__dict__.keys() | {"message", "asctime", "taskName"}
)


def record_extras(record: logging.LogRecord) -> dict:
    extras = {}
    for key, value in record.__dict__.items():
        if key in _RECORD_ATTRS or key.startswith("_"):
            continue
        # django.request passes the request itself: its method and path are what helps.
        extras[key] = f"{value.method} {value.path}" if isinstance(value, HttpRequest) else value
    return extras


def _json_default(value):
    return str(value)


class JsonFormatter(logging.Formatter):
    """``{"time", "level", "logger", "message", "request_id", <every extra>, "exc_info"?}``."""

    def format(self, record):
        line = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record_extras(record).items():
            line.setdefault(key, value)
        if record.exc_info:
            line["exc_info"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stack_info"] = self.formatStack(record.stack_info)
        return json.dumps(line, default=_json_default, ensure_ascii=False)


class PlainFormatter(logging.Formatter):
    """``time level logger message key=value …`` (extras sorted by name)."""

    def __init__(self):
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def format(self, record):
        text = super().format(record)
        extras = record_extras(record)
        if extras.get("request_id") == "-":
            del extras["request_id"]  # outside a request: nothing to say
        if not extras:
            return text
        pairs = " ".join(
            f"{key}={json.dumps(value, default=_json_default, ensure_ascii=False)}"
            for key, value in sorted(extras.items())
        )
        head, newline, tail = text.partition("\n")  # a traceback stays below the line
        return f"{head} {pairs}{newline}{tail}"
