"""The one place that turns errors into the JSON error shape of the API:
``{"error": {"code": "...", "message": "...", "details": ...}}``.
"""

import datetime
import logging
import math
import operator

import django_filters
from django.core.exceptions import ObjectDoesNotExist
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import RegexValidator
from django.db.models.manager import BaseManager
from django.http import Http404, JsonResponse
from django.urls import Resolver404, get_resolver, re_path
from django.views.defaults import bad_request, page_not_found, permission_denied, server_error
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.contrib.django_filters import DjangoFilterExtension
from drf_spectacular.extensions import OpenApiSerializerExtension, OpenApiSerializerFieldExtension
from drf_spectacular.plumbing import build_choice_field
from drf_spectacular.utils import extend_schema_field
from rest_framework import ISO_8601, serializers
from rest_framework import exceptions as drf_exceptions
from rest_framework.fields import SkipField
from rest_framework.pagination import PageNumberPagination
from rest_framework.relations import PKOnlyObject
from rest_framework.response import Response
from rest_framework.settings import api_settings

from config.errors import DomainError
from config.logs import current_request_id
from config.throttling import unauthenticated_throttled

logger = logging.getLogger(__name__)

_DRF_CODES = {
    drf_exceptions.ParseError: "malformed_request",
    drf_exceptions.AuthenticationFailed: "authentication_failed",
    drf_exceptions.NotAuthenticated: "not_authenticated",
    drf_exceptions.PermissionDenied: "permission_denied",
    drf_exceptions.NotFound: "not_found",
    drf_exceptions.MethodNotAllowed: "method_not_allowed",
    drf_exceptions.NotAcceptable: "not_acceptable",
    drf_exceptions.UnsupportedMediaType: "unsupported_media_type",
    drf_exceptions.Throttled: "throttled",
    drf_exceptions.ValidationError: "invalid",
}


def error_body(code: str, message: str, details=None) -> dict:
    error = {"code": code, "message": message}
    if details is not None:
        error["details"] = details
    request_id = current_request_id()
    if request_id:
        error["request_id"] = request_id  # the X-Request-ID of the answer: what support asks for
    return {"error": error}


def _validation_message(details) -> str:
    """A one-line human message for a DRF validation error tree."""
    if isinstance(details, dict):
        for field, value in details.items():
            inner = _validation_message(value)
            return inner if field == "non_field_errors" else f"{field}: {inner}"
    if isinstance(details, list) and details:
        return _validation_message(details[0])
    return str(details)


def exception_handler(exc, context):
    if isinstance(exc, DomainError):
        return Response(error_body(exc.code, exc.message, exc.details), status=exc.status_code)
    if isinstance(exc, Http404):
        return Response(error_body("not_found", "Not found."), status=404)
    if isinstance(exc, DjangoPermissionDenied):
        return Response(error_body("permission_denied", "Permission denied."), status=403)
    if isinstance(exc, DjangoValidationError):
        details = exc.message_dict if hasattr(exc, "error_dict") else exc.messages
        return Response(error_body("invalid", _validation_message(details), details), status=400)
    if isinstance(exc, drf_exceptions.NotAuthenticated | drf_exceptions.AuthenticationFailed):
        exc = unauthenticated_throttled(context["request"]) or exc
    if isinstance(exc, drf_exceptions.APIException):
        code = next((c for t, c in _DRF_CODES.items() if isinstance(exc, t)), "error")
        headers = {}
        if getattr(exc, "auth_header", None):
            headers["WWW-Authenticate"] = exc.auth_header
        if isinstance(exc, drf_exceptions.Throttled) and exc.wait is not None:
            headers["Retry-After"] = str(math.ceil(exc.wait))
        if isinstance(exc, drf_exceptions.ValidationError):
            return Response(
                error_body(code, _validation_message(exc.detail), exc.detail),
                status=exc.status_code,
            )
        if isinstance(exc, drf_exceptions.ParseError):
            message = "Malformed request body: " + str(exc.detail)
        else:
            message = str(exc.detail)
        return Response(error_body(code, message), status=exc.status_code, headers=headers)
    return None  # unexpected: Django's 500 handler (JSON for /api/) takes it


