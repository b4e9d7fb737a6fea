"""Error codes of ``memory_app.automemory`` (one place per package, as docs/API.md lists them)."""

from enum import StrEnum


class ErrorCode(StrEnum):
    """The error codes this package answers with (docs/API.md, Errors; tests/test_error_codes.py)."""

    INVALID_FLAGS = "invalid_flags"
    INVALID_SETTINGS = "invalid_settings"
    INVALID_SWITCHES = "invalid_switches"
