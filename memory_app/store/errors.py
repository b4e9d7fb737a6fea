"""Error codes of ``memory_app.store`` (one place per package, as docs/API.md lists them)."""

from enum import StrEnum


class ErrorCode(StrEnum):
    """The error codes this package answers with (docs/API.md, Errors; tests/test_error_codes.py)."""

    INVALID = "invalid"
    INVALID_NAMESPACE = "invalid_namespace"
    INVALID_TTL = "invalid_ttl"
    UNSUPPORTED_FILTER = "unsupported_filter"
