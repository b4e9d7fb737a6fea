"""Domain errors shared by every app. One exception handler (config.api.errors) maps them to JSON."""

from enum import StrEnum


class ErrorCode(StrEnum):
    """The error codes this package answers with (docs/API.md, Errors; tests/test_error_codes.py)."""

    AUTHENTICATION_FAILED = "authentication_failed"
    BAD_REQUEST = "bad_request"
    CONFLICT = "conflict"
    DUPLICATE_KEY = "duplicate_key"
    ERROR = "error"
    INVALID = "invalid"
    INVALID_QUERY = "invalid_query"
    INVALID_TEXT = "invalid_text"
    MALFORMED_REQUEST = "malformed_request"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    NOT_ACCEPTABLE = "not_acceptable"
    NOT_AUTHENTICATED = "not_authenticated"
    NOT_FOUND = "not_found"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    PERMISSION_DENIED = "permission_denied"
    REPEATED_PARAMETER = "repeated_parameter"
    SERVER_ERROR = "server_error"
    THROTTLED = "throttled"
    TOO_DEEP = "too_deep"
    TOO_LARGE = "too_large"
    UNAVAILABLE = "unavailable"
    UNKNOWN_PARAMETER = "unknown_parameter"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"


class DomainError(Exception):
    status_code = 400
    code: str = ErrorCode.INVALID

    def __init__(self, message: str, *, code: str | None = None, details=None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.details = details


class NotFound(DomainError):
    status_code = 404
    code: str = ErrorCode.NOT_FOUND

    def __init__(self, message: str = "Not found.", **kwargs):
        super().__init__(message, **kwargs)


class PermissionDenied(DomainError):
    status_code = 403
    code: str = ErrorCode.PERMISSION_DENIED


class Conflict(DomainError):
    status_code = 409
    code: str = ErrorCode.CONFLICT


class InvalidInput(DomainError):
    status_code = 400
    code: str = ErrorCode.INVALID


class TooLarge(DomainError):
    status_code = 400
    code: str = ErrorCode.TOO_LARGE


class PayloadTooLarge(DomainError):
    status_code = 413
    code: str = ErrorCode.PAYLOAD_TOO_LARGE


class ServiceUnavailable(DomainError):
    status_code = 503
    code: str = ErrorCode.UNAVAILABLE
