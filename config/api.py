"""The one place that turns errors into the JSON error shape of the API:
``{"error": {"code": "...", "message": "...", "details": ...}}``.
"""

import logging
import math

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, JsonResponse
from django.urls import re_path
from django.views.defaults import bad_request, page_not_found, permission_denied, server_error
from rest_framework import exceptions as drf_exceptions
from rest_framework import serializers
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response

from config.errors import DomainError
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
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200


def api_route(pattern: str, view, name: str):
    """A URL under /api/ whose trailing slash is optional (docs/API.md)."""
    return re_path(rf"^{pattern}/?$", view, name=name)


class StrictInputMixin:
    """Input serializers reject unknown fields instead of silently ignoring them."""

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["Expected a JSON object."]})
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        return super().to_internal_value(data)


def _strict_fields():
    class StrictCharField(serializers.CharField):
        """A CharField that refuses numbers, booleans and other non-strings instead of coercing."""

        default_error_messages = {"not_a_string": "Must be a string."}

        def to_internal_value(self, data):
            if not isinstance(data, str):
                self.fail("not_a_string")
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


def validated(serializer_class, request) -> dict:
    """Validate ``request.data`` with an input serializer; errors go to the one handler."""
    data = serializer_class(data=request.data)
    data.is_valid(raise_exception=True)
    return data.validated_data


def is_schema_generation(view) -> bool:
    """True while drf-spectacular introspects a view (no real request or URL kwargs)."""
    return getattr(view, "swagger_fake_view", False)


class JSONObjectField(serializers.JSONField):
    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not isinstance(value, dict):
            raise serializers.ValidationError("Must be a JSON object.")
        return value