def is_api_request(request) -> bool:
    return request.path.startswith("/api/")


class ApiNotFoundMiddleware:
    """A path under /api/ that names no route is answered with the JSON error shape before any
    view runs, in development mode too (where Django would otherwise render its HTML debug
    page instead of calling ``handler404``). It sits after ``CommonMiddleware``, so a missing
    trailing slash is still redirected where the slashed path exists."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if is_api_request(request):
            try:
                get_resolver(getattr(request, "urlconf", None)).resolve(request.path_info)
            except Resolver404:
                return JsonResponse(error_body("not_found", "Not found."), status=404)
        return self.get_response(request)


def api_aware_404(request, exception=None):
    if is_api_request(request):
        return JsonResponse(error_body("not_found", "Not found."), status=404)
    return page_not_found(request, exception)


def api_aware_500(request):
    if is_api_request(request):
        return JsonResponse(error_body("server_error", "Internal server error."), status=500)
    return server_error(request)


def api_aware_400(request, exception=None):
    if is_api_request(request):
        return JsonResponse(error_body("bad_request", "Bad request."), status=400)
    return bad_request(request, exception)


def api_aware_403(request, exception=None):
    if is_api_request(request):
        return JsonResponse(error_body("permission_denied", "Permission denied."), status=403)
    return permission_denied(request, exception)


class DefaultPagination(PageNumberPagination):
    """``?page=N&page_size=M``: positive integers (anything else is a 400, not ignored); a
    page size over the maximum is cut to it; a page past the last one is a 404."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200

    def get_page_size(self, request):
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        return min(_positive_query_int(self.page_size_query_param, raw), self.max_page_size)

    def get_page_number(self, request, paginator):
        raw = request.query_params.get(self.page_query_param)
        if raw is None:
            return 1
        if raw in self.last_page_strings:
            return paginator.num_pages
        return _positive_query_int(self.page_query_param, raw)

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1
            if parameter["name"] == self.page_size_query_param:
                parameter["description"] = (
                    f"Results per page (default {self.page_size}; larger values are cut to {self.max_page_size})."
                )
        return parameters


# The lists of the agent runtime's API (conversations, messages, runs, the notes file's changes)
# are bounded: at most LIST_MAX_PAGE_SIZE items, their large text fields cut (marked); the detail
# endpoints return the full text.
LIST_MAX_PAGE_SIZE = 50


class ListPagination(DefaultPagination):
    page_size = LIST_MAX_PAGE_SIZE
    max_page_size = LIST_MAX_PAGE_SIZE


def _positive_query_int(name: str, raw: str) -> int:
    if not raw.isascii() or not raw.isdigit() or int(raw) < 1:
        raise drf_exceptions.ValidationError({name: ["Must be a positive integer."]})
    return int(raw)


def api_route(pattern: str, view, name: str):
    """A URL under /api/ whose trailing slash is optional (docs/API.md)."""
    return re_path(rf"^{pattern}/?$", view, name=name)


class StrictInputMixin:
    # Input serializers reject unknown fields instead of silently ignoring them, and the
    # schema says so (``additionalProperties: false``, StrictInputSchema below). No docstring:
    # the schema generator would show it as the description of every input.

    # Alternative sets of fields one of which must be present, for the schema (the view
    # enforces them).
    schema_required_any_of: tuple[tuple[str, ...], ...] = ()

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["Expected a JSON object."]})
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        return super().to_internal_value(data)


def documented(field_class, schema: dict, **kwargs):
    """A ``field_class`` field that the schema describes as ``schema``: for input that a service
    checks itself, with its own error code, and the schema can still state exactly."""
    documented_class = type(f"Documented{field_class.__name__}", (field_class,), {})
    return extend_schema_field(schema)(documented_class)(**kwargs)


