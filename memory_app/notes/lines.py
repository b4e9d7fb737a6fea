"""The line rules of the notes file (``MEMORY.md``): how an agent's note is appended (once: a
note whose lines are already there, bullets, case and spacing aside, changes nothing) and how a
correction replaces text that occurs exactly once. Pure functions of the text; the write itself
is ``services.memory_file_edit``."""

import re
import threading
import unicodedata

from config.errors import Conflict
from memory_app.notes.errors import ErrorCode

_BULLET_RE = re.compile(r"^(?:[-*+•]|\d+[.)])\s+")
_SPACE_RE = re.compile(r"\s+")


def normalize_line(line: str) -> str:
    line = unicodedata.normalize("NFKC", line).casefold()
    line = _SPACE_RE.sub(" ", line).strip()
    return _BULLET_RE.sub("", line).strip()


def normalized_lines(text: str) -> list[str]:
    return [n for n in (normalize_line(line) for line in text.splitlines()) if n]


def contains_lines(haystack: list[str], needle: list[str]) -> bool:
    """Whether ``needle`` occurs as consecutive lines of ``haystack``."""
    if not needle:
        return True
    size, start = len(needle), 0
    while True:
        try:
            index = haystack.index(needle[0], start)
        except ValueError:
            return False
        if haystack[index : index + size] == needle:
            return True
        start = index + 1


def count_occurrences(text: str, part: str) -> int:
    """0, 1, or 2 for "more than once" (the count stops there)."""
    count, start = 0, text.find(part)
    while start >= 0:
        count += 1
        if count > 1:
            return count
        start = text.find(part, start + 1)
    return count


def line_edit_apply(
    *, current: str, lines: list[str], content: str, replaces: str | None
) -> tuple[str, str | None, list[str]]:
    """``(result, updated text or None, normalized lines of the result)``: ``appended``,
    ``replaced`` or ``unchanged``; ``lines`` are the normalized lines of ``current`` (never
    changed in place). A ``replaces`` that does not occur exactly once is ``409 conflict``."""
    if replaces is None:
        added = normalized_lines(content)
        if contains_lines(lines, added):
            return "unchanged", None, lines
        prefix = current if not current or current.endswith("\n") else current + "\n"
        # The prefix ends a line, so the new text's lines are the old ones then the content's.
        return "appended", f"{prefix}{content}\n", lines + added
    matches = count_occurrences(current, replaces)
    if matches != 1:
        raise Conflict(
            "The text to replace must occur exactly once in MEMORY.md"
            + (" (it was not found)." if matches == 0 else " (it occurs more than once)."),
            code=ErrorCode.CONFLICT,
            details={"matches": "0" if matches == 0 else "many"},
        )
    updated = current.replace(replaces, content, 1)
    if updated == current:
        return "unchanged", None, lines
    return "replaced", updated, normalized_lines(updated)


# The normalized lines of each user's MEMORY.md as last seen, so an append does not normalize
# the whole file again: valid for exactly that text (a pure function of it, never stale).
_LINES_CACHE: dict[int, tuple[str, list[str]]] = {}
_LINES_CACHE_MAX = 512
_lines_lock = threading.Lock()


def file_lines(user_id: int, text: str) -> list[str]:
    cached = _LINES_CACHE.get(user_id)
    if cached is not None and cached[0] == text:
        return cached[1]
    return normalized_lines(text)


def file_lines_keep(user_id: int, text: str, lines: list[str]) -> None:
    with _lines_lock:
        _LINES_CACHE.pop(user_id, None)
        while len(_LINES_CACHE) >= _LINES_CACHE_MAX:
            _LINES_CACHE.pop(next(iter(_LINES_CACHE)))
        _LINES_CACHE[user_id] = (text, lines)
