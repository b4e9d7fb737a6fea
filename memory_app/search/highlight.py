"""Why a result matched, for people: the query's terms marked in a result's text."""

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from memory_app.search.analysis import match_spans


def highlight(text: str, terms: list[str], *, max_chars: int = 240) -> SafeString:
    """``text`` (cut to ``max_chars``) HTML-escaped, with matched terms in ``<mark>``."""
    if len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    out: list[str] = []
    last = 0
    for start, end in match_spans(text, terms):
        out.append(escape(text[last:start]))
        out.append(f"<mark>{escape(text[start:end])}</mark>")
        last = end
    out.append(escape(text[last:]))
    return mark_safe("".join(out))
