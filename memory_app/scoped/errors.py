"""Error codes of ``memory_app.scoped`` (one place per package, as docs/API.md lists them)."""

from enum import StrEnum


class ErrorCode(StrEnum):
    """The error codes this package answers with (docs/API.md, Errors; tests/test_error_codes.py)."""

    ALREADY_DECIDED = "already_decided"
    BACKUP_IN_TRANSACTION = "backup_in_transaction"
    INVALID_APPROVAL = "invalid_approval"
    INVALID_MESSAGES = "invalid_messages"
    INVALID_PLAN = "invalid_plan"
    INVALID_SCOPE = "invalid_scope"
    INVALID_SESSION_KEY = "invalid_session_key"
    INVALID_TARGET = "invalid_target"
    NEEDS_TARGET = "needs_target"
    NOT_ACTIVE = "not_active"
    NOT_APPROVABLE = "not_approvable"
    SCOPE_IN_EVIDENCE = "scope_in_evidence"
    SCOPE_IN_METADATA = "scope_in_metadata"
    UNDO_EXPIRED = "undo_expired"
