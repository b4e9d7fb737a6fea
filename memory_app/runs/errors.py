"""Error codes of ``memory_app.runs`` (one place per package, as docs/API.md lists them)."""

from enum import StrEnum


class ErrorCode(StrEnum):
    """The error codes this package answers with (docs/API.md, Errors; tests/test_error_codes.py)."""

    CONVERSATION_NOT_ACTIVE = "conversation_not_active"
    INVALID = "invalid"
    INVALID_ARGUMENTS = "invalid_arguments"
    INVALID_KIND = "invalid_kind"
    INVALID_LEASE = "invalid_lease"
    INVALID_LEASE_STATE = "invalid_lease_state"
    INVALID_STATUS = "invalid_status"
    INVALID_USAGE = "invalid_usage"
    INVALID_WORKER = "invalid_worker"
    LEASE_HELD = "lease_held"
    LEASE_LOST = "lease_lost"
    MEMORY_DISABLED = "memory_disabled"
    NOT_TOP_LEVEL_RUN = "not_top_level_run"
    PARENT_NOT_ALLOWED = "parent_not_allowed"
    PARENT_REQUIRED = "parent_required"
    PROJECT_ONLY_RUN = "project_only_run"
    RUN_CONTEXT_MISMATCH = "run_context_mismatch"
    RUN_FINISHED = "run_finished"
    RUN_NOT_AUTHORIZED = "run_not_authorized"
    RUN_NOT_RUNNING = "run_not_running"
    SUBAGENT_THREAD = "subagent_thread"
    UNKNOWN_TOOL = "unknown_tool"
