"""Error codes of ``memory_app.home`` (one place per package, as docs/API.md lists them)."""

from enum import StrEnum


class ErrorCode(StrEnum):
    """The error codes this package answers with (docs/API.md, Errors; tests/test_error_codes.py)."""

    CONFIRMATION_REQUIRED = "confirmation_required"
    DUPLICATE_KEY = "duplicate_key"
    GLOBAL_NOT_ALLOWED = "global_not_allowed"
    INVALID_EVIDENCE = "invalid_evidence"
    INVALID_IDS = "invalid_ids"
    INVALID_IMPORT = "invalid_import"
    INVALID_METADATA = "invalid_metadata"
    INVALID_PROFILE = "invalid_profile"
    INVALID_SETTINGS = "invalid_settings"
    INVALID_SOURCE = "invalid_source"
    TOO_DEEP = "too_deep"
    TOO_LARGE = "too_large"
    TOO_MANY = "too_many"
