"""Error codes of ``memory_app.notes`` (one place per package, as docs/API.md lists them)."""

from enum import StrEnum


class ErrorCode(StrEnum):
    """The error codes this package answers with (docs/API.md, Errors; tests/test_error_codes.py)."""

    CONFLICT = "conflict"
    INVALID = "invalid"
    INVALID_BASE_SHA256 = "invalid_base_sha256"
    INVALID_CONTENT = "invalid_content"
    MEMORY_FILE_INVALID = "memory_file_invalid"
    MEMORY_FILE_TOO_LARGE = "memory_file_too_large"
    MEMORY_LOCK_FAILED = "memory_lock_failed"
    UNDO_CONFLICT = "undo_conflict"
    UNKNOWN_WORKSPACE_FILE = "unknown_workspace_file"
    WORKSPACE_FILE_TOO_LARGE = "workspace_file_too_large"
    WORKSPACE_UNSAFE = "workspace_unsafe"
    WORKSPACE_WRITE_FAILED = "workspace_write_failed"