def enum_schema(choices) -> dict:
    """The schema of a choice field over ``choices``, so that it names and shares the enum
    component as a ``ChoiceField`` would."""
    return build_choice_field(serializers.ChoiceField(choices=choices))


class StrictInputSchema(OpenApiSerializerExtension):
    target_class = StrictInputMixin
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        schema["additionalProperties"] = False
        for name, field in self.target.fields.items():
            # Nested lists carry their bounds (the generator leaves them out).
            if isinstance(field, serializers.ListSerializer | serializers.ListField) and name in schema.get(
                "properties", {}
            ):
                low = max(field.min_length or 0, 0 if field.allow_empty else 1)
                if low:
                    schema["properties"][name]["minItems"] = low
                if field.max_length is not None:
                    schema["properties"][name]["maxItems"] = field.max_length
        if self.target.schema_required_any_of:
            schema["anyOf"] = [{"required": list(fields)} for fields in self.target.schema_required_any_of]
        return schema


def _strict_fields():
    class StrictCharField(serializers.CharField):
        """A CharField that refuses numbers, booleans and other non-strings instead of coercing."""

        default_error_messages = {"not_a_string": "Must be a string."}

        def to_internal_value(self, data):
            if not isinstance(data, str):
                self.fail("not_a_string")
            # The length as sent, before any trimming: what the schema's maxLength says.
            if self.max_length is not None and len(data) > self.max_length:
                self.fail("max_length", max_length=self.max_length)
            return super().to_internal_value(data)

    class StrictBooleanField(serializers.BooleanField):
        """JSON true/false only (no "yes", 1 or "true" strings)."""

        default_error_messages = {"not_a_boolean": "Must be true or false."}

        def to_internal_value(self, data):
            if not isinstance(data, bool):
                self.fail("not_a_boolean")
            return data

    class StrictIntegerField(serializers.IntegerField):
        """JSON integers only (no strings, floats or booleans)."""

        default_error_messages = {"not_an_integer": "Must be an integer."}

        def to_internal_value(self, data):
            if isinstance(data, bool) or not isinstance(data, int):
                self.fail("not_an_integer")
            return super().to_internal_value(data)

    return StrictCharField, StrictBooleanField, StrictIntegerField


StrictCharField, StrictBooleanField, StrictIntegerField = _strict_fields()


# Text holding something besides what str.strip() removes, written so that ECMAScript and Python
# read it alike (their \s differ).
NOT_ONLY_SPACE = r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"


class StrictCharFieldSchema(OpenApiSerializerFieldExtension):
    """A required text that is trimmed must hold something besides white space."""

    target_class = StrictCharField
    match_subclasses = True

    def map_serializer_field(self, auto_schema, direction):
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        if direction == "request" and self.target.trim_whitespace and not self.target.allow_blank:
            schema.setdefault("pattern", NOT_ONLY_SPACE)
        return schema


class ApiFilterBackend(DjangoFilterBackend):
    """django-filter for the API: a filter sent with an empty value is a 400 (the schema
    documents its dates and choices), unless it takes free text, where empty means no search.
    The web pages' forms send empty values and use the filter sets directly.

    A request with no parameter but the page's does not build the filter set (deep copies of
    every filter and form field, most of a list's filtering cost): every filter leaves the rows
    alone without a value, so the rows are the set's ``unfiltered(queryset)`` when it has a
    default of its own (the memories' active-only), else the queryset as it is. A set with its
    own ``__init__``, ``qs`` or ``filter_queryset`` and no ``unfiltered`` is always built."""

    def filter_queryset(self, request, queryset, view):
        filterset_class = self.get_filterset_class(view, queryset)
        paginator = getattr(view, "paginator", None)
        page_params = {paginator.page_query_param, paginator.page_size_query_param} if paginator else set()
        if filterset_class is not None and not set(request.query_params) - page_params:
            if hasattr(filterset_class, "unfiltered"):
                return filterset_class.unfiltered(queryset)
            if all(
                getattr(filterset_class, name) is getattr(django_filters.FilterSet, name)
                for name in ("__init__", "qs", "filter_queryset")
            ):
                return queryset
        return super().filter_queryset(request, queryset, view)

    def get_filterset(self, request, queryset, view):
        filterset = super().get_filterset(request, queryset, view)
        if filterset is not None:
            empty = [
                name
                for name, declared in filterset.filters.items()
                if not isinstance(declared, django_filters.CharFilter) and "" in request.query_params.getlist(name)
            ]
            if empty:
                raise drf_exceptions.ValidationError({name: ["May not be empty."] for name in empty})
        return filterset


