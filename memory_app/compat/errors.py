"""Error codes of ``memory_app.compat`` (one place per package, as docs/API.md lists them)."""

from enum import StrEnum


class ErrorCode(StrEnum):
    """The error codes this package answers with (docs/API.md, Errors; tests/test_error_codes.py)."""

    INVALID = "invalid"
    TOO_MANY_USERS = "too_many_users"
    UNSUPPORTED = "unsupported"
    UNSUPPORTED_FILTER = "unsupported_filter"
    USER_ID_REQUIRED = "user_id_required"
