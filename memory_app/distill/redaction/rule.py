"""What a redaction rule is: a kind, a pattern (perhaps behind gates) and its replacement."""

import re
from collections.abc import Callable
from dataclasses import dataclass


def marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


@dataclass(frozen=True)
class Gated:
    """A rule's pattern that runs only when each of ``gates`` finds something in the text as it
    came in (once per ``redact`` call, shared by the rules that name the same gate): the phrase
    rules of twenty languages cost one scan for a text that names no password at all."""

    pattern: re.Pattern[str]
    gates: tuple[re.Pattern[str], ...]


def words_gate(words: str) -> re.Pattern[str]:
    return re.compile(rf"(?i){words}")


Rule = tuple[str, "re.Pattern[str] | Gated", "str | Callable[[re.Match[str]], str]"]


def gated(rules: list[Rule], gate: re.Pattern[str]) -> list[Rule]:
    return [
        (kind, Gated(rule.pattern, (gate, *rule.gates)) if isinstance(rule, Gated) else Gated(rule, (gate,)), repl)
        for kind, rule, repl in rules
    ]
