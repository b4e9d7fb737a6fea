"""What a query string may hold: the parameters the API's schema documents for the endpoint and
method (its filters, its page, the parameters its view declares with ``extend_schema``), and
DRF's ``format``. Any other is refused and named (``unknown_parameter``): a filter spelled wrong,
or sent to an endpoint that does not take it, would otherwise be ignored, and a list the caller
meant to narrow would answer everything (docs/API.md, "Query parameters"). Only an array (a
repeatable filter) may be given more than once; of any other, only the last value would count.

The names are those drf-spectacular's inspection of the view documents, read once per view and
method in a process, so the schema and what the server takes cannot disagree. The check runs as
the last of a view's permissions (``KnownQueryParameters``), after the caller is authenticated: a
request without a valid key is a 401 whatever its query string holds."""

import threading
from typing import NamedTuple

from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.permissions import BasePermission
from rest_framework.settings import api_settings

from config.errors import ErrorCode, InvalidInput

# At most this many names are given in an error (its ``details``), each cut to NAME_SHOWN
# characters in its message.
NAMES_SHOWN = 10
NAME_SHOWN = 40


class Taken(NamedTuple):
    names: frozenset[str]  # every parameter it takes
    repeatable: frozenset[str]  # those that take several values (an array, one value each)


_taken: dict[tuple, Taken] = {}  # (view class, method) -> what it takes
_reading = threading.Lock()  # one inspection at a time: it sets attributes DRF's views share


def taken_query_params(view_class, method: str) -> Taken:
    """The query parameters ``method`` of ``view_class`` takes: what the schema documents for
    it, and ``format``."""
    key = (view_class, method)
    taken = _taken.get(key)
    if taken is None:
        with _reading:
            taken = _taken.get(key) or _documented(view_class, method)
            _taken[key] = taken
    return taken


def warm() -> None:
    """Read what every API view takes (``SERVER_WARMUPS``): the first inspection in a process
    imports what drf-spectacular reads a filter with (~0.2 s), which no request should wait for;
    each one after it takes about a millisecond."""
    for view_class in _views(get_resolver().url_patterns):
        if KnownQueryParameters in view_class.permission_classes and not getattr(view_class, "own_query_check", False):
            for method in _handled(view_class):
                if method not in ("head", "options"):
                    taken_query_params(view_class, method.upper())


def _views(patterns):
    """The DRF view classes of a URLconf's patterns (``as_view()`` keeps its class as ``cls``)."""
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _views(pattern.url_patterns)
        elif isinstance(pattern, URLPattern) and (view_class := getattr(pattern.callback, "cls", None)) is not None:
            yield view_class


def _documented(view_class, method: str) -> Taken:
    # drf-spectacular imports DRF's views, which import this module (DEFAULT_PERMISSION_CLASSES).
    from drf_spectacular.drainage import GENERATOR_STATS  # noqa: PLC0415
    from drf_spectacular.generators import SchemaGenerator  # noqa: PLC0415
    from drf_spectacular.plumbing import ComponentRegistry  # noqa: PLC0415

    generator = SchemaGenerator()  # holds the inspector: the view keeps only a weak proxy of it
    view = generator.create_view(view_class.as_view(), method)
    inspector = view.schema
    # What ``AutoSchema.get_operation`` sets that reading the parameters uses; the path only
    # adds path parameters (and a format suffix), which are not the query's.
    inspector.registry = ComponentRegistry()
    inspector.path = inspector.path_regex = ""
    inspector.method = method
    with GENERATOR_STATS.silence():  # the inspection's warnings are the schema command's to give
        parameters = [parameter for parameter in inspector._get_parameters() if parameter["in"] == "query"]
    del generator
    return Taken(
        names=frozenset(parameter["name"] for parameter in parameters) | {api_settings.URL_FORMAT_OVERRIDE},
        # An array sent as one value per item (OpenAPI's ``explode``, true unless it says not).
        repeatable=frozenset(
            parameter["name"]
            for parameter in parameters
            if parameter["schema"].get("type") == "array" and parameter.get("explode", True)
        ),
    )


class KnownQueryParameters(BasePermission):
    """Refuses a request whose query string names a parameter the endpoint does not take (400,
    ``unknown_parameter``, each name in ``details``) or gives one that takes a single value
    more than once (``repeated_parameter``: which one would count?); every view's last permission
    (``DEFAULT_PERMISSION_CLASSES``). A view that checks its query string itself
    (``own_query_check``: the mem0-compatible API, whose error its clients read) is left to it;
    a method the view does not have is left to DRF's 405, and OPTIONS takes any query string."""

    def has_permission(self, request, view) -> bool:
        # DRF asks the permissions again as if the request were this or another method (OPTIONS'
        # metadata and the browsable API, for each form it may draw): only the method on the
        # wire is checked, once a request, and OPTIONS takes any query string.
        method = "GET" if request.method == "HEAD" else request.method
        wire = request._request
        if (
            method != ("GET" if wire.method == "HEAD" else wire.method)
            or method == "OPTIONS"
            or not request.query_params
        ):
            return True
        if getattr(wire, "query_checked", False):
            return True
        wire.query_checked = True
        if getattr(view, "own_query_check", False) or method.lower() not in _handled(view):
            return True  # its own check; a method the view lacks is DRF's 405
        taken = taken_query_params(type(view), method)
        params = request.query_params
        unknown = sorted(set(params) - taken.names)
        repeated = sorted(name for name in params if name not in taken.repeatable and len(params.getlist(name)) > 1)
        if unknown or repeated:
            view.check_throttles(request)  # a refused request counts, as every other one does
        if unknown:
            raise InvalidInput(
                f"This endpoint does not take the query parameter(s) {_names(unknown)}.",
                code=ErrorCode.UNKNOWN_PARAMETER,
                details={name: ["Unknown query parameter."] for name in unknown[:NAMES_SHOWN]},
            )
        if repeated:
            raise InvalidInput(
                f"Given more than once, and each takes one value: {_names(repeated)}.",
                code=ErrorCode.REPEATED_PARAMETER,
                details={name: ["Takes one value."] for name in repeated[:NAMES_SHOWN]},
            )
        return True


def _handled(view) -> list[str]:
    """The methods ``view`` answers (lower case), as DRF's dispatch finds a handler."""
    return [method for method in view.http_method_names if hasattr(view, method)]


def _names(names: list[str]) -> str:
    shown = ", ".join(repr(name[:NAME_SHOWN]) for name in names[:NAMES_SHOWN])
    return shown + (f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else "")
