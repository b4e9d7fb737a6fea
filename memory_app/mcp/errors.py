"""Error codes of ``memory_app.mcp`` (one place per package, as docs/API.md lists them)."""

from enum import StrEnum


class ErrorCode(StrEnum):
    """The error codes this package answers with (docs/API.md, Errors; tests/test_error_codes.py)."""

    AUTHENTICATION_FAILED = "authentication_failed"
    DUPLICATE_KEY = "duplicate_key"
    INTERNAL_ERROR = "internal_error"
    INVALID_ARGUMENTS = "invalid_arguments"
    NOT_AUTHENTICATED = "not_authenticated"
    NOT_YOUR_ACCOUNT = "not_your_account"
    SESSION_CLOSED = "session_closed"
    THROTTLED = "throttled"
    UNKNOWN_RESOURCE = "unknown_resource"
    UNKNOWN_TOOL = "unknown_tool"
    USER_REQUIRED = "user_required"
