"""Secrets are removed from conversation text before anything is extracted (seed H).

Redacted text is what the extractor sees, so no secret can reach a memory or the log.
Order matters: whole blocks (private keys, connection strings) first, then header and
key=value forms, then bare token formats, then (by setting) contact information.
"""

import re
from collections import Counter
from dataclasses import dataclass


def marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


_SECRET_WORDS = (
    r"pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|"
    r"private[_-]?key|client[_-]?secret|credentials?|auth[_-]?key"
)
# (kind, pattern, replacement); a replacement may keep a group (the key name) visible.
_RULES: list[tuple[str, re.Pattern, str]] = [
    (
        "private_key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.S,
        ),
        marker("private_key"),
    ),
    (
        "connection_string",
        # scheme://user:password@host… for databases, brokers and any URL carrying a password.
        re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s/:@'\"]*:[^\s@'\"]+@[^\s'\"<>]+"),
        marker("connection_string"),
    ),
    (
        "connection_string",
        # ADO/ODBC style: Server=…;User Id=…;Password=…;
        re.compile(r"(?i)\b(?:server|data source|host)\s*=[^;\n]+;[^\n]*?\b(?:password|pwd)\s*=[^;\n]*;?"),
        marker("connection_string"),
    ),
    (
        "bearer",
        re.compile(r"(?i)\b(authorization|proxy-authorization)(\s*[:=]\s*)[\"']?[A-Za-z]+\s+[^\s\"',;]+[\"']?"),
        r"\1\2" + marker("bearer"),
    ),
    ("bearer", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9\-._~+/]{8,}=*"), marker("bearer")),
    (
        "password",
        re.compile(
            rf"(?i)\b([\w.-]*(?:{_SECRET_WORDS})[\w.-]*)(\"?\s*(?:[:=]|=>|\bis\b)\s*)([\"']?)[^\s\"',;]{{3,}}\3"
        ),
        r"\1\2" + marker("password"),
    ),
    (
        "password",
        re.compile(r"(密码|口令|密钥|令牌|秘钥)(\s*(?:是|为|[:：=])\s*)[^\s，。；,;]{3,}"),
        r"\1\2" + marker("password"),
    ),
    ("api_key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"), marker("api_key")),
    ("api_key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"), marker("api_key")),
    ("api_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), marker("api_key")),
    ("api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), marker("api_key")),
    ("api_key", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"), marker("api_key")),
    ("api_key", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}"), marker("api_key")),
    ("api_key", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), marker("api_key")),
    ("api_key", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), marker("api_key")),
    ("token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), marker("token")),
]
_CONTACT_RULES: list[tuple[str, re.Pattern, str]] = [
    ("email", re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b"), marker("email")),
    (
        "phone",
        re.compile(r"(?<![\w+])\+\d{1,3}[\s.-]?(?:\(\d{1,4}\)[\s.-]?)?\d{2,4}(?:[\s.-]?\d{2,4}){1,4}(?!\w)"),
        marker("phone"),
    ),
    ("phone", re.compile(r"(?<!\d)1[3-9]\d{9}(?!\d)"), marker("phone")),
    ("phone", re.compile(r"(?<![\w(])\(?\d{3}\)?[\s.-]\d{3}[\s.-]\d{4}(?!\d)"), marker("phone")),
]


@dataclass(frozen=True)
class Redacted:
    text: str
    counts: dict  # kind → number of redactions


def redact(text: str, *, contact_info: bool = True) -> Redacted:
    """Replace secrets (and, when ``contact_info``, emails and phone numbers) by markers."""
    counts: Counter = Counter()
    rules = _RULES + (_CONTACT_RULES if contact_info else [])
    for kind, pattern, replacement in rules:
        text, n = pattern.subn(replacement, text or "")
        if n:
            counts[kind] += n
    return Redacted(text=text, counts=dict(counts))
