"""Secrets are removed from conversation text before anything is extracted (docs/auto-memory.md).

Redacted text is what the extractor sees, so no secret can reach a memory or the log.
Order matters: whole blocks (private keys, connection strings) first, then header and
key=value forms, then bare token formats, then (by setting) contact information.
"""

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass


def marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


_SECRET_WORDS = (
    r"pass(?:word|wd|phrase)?|pwd|secret|token|api[\s_-]?key|apikey|access[_-]?key|"
    r"private[_-]?key|client[_-]?secret|credentials?|auth[_-]?key"
)
# A key that names a secret: db_password, "apiKey", X-API-Key, AWS_SECRET_ACCESS_KEY, api key …
# The key is a whole run of [\w.-] (starting where a run starts, taken possessively) in whose
# first 80 characters a secret word occurs: linear time even on long or dotted words.
_KEY_NAME = rf"(?<![\w.-])(?=[\w.-]{{0,80}}?(?:{_SECRET_WORDS}))[\w.-]++(?:\s+key\b)?"
_KEY = rf"({_KEY_NAME})"
# What separates the key from the value: ``=``, ``:``, ``=>``, ``->`` (a JSON key's closing
# quote allowed first), or prose: "is", "is:", "was", "set to", "for staging is",
# "for prod:" …
_SEP = (
    r"(\"?\s*(?:[:=]|=>|->)\s*|"
    r"(?:\s+(?:for|of|on|in|to)\b[^\n.,;:=\"']{0,40}?)?"
    r"(?:\s*[:=]\s*|\s+(?:is|was|are|=|set\s+to|changed\s+to)\b\s*[:=]?\s*))"
)
# The value: quoted (spaces, commas and all, up to the closing quote or the end of the line)
# or one unquoted word.
_VALUE = r"(?:([\"'`])[^\n]*?(?:\3|$)|“[^”\n]*(?:”|$)|[^\s\"'`,;]{3,})"
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
        re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s/:@'\"]{0,256}+:[^\s@'\"]{1,256}+@[^\s'\"<>]+"),
        marker("connection_string"),
    ),
    (
        "connection_string",
        # ADO/ODBC style: Server=…;User Id=…;Password=…;
        re.compile(r"(?i)\b(?:server|data source|host)\s*=[^;\n]{1,200}+;[^\n]{0,500}?\b(?:password|pwd)\s*=[^;\n]*;?"),
        marker("connection_string"),
    ),
    (
        "bearer",
        # Credential headers: the whole value (scheme and credentials; a cookie to the line end).
        re.compile(r"(?i)\b((?:set-)?cookie)(\s*:\s*)[^\n]+"),
        r"\1\2" + marker("bearer"),
    ),
    (
        "bearer",
        re.compile(
            r"(?i)\b(authorization|proxy-authorization|x-api-key|x-auth-token|api-key)(\"?\s*[:=]\s*)"
            r"[\"']?(?:[A-Za-z]+\s+)?[^\s\"',;]+[\"']?"
        ),
        r"\1\2" + marker("bearer"),
    ),
    ("bearer", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9\-._~+/]{8,}=*"), marker("bearer")),
    (
        "password",
        # A secret in a URL query: ?token=…, &api_key=…, &sig=… (signed URLs).
        re.compile(
            r"(?i)([?&;](?=[\w.-]{0,80}?(?:token|key|secret|sig|signature|password|passwd|pwd|auth|credential))"
            r"[\w.-]++=)"
            r"[^&#\s\"'<>]+"
        ),
        r"\1" + marker("password"),
    ),
    (
        "password",
        # A configuration line (YAML, .env, INI) whose key names a secret: the rest of the line.
        re.compile(rf"(?im)^(\s*(?:-\s+|export\s+)?{_KEY_NAME}\s*[:=]\s*)(?![\"'`])\S[^\n]*"),
        r"\1" + marker("password"),
    ),
    ("password", re.compile(rf"(?i){_KEY}{_SEP}{_VALUE}"), r"\1\2" + marker("password")),
    (
        "password",
        re.compile(
            r"(密码|口令|密钥|令牌|秘钥|私钥|凭证|凭据)(\s*(?:(?:是|为|都是|改为|设为|设置为)\s*[:：=]?|[:：=])\s*)"
            r"(?:“[^”\n]*(?:”|$)|「[^」\n]*(?:」|$)|\"[^\"\n]*(?:\"|$)|'[^'\n]*(?:'|$)|[^\s，。；、,;]{3,})",
            re.M,
        ),
        r"\1\2" + marker("password"),
    ),
    ("api_key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"), marker("api_key")),
    ("api_key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"), marker("api_key")),
    ("api_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), marker("api_key")),
    ("api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), marker("api_key")),
    ("api_key", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"), marker("api_key")),
    ("api_key", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}"), marker("api_key")),
    ("api_key", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), marker("api_key")),
    ("api_key", re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{10,}"), marker("api_key")),
    ("api_key", re.compile(r"\bxapp-[A-Za-z0-9-]{10,}"), marker("api_key")),
    ("api_key", re.compile(r"\bnpm_[A-Za-z0-9]{30,}"), marker("api_key")),
    ("api_key", re.compile(r"\bhf_[A-Za-z0-9]{30,}"), marker("api_key")),
    ("api_key", re.compile(r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"), marker("api_key")),
    (
        "api_key",
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+"),
        marker("api_key"),
    ),
    ("token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), marker("token")),
    # This service's own credentials: API keys (``mk_…``) and run tokens (``run_<id>.<gen>.<secret>``).
    ("api_key", re.compile(r"\bmk_[A-Za-z0-9_-]{20,}"), marker("api_key")),
    ("token", re.compile(r"\brun_[0-9a-z]{26}\.\d+\.[A-Za-z0-9_-]{20,}"), marker("token")),
]
_INVISIBLE = re.compile("[\u200b-\u200f\u2060-\u2064\ufeff\u00ad]")
_CONTACT_RULES: list[tuple[str, re.Pattern, str]] = [
    ("email", re.compile(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]++@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b"), marker("email")),
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
    # Compatibility forms (full-width letters, ligatures) become plain ones first, so
    # "Ｐａｓｓｗｏｒｄ: …" is a password like any other. Zero-width characters go too.
    original = text or ""
    text = _INVISIBLE.sub("", unicodedata.normalize("NFKC", original))
    rules = _RULES + (_CONTACT_RULES if contact_info else [])
    for kind, pattern, replacement in rules:
        text, n = pattern.subn(replacement, text or "")
        if n:
            counts[kind] += n
    if not counts:
        return Redacted(text=original, counts={})  # nothing found: the text stays as it was
    return Redacted(text=text, counts=dict(counts))
