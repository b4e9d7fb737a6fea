"""UTF-8 byte budgets. Every cut of text shown to an agent goes through ``truncate_utf8``."""

import json

TRUNCATION_MARKER = "…[truncated]"


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def truncate_utf8(text: str, max_bytes: int, *, marker: str = TRUNCATION_MARKER) -> tuple[str, bool]:
    """Return ``(text, truncated)`` where the result, marker included, is at most ``max_bytes``
    UTF-8 bytes and never splits a code point. ``marker`` is appended only when text was cut."""
    if max_bytes < 0:
        raise ValueError("max_bytes must be >= 0")
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text, False
    marker_bytes = marker.encode("utf-8")
    if len(marker_bytes) > max_bytes:
        marker, marker_bytes = "", b""
    room = max_bytes - len(marker_bytes)
    # Slicing bytes can only break the last code point; dropping its partial bytes keeps the
    # result valid UTF-8 and at most ``room`` bytes long.
    head = data[:room].decode("utf-8", errors="ignore")
    return head + marker, True


def json_size(value) -> int:
    """Bytes of ``value`` as the API renders it (compact separators, UTF-8, no ASCII escaping)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
