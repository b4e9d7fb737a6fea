"""UTF-8 byte budgets. Every cut of text shown to an agent goes through ``truncate_utf8`` (or its
JSON- or character-measured siblings below, which cut with it)."""

import json

TRUNCATION_MARKER = "…[truncated]"


def json_size(value) -> int:
    """Bytes of ``value`` as the API renders it (compact separators, UTF-8, no ASCII escaping);
    ``config.validation.json_size`` is this one."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def truncate_utf8(text: str, max_bytes: int, *, marker: str = TRUNCATION_MARKER) -> tuple[str, bool]:
    """Return ``(text, truncated)`` where the result, marker included, is at most ``max_bytes``
    UTF-8 bytes and never splits a code point.

    Every cut is marked: a cut text ends with ``marker``. When even the marker does not fit in
    ``max_bytes`` the whole text is omitted and the result is ``("", True)``; callers report such
    an item as omitted (never a partial text without its marker)."""
    if max_bytes < 0:
        raise ValueError("max_bytes must be >= 0")
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text, False
    marker_bytes = marker.encode("utf-8")
    if not marker_bytes or len(marker_bytes) > max_bytes:
        return "", True
    room = max_bytes - len(marker_bytes)
    # Slicing bytes can only break the last code point; dropping its partial bytes keeps the
    # result valid UTF-8 and at most ``room`` bytes long.
    head = data[:room].decode("utf-8", errors="ignore")
    return head + marker, True


def truncate_json_text(text: str, max_json_bytes: int, *, marker: str = TRUNCATION_MARKER) -> tuple[str, bool]:
    """``truncate_utf8`` budgeted on the serialized size: the result rendered as a JSON string
    (quotes and escapes included, see ``json_size``) is at most ``max_json_bytes``. Control
    characters, quotes and backslashes grow when escaped, so a raw byte budget is not enough."""
    if json_size(text) <= max_json_bytes:
        return text, False
    # Largest UTF-8 budget whose cut still fits once escaped; the escaped size grows with it.
    low, high = 0, min(utf8_len(text), max(0, max_json_bytes - 2))
    best = ("", True)
    while low <= high:
        middle = (low + high) // 2
        candidate = truncate_utf8(text, middle, marker=marker)
        if json_size(candidate[0]) <= max_json_bytes:
            best, low = candidate, middle + 1
        else:
            high = middle - 1
    return best


def truncate_chars(text: str, max_chars: int, *, marker: str = TRUNCATION_MARKER) -> tuple[str, bool]:
    """``truncate_utf8``'s contract counted in characters (for the few budgets set in characters)."""
    if max_chars < 0:
        raise ValueError("max_chars must be >= 0")
    if len(text) <= max_chars:
        return text, False
    if not marker or len(marker) > max_chars:
        return "", True
    return text[: max_chars - len(marker)] + marker, True
