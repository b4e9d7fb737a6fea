"""Error codes of ``memory_app.memories`` (one place per package, as docs/API.md lists them)."""

from enum import StrEnum


class ErrorCode(StrEnum):
    """The error codes this package answers with (docs/API.md, Errors; tests/test_error_codes.py)."""

    CONFLICT = "conflict"
    INVALID_CONTENT = "invalid_content"
    INVALID_EVIDENCE = "invalid_evidence"
    INVALID_EXPIRES_AT = "invalid_expires_at"
    INVALID_KEY = "invalid_key"
    INVALID_KIND = "invalid_kind"
    INVALID_METADATA = "invalid_metadata"
    INVALID_NAMESPACE = "invalid_namespace"
    INVALID_ORIGIN = "invalid_origin"
    INVALID_PAUSED = "invalid_paused"
    INVALID_PROJECT = "invalid_project"
    INVALID_SCOPE = "invalid_scope"
    INVALID_TIER = "invalid_tier"
    NOTHING_TO_CHANGE = "nothing_to_change"
    NOT_ACTIVE = "not_active"
    STALE = "stale"
    UNKNOWN_USER = "unknown_user"
