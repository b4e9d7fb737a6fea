"""Secrets with no key name and no known prefix: long hex, and random-looking base64 runs."""

import math
import re
import string
from collections import Counter
from collections.abc import Callable

from memory_app.distill.redaction.rule import Rule, marker


def _entropy(value: str) -> float:
    """Shannon entropy of the characters of ``value``, in bits per character."""
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in Counter(value).values())


# Each letter or digit becomes its class: u(pper), l(ower), d(igit); anything else stays.
_CLASSES = str.maketrans(
    string.ascii_uppercase + string.ascii_lowercase + string.digits, "u" * 26 + "l" * 26 + "d" * 10
)
_PAIR = re.compile(r"(?=[uld][uld])")
_CHANGE = re.compile(r"(?=l[ud]|ud|d[ul])")


def _class_changes(value: str) -> float:
    """Share of neighbouring letters/digits whose class changes, not counting an upper-case
    letter followed by a lower-case one. A random base64 string changes class at about half of
    its positions; words, CamelCase names and paths (``Jinja2DivFormRenderer``: 0.2) far less."""
    classes = value.translate(_CLASSES)
    pairs = len(_PAIR.findall(classes))
    return len(_CHANGE.findall(classes)) / pairs if pairs else 0.0


def _looks_random(value: str, *, min_changes: float) -> bool:
    """Upper case, lower case and digits, mixed as in random text: the entropy is at least 0.8
    of the most a string of that length can have, and the classes change often enough. Hex
    (git ids, UUIDs, digests) has no upper case and never qualifies."""
    if not (re.search("[A-Z]", value) and re.search("[a-z]", value) and re.search("[0-9]", value)):
        return False
    if _class_changes(value) < min_changes:
        return False
    return _entropy(value) >= 0.8 * math.log2(min(len(value), 64))


def _if_random(kind: str, min_changes: float) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        value = match.group(0)
        return marker(kind) if _looks_random(value, min_changes=min_changes) else value

    return replace


# Bare secrets with no key name and no known prefix, after everything above (so a known format
# keeps its own kind). Measured on ordinary text (bench/redaction_worst_case.py): English and
# Chinese prose, git ids and messages, UUIDs, URLs and file paths are left as they are.
BARE_RULES: list[Rule] = [
    # 64 or more hex digits: a 256-bit key or signing secret (an "0x" Ethereum key too). A
    # SHA-256 digest looks the same and goes as well; a 40-hex git commit id and a UUID are kept.
    ("secret", re.compile(r"(?<![0-9A-Za-z])(?:0x)?[0-9a-fA-F]{64,}+(?![0-9A-Za-z])"), marker("secret")),
    # An AWS secret access key: exactly 40 base64 characters. The looser class-change bound lets
    # the documented example key (which ends in "EXAMPLEKEY") through as a secret too.
    (
        "secret",
        re.compile(r"(?<![A-Za-z0-9/+=_-])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=_-])"),
        _if_random("secret", 0.15),
    ),
    # Any other random-looking run of base64/base64url characters of 20 or more.
    ("secret", re.compile(r"(?<![A-Za-z0-9/+=_-])[A-Za-z0-9/+=_-]{20,}+"), _if_random("secret", 0.25)),
]
