"""Error codes of ``memory_app.ops`` (one place per package, as docs/API.md lists them)."""

from enum import StrEnum


class ErrorCode(StrEnum):
    """The error codes this package answers with (docs/API.md, Errors; tests/test_error_codes.py)."""

    TOKEN_NOT_ACTIVE = "token_not_active"
