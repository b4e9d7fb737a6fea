"""Bare tokens in formats of their own: known prefixes (``sk-…``, ``ghp_…``, ``AKIA…``, JWTs,
this service's ``mk_…`` and run tokens …)."""

import re

from memory_app.distill.redaction.rule import Rule, marker

TOKEN_RULES: list[Rule] = [
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
    # Telegram bot tokens: the bot id, a colon and 35 characters (also inside api.telegram.org/bot…).
    ("token", re.compile(r"(?:(?<=bot)|(?<![\w:]))\d{5,12}:[A-Za-z0-9_-]{35}(?![\w-])"), marker("token")),
    # PyPI and TestPyPI upload tokens are macaroons; their base64 always begins with "AgE".
    ("api_key", re.compile(r"\bpypi-AgE[A-Za-z0-9_-]{50,}"), marker("api_key")),
    # Discord: bot tokens (base64 user id . timestamp . HMAC), old "mfa." user tokens, webhooks.
    (
        "token",
        re.compile(r"(?<![\w.-])[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,40}(?![\w-])"),
        marker("token"),
    ),
    ("token", re.compile(r"\bmfa\.[A-Za-z0-9_-]{80,}"), marker("token")),
    (
        "api_key",
        re.compile(r"https://(?:(?:canary|ptb)\.)?discord(?:app)?\.com/api/(?:v\d+/)?webhooks/[A-Za-z0-9/_-]+"),
        marker("api_key"),
    ),
    # Twilio: account SID (AC…) and API key SID (SK…), with the secret when it follows a colon
    # (``-u SK…:secret``).
    ("api_key", re.compile(r"\b(?:AC|SK)[0-9a-fA-F]{32}(?::[A-Za-z0-9]{32})?\b"), marker("api_key")),
    # Google: OAuth access tokens, refresh tokens and OAuth client secrets.
    ("token", re.compile(r"\bya29\.[A-Za-z0-9_-]{20,}"), marker("token")),
    ("token", re.compile(r"(?<![\w/])1//0[A-Za-z0-9_-]{30,}"), marker("token")),
    ("api_key", re.compile(r"\bGOCSPX-[A-Za-z0-9_-]{20,}"), marker("api_key")),
    # Mailchimp, Square, Artifactory and Shopify keys, and Azure storage / service bus keys in
    # connection strings.
    ("api_key", re.compile(r"\b[0-9a-f]{32}-us\d{1,2}\b"), marker("api_key")),
    ("api_key", re.compile(r"\bsq0(?:atp|csp|idp)-[A-Za-z0-9_-]{22,}"), marker("api_key")),
    ("api_key", re.compile(r"\bAKCp[A-Za-z0-9]{20,}"), marker("api_key")),
    ("api_key", re.compile(r"\bshp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}\b"), marker("api_key")),
    (
        "api_key",
        re.compile(r"(?i)\b((?:Account|SharedAccess)Key\s*=\s*)[^;\s\"'`]+"),
        r"\1" + marker("api_key"),
    ),
]