class ApiFilterBackendSchema(DjangoFilterExtension):
    """The query parameters of ``ApiFilterBackend`` as the server reads them: a free-text filter
    with a pattern validator documents the pattern (``\\Z`` read as ``$``), and a repeatable one
    at least one item, so the schema refuses what the filter refuses."""

    target_class = "config.api.ApiFilterBackend"
    match_subclasses = True
    priority = 1

    def resolve_filter_field(self, auto_schema, model, filterset_class, field_name, filter_field):
        parameters = super().resolve_filter_field(auto_schema, model, filterset_class, field_name, filter_field)
        patterns = [
            v.regex.pattern.replace("\\Z", "$")
            for v in filter_field.extra.get("validators", ())
            if isinstance(v, RegexValidator) and not v.inverse_match and not v.flags
        ]
        for parameter in parameters:
            if patterns and parameter["schema"].get("type") == "string":
                parameter["schema"]["pattern"] = patterns[0]
            if parameter["schema"].get("type") == "array":  # sent empty, it is "May not be empty."
                parameter["schema"]["minItems"] = 1
        return parameters


def validated(serializer_class, request) -> dict:
    """Validate ``request.data`` with an input serializer; errors go to the one handler."""
    data = serializer_class(data=request.data)
    data.is_valid(raise_exception=True)
    return data.validated_data


def is_schema_generation(view) -> bool:
    """True while drf-spectacular introspects a view (no real request or URL kwargs)."""
    return getattr(view, "swagger_fake_view", False)


# --- list output ----------------------------------------------------------------------------
_SKIPPED = object()
# Fields whose ``to_representation`` is the identity, or ``str``, for the values models hold.
_PLAIN_OUTPUT = {serializers.CharField: str, serializers.JSONField: None}


class PlannedListSerializer(serializers.ListSerializer):
    """``many=True`` output of a read-only serializer (``Meta.list_serializer_class``) with the
    same result as the serializer's own ``to_representation`` per item, read through a plan made
    once per list from the bound fields: an attribute getter and a converter per field instead of
    DRF's general lookup on every field of every row (about a third of the cost on a 50-row page).
    Anything the plan does not cover exactly (a field with a lookup of its own, ``source="*"``, a
    callable or missing attribute, a related value that is not a plain key) goes through the
    field's own ``get_attribute``. A serializer that overrides ``to_representation`` keeps it."""

    def to_representation(self, data):
        if type(self.child).to_representation is not serializers.Serializer.to_representation:
            return super().to_representation(data)
        plan = [(field.field_name, _field_reader(field)) for field in self.child._readable_fields]
        items = data.all() if isinstance(data, BaseManager) else data
        return [{name: value for name, read in plan if (value := read(item)) is not _SKIPPED} for item in items]


def _drf_read(field, instance):
    """What ``Serializer.to_representation`` puts under the field's name (``_SKIPPED``: nothing)."""
    try:
        attribute = field.get_attribute(instance)
    except SkipField:
        return _SKIPPED
    check = attribute.pk if isinstance(attribute, PKOnlyObject) else attribute
    return None if check is None else field.to_representation(attribute)


def _datetime_output(field):
    """``DateTimeField.to_representation`` for aware values in ISO 8601, with the output time
    zone looked up once per list instead of once per value; anything else goes to the field."""
    output_format = getattr(field, "format", api_settings.DATETIME_FORMAT)
    if output_format is None or output_format.lower() != ISO_8601:
        return field.to_representation
    zone = field.timezone if hasattr(field, "timezone") else field.default_timezone()
    if zone is None:
        return field.to_representation

    def convert(value):
        if not isinstance(value, datetime.datetime) or value.tzinfo is None:
            return field.to_representation(value)
        try:
            text = value.astimezone(zone).isoformat()
        except OverflowError:
            return field.to_representation(value)  # its own error
        return text[:-6] + "Z" if text.endswith("+00:00") else text

    return convert


