"""The rules in their order, and ``redact``: what runs them over a text."""

import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memory_app.distill.redaction.bare import BARE_RULES
from memory_app.distill.redaction.checksums import CHECKSUM_RULES
from memory_app.distill.redaction.command_line import COMMAND_LINE_RULES
from memory_app.distill.redaction.contact import CONTACT_RULES
from memory_app.distill.redaction.keyed import KEYED_RULES
from memory_app.distill.redaction.languages import PHRASE_RULES
from memory_app.distill.redaction.rule import Gated, Rule
from memory_app.distill.redaction.tokens import TOKEN_RULES

# (kind, pattern, replacement); a replacement may keep a group (the key name) visible.
_RULES: list[Rule] = [*KEYED_RULES, *PHRASE_RULES, *COMMAND_LINE_RULES, *CHECKSUM_RULES, *TOKEN_RULES]
_INVISIBLE = re.compile("[\u200b-\u200f\u2060-\u2064\ufeff\u00ad]")


@dataclass(frozen=True)
class Redacted:
    text: str
    counts: dict  # kind → number of redactions


def redact(text: str, *, contact_info: bool = True) -> Redacted:
    """Replace secrets (and, when ``contact_info``, emails and phone numbers) by markers."""
    counts: Counter = Counter()
    # Compatibility forms (full-width letters, ligatures) become plain ones first, so
    # "Ｐａｓｓｗｏｒｄ: …" is a password like any other. Zero-width characters go too.
    original = text or ""
    text = _INVISIBLE.sub("", unicodedata.normalize("NFKC", original))
    rules = _RULES + (CONTACT_RULES if contact_info else []) + BARE_RULES
    start, found = text, {}
    for kind, rule, replacement in rules:
        if isinstance(rule, Gated):
            for gate in rule.gates:
                if gate not in found:
                    found[gate] = gate.search(start) is not None
            if not all(found[gate] for gate in rule.gates):
                continue
        pattern = rule.pattern if isinstance(rule, Gated) else rule
        text, n = _substitute(pattern, replacement, text)
        if n:
            counts[kind] += n
    if not counts:
        return Redacted(text=original, counts={})  # nothing found: the text stays as it was
    return Redacted(text=text, counts=dict(counts))


def redact_strings(value: Any, *, contact_info: bool = True) -> Any:
    """``value`` (JSON: dicts, lists, strings, numbers) with every string redacted, keys too."""
    if isinstance(value, str):
        return redact(value, contact_info=contact_info).text
    if isinstance(value, dict):
        return {
            redact_strings(key, contact_info=contact_info): redact_strings(item, contact_info=contact_info)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [redact_strings(item, contact_info=contact_info) for item in value]
    return value


def _substitute(
    pattern: re.Pattern[str], replacement: str | Callable[[re.Match[str]], str], text: str
) -> tuple[str, int]:
    """``pattern.subn``, where a callable replacement may decline a match by returning it as is
    (a declined match is not counted)."""
    if not callable(replacement):
        return pattern.subn(replacement, text)
    replaced = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal replaced
        result = replacement(match)
        replaced += result != match.group(0)
        return result

    return pattern.sub(replace, text), replaced
