"""The one place that turns errors into the JSON error shape of the API:
``{"error": {"code": "...", "message": "...", "details": ...}}`` — the DRF exception handler,
Django's error views for paths under /api/, and a path under /api/ that names no route."""

import math

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, HttpRequest, JsonResponse
from django.urls import Resolver404, get_resolver
from django.views.defaults import bad_request, page_not_found, permission_denied, server_error
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response

from config.api.routes import is_api_request, is_compat_request
from config.errors import DomainError, ErrorCode
from config.logs import current_request_id
from config.throttling import unauthenticated_throttled

_DRF_CODES = {
    drf_exceptions.ParseError: ErrorCode.MALFORMED_REQUEST,
    drf_exceptions.AuthenticationFailed: ErrorCode.AUTHENTICATION_FAILED,
    drf_exceptions.NotAuthenticated: ErrorCode.NOT_AUTHENTICATED,
    drf_exceptions.PermissionDenied: ErrorCode.PERMISSION_DENIED,
    drf_exceptions.NotFound: ErrorCode.NOT_FOUND,
    drf_exceptions.MethodNotAllowed: ErrorCode.METHOD_NOT_ALLOWED,
    drf_exceptions.NotAcceptable: ErrorCode.NOT_ACCEPTABLE,
    drf_exceptions.UnsupportedMediaType: ErrorCode.UNSUPPORTED_MEDIA_TYPE,
    drf_exceptions.Throttled: ErrorCode.THROTTLED,
    drf_exceptions.ValidationError: ErrorCode.INVALID,
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
        return Response(error_body(ErrorCode.NOT_FOUND, "Not found."), status=404)
    if isinstance(exc, DjangoPermissionDenied):
        return Response(error_body(ErrorCode.PERMISSION_DENIED, "Permission denied."), status=403)
    if isinstance(exc, DjangoValidationError):
        details = exc.message_dict if hasattr(exc, "error_dict") else exc.messages
        return Response(error_body(ErrorCode.INVALID, _validation_message(details), details), status=400)
    if isinstance(exc, drf_exceptions.NotAuthenticated | drf_exceptions.AuthenticationFailed):
        exc = unauthenticated_throttled(context["request"]) or exc
    if isinstance(exc, drf_exceptions.APIException):
        code = next((c for t, c in _DRF_CODES.items() if isinstance(exc, t)), ErrorCode.ERROR)
        headers = {}
        if auth_header := getattr(exc, "auth_header", None):
            headers["WWW-Authenticate"] = auth_header
        # The stub leaves out Throttled.wait, which DRF sets in __init__.
        wait = exc.wait if isinstance(exc, drf_exceptions.Throttled) else None  # type: ignore[attr-defined]
        if wait is not None:
            headers["Retry-After"] = str(math.ceil(wait))
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


class ApiNotFoundMiddleware:
    """A path under /api/ that names no route is answered with the JSON error shape before any
    view runs, in development mode too (where Django would otherwise render its HTML debug
    page instead of calling ``handler404``). It sits after ``CommonMiddleware``, so a missing
    trailing slash is still redirected where the slashed path exists."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        if is_api_request(request):
            try:
                get_resolver(getattr(request, "urlconf", None)).resolve(request.path_info)
            except Resolver404:
                body = error_body(ErrorCode.NOT_FOUND, "Not found.")
                if is_compat_request(request):
                    body["detail"] = "Not found."  # what mem0's clients read
                return JsonResponse(body, status=404)
        return self.get_response(request)


def api_aware_404(request: HttpRequest, exception=None):
    if is_api_request(request):
        return JsonResponse(error_body(ErrorCode.NOT_FOUND, "Not found."), status=404)
    return page_not_found(request, exception)


def api_aware_500(request: HttpRequest):
    if is_api_request(request):
        return JsonResponse(error_body(ErrorCode.SERVER_ERROR, "Internal server error."), status=500)
    return server_error(request)


def api_aware_400(request: HttpRequest, exception=None):
    if is_api_request(request):
        return JsonResponse(error_body(ErrorCode.BAD_REQUEST, "Bad request."), status=400)
    return bad_request(request, exception)


def api_aware_403(request: HttpRequest, exception=None):
    if is_api_request(request):
        return JsonResponse(error_body(ErrorCode.PERMISSION_DENIED, "Permission denied."), status=403)
    return permission_denied(request, exception)
