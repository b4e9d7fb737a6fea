"""Error codes of ``identity_app`` (one place per package, as docs/API.md lists them)."""

from enum import StrEnum


class ErrorCode(StrEnum):
    """The error codes this package answers with (docs/API.md, Errors; tests/test_error_codes.py)."""

    ALREADY_BOUND = "already_bound"
    ALREADY_MEMBER = "already_member"
    INACTIVE_USER = "inactive_user"
    INVALID_CHAT_KEY = "invalid_chat_key"
    INVALID_EXPIRY = "invalid_expiry"
    INVALID_LIMITS = "invalid_limits"
    INVALID_NAME = "invalid_name"
    INVALID_ROLE = "invalid_role"
    INVALID_SESSION_KEY = "invalid_session_key"
    INVALID_TEXT = "invalid_text"
    INVALID_USERNAME = "invalid_username"
    INVITATION_CLOSED = "invitation_closed"
    INVITATION_STALE = "invitation_stale"
    LAST_OWNER = "last_owner"
    LIMITS_NOT_ALLOWED = "limits_not_allowed"
    OWNER_REQUIRED = "owner_required"
    PROJECT_REQUIRED = "project_required"
    SERVICE_PRINCIPAL_REQUIRED = "service_principal_required"
    TOKEN_LIMITED = "token_limited"
    TOKEN_NOT_ACTIVE = "token_not_active"
    TOO_LARGE = "too_large"
    UNKNOWN_PROJECT = "unknown_project"
    UNKNOWN_USER = "unknown_user"