def _field_reader(field):
    """``instance -> output value`` of one bound readable field."""
    if isinstance(field, serializers.SerializerMethodField):
        method = getattr(field.parent, field.method_name)
        return lambda instance: None if instance is None else method(instance)
    attrs = field.source_attrs
    own_lookup = type(field).get_attribute
    if (
        isinstance(field, serializers.RelatedField)
        and own_lookup is serializers.RelatedField.get_attribute
        and field.use_pk_only_optimization()
        and len(attrs) == 1
    ):

        def read_pk(instance):
            try:
                pk = instance.serializable_value(attrs[0])
            except AttributeError:  # not a concrete field (a reverse relation, a property)
                return _drf_read(field, instance)
            if pk is None:
                return None
            if not isinstance(pk, int | str):  # a callable, a model instance: DRF's own way
                return _drf_read(field, instance)
            return field.to_representation(PKOnlyObject(pk=pk))

        return read_pk
    if not attrs or own_lookup is not serializers.Field.get_attribute:  # source="*", or a lookup of its own
        return lambda instance: _drf_read(field, instance)
    getter = operator.attrgetter(".".join(attrs))
    convert = _PLAIN_OUTPUT.get(type(field), field.to_representation)
    if type(field) is serializers.JSONField and field.binary:
        convert = field.to_representation
    elif type(field) is serializers.DateTimeField:
        convert = _datetime_output(field)

    def read(instance):
        try:
            value = getter(instance)
        except (AttributeError, ObjectDoesNotExist):
            return _drf_read(field, instance)
        if value is None:
            return None
        if callable(value):
            return _drf_read(field, instance)
        return value if convert is None else convert(value)

    return read


class JSONObjectField(serializers.JSONField):
    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not isinstance(value, dict):
            raise serializers.ValidationError("Must be a JSON object.")
        return value


class JSONObjectFieldSchema(OpenApiSerializerFieldExtension):
    target_class = JSONObjectField

    def map_serializer_field(self, auto_schema, direction):
        return {"type": "object", "additionalProperties": {}}


# --- the error shape in the schema ----------------------------------------------------------
ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "details": {"description": "Field errors, for validation failures."},
                "request_id": {"type": "string", "description": "The request's id, also sent as `X-Request-ID`."},
            },
            "required": ["code", "message"],
        }
    },
    "required": ["error"],
}
_ERROR_STATUSES = {
    "400": "Invalid input (the error shape; `details` names the fields).",
    "401": "Missing, forged, expired or revoked credentials.",
    "403": "Visible but not allowed.",
    "404": "Missing, or not yours.",
    "409": "A state conflict.",
    "413": "The request body is over the size limit.",
    "415": "The request body is not JSON.",
    "429": "Throttled; retry after `Retry-After` seconds.",
}


def schema_error_responses(result, generator, request, public):
    """Every operation documents the JSON error shape for the statuses it may answer with:
    401, 403, 404 and 429 everywhere; 400 where it takes a body or query parameters; 409 for
    writes; 413 and 415 where it takes a body."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    reference = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            statuses = ["401", "403", "404", "429"]
            has_body = "requestBody" in operation
            if has_body or any(p.get("in") == "query" for p in operation.get("parameters", [])):
                statuses.append("400")
            if method in ("post", "put", "patch", "delete"):
                statuses.append("409")
            if has_body:
                statuses += ["413", "415"]
            for status in sorted(statuses):
                response = {"description": _ERROR_STATUSES[status], "content": reference}
                if status == "429":
                    response["headers"] = {"Retry-After": {"schema": {"type": "integer"}}}
                operation["responses"].setdefault(status, response)
    return result
