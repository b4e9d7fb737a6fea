"""Extractors turn (already redacted) conversation text into candidate memories.

One interface, used by auto-memory (project tier) and by consolidation/dreaming (chat and
global scopes). ``DeterministicExtractor`` needs no model; an OpenAI-compatible HTTP
extractor can be configured instead (see ``get_extractor``).
"""

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Protocol

MAX_CANDIDATE_CHARS = 500


@dataclass(frozen=True)
class Candidate:
    kind: str  # one of memory_app.models.Kind
    content: str  # the statement to remember, self-contained
    subject_key: str  # normalized target; the same key means "the same fact, newer words"
    confidence: float = 1.0
    evidence: dict = field(default_factory=dict)


class Extractor(Protocol):
    name: str

    def extract(self, text: str, *, max_items: int = 20) -> list[Candidate]: ...


def normalize_key(text: str) -> str:
    """Lower-case, NFKC, punctuation removed, whitespace collapsed: a stable subject key."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"[^\w\s]", " ", text)
    return " ".join(text.split())[:200]


# (kind, pattern, group holding the subject). Patterns match explicit statements only.
_EN_RULES: list[tuple[str, re.Pattern, int]] = [
    ("decision", re.compile(r"\b(?:we|i|the team)\s+(?:have\s+)?decided\s+(?:to\s+|that\s+|on\s+)?(.+)", re.I), 1),
    ("decision", re.compile(r"\b(?:we|i)\s+(?:chose|picked|selected|went with)\s+(.+)", re.I), 1),
    ("convention", re.compile(r"\b(?:we|i)\s+(?:always|never)\s+(.+)", re.I), 1),
    ("convention", re.compile(r"^(?:always|never)\s+(.+)", re.I), 1),
    ("fact", re.compile(r"\b(?:we|i)\s+(?:use|are using|rely on)\s+(.+)", re.I), 1),
    ("preference", re.compile(r"\bi\s+(?:prefer|like|want)\s+(.+)", re.I), 1),
]
_ZH_RULES: list[tuple[str, re.Pattern, int]] = [
    ("decision", re.compile(r"(?:我们|我|团队)?(?:决定|选定|选择了|敲定)(.+)"), 1),
    ("convention", re.compile(r"(?:我们|我)?(?:总是|始终|一律|永远不要|从不|不要)(.+)"), 1),
    ("fact", re.compile(r"(?:我们|我)(?:使用|在用|用的是|采用)(.+)"), 1),
    ("preference", re.compile(r"我(?:喜欢|偏好|更喜欢|希望)(.+)"), 1),
]
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?。！？；;])\s*|\n+")


def _subject(kind: str, phrase: str) -> str:
    """The target of a statement: its first few words (EN) or characters (ZH)."""
    words = normalize_key(phrase).split()
    if not words:
        return ""
    if len(words) == 1 and not words[0].isascii():
        return f"{kind}:{words[0][:6]}"
    stop = {"to", "that", "on", "the", "a", "an", "use", "using", "for", "with", "we", "our"}
    core = [w for w in words if w not in stop][:3]
    return f"{kind}:{' '.join(core)}"


class DeterministicExtractor:
    """Explicit statements in English and Chinese ("we use X", "always …", "决定 …")."""

    name = "deterministic"

    def extract(self, text: str, *, max_items: int = 20) -> list[Candidate]:
        found: list[Candidate] = []
        seen: set[str] = set()
        for sentence in _SENTENCE_SPLIT.split(text or ""):
            sentence = sentence.strip(" \t-*>#")
            if len(sentence) < 4:
                continue
            for kind, pattern, group in _EN_RULES + _ZH_RULES:
                match = pattern.search(sentence)
                if not match or len(match.group(group).strip()) < 2:
                    continue
                content = sentence[:MAX_CANDIDATE_CHARS]
                key = normalize_key(content)
                if key in seen:
                    break
                seen.add(key)
                found.append(
                    Candidate(
                        kind=kind,
                        content=content,
                        subject_key=_subject(kind, match.group(group)),
                        evidence={"sentence": content},
                    )
                )
                break
            if len(found) >= max_items:
                break
        return found
