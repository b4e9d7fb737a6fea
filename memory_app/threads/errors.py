"""Error codes of ``memory_app.threads`` (one place per package, as docs/API.md lists them)."""

from enum import StrEnum


class ErrorCode(StrEnum):
    """The error codes this package answers with (docs/API.md, Errors; tests/test_error_codes.py)."""

    CONFLICT = "conflict"
    INVALID_ATTACHMENTS = "invalid_attachments"
    INVALID_CONTENT = "invalid_content"
    INVALID_EXTERNAL_ID = "invalid_external_id"
    INVALID_FEEDBACK = "invalid_feedback"
    INVALID_IMAGES = "invalid_images"
    INVALID_MESSAGES = "invalid_messages"
    INVALID_METADATA = "invalid_metadata"
    INVALID_NO_MEMORY = "invalid_no_memory"
    INVALID_QUERY = "invalid_query"
    INVALID_ROLE = "invalid_role"
    INVALID_SENT_AT = "invalid_sent_at"
    INVALID_SESSION_KEY = "invalid_session_key"
    INVALID_SOURCE = "invalid_source"
    INVALID_STATUS = "invalid_status"
    INVALID_THREAD_ID = "invalid_thread_id"
    INVALID_TITLE = "invalid_title"
    INVALID_TOOL_CALLS = "invalid_tool_calls"
    INVALID_TYPE = "invalid_type"
    THREAD_NOT_FOUND = "thread_not_found"
