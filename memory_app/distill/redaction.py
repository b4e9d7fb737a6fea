"""Secrets are removed from conversation text before anything is extracted (docs/auto-memory.md).

Redacted text is what the extractor sees, so no secret can reach a memory or the log.
Order matters: whole blocks (private keys, connection strings) first, then header and
key=value forms (in English, Chinese and other languages), command-line credentials, payment
card numbers, then bare token formats, then (by setting) contact information.
"""

import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass


def marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


_SECRET_WORDS = (
    r"pass(?:word|wd|phrase)?|pwd|secret|token|api[\s_-]?key|apikey|access[_-]?key|"
    r"private[_-]?key|client[_-]?secret|credentials?|auth[_-]?key"
)
# A key that names a secret: db_password, "apiKey", X-API-Key, AWS_SECRET_ACCESS_KEY, api key,
# spring.datasource.password, secret.key … The key is a whole run of [\w.-] (starting where a
# run starts, taken possessively) in whose first 80 characters a secret word occurs, and whose
# last dotted part names the secret too (or is "key"/"value"), so a file name such as
# "tokens.py" or "password_reset.html" is not a key: linear time even on long or dotted words.
_KEY_NAME = (
    rf"(?<![\w.-])(?=[\w.-]{{0,80}}?(?:{_SECRET_WORDS}))(?:[\w-]*+\.)*+"
    rf"(?=[\w-]{{0,80}}?(?:{_SECRET_WORDS})|(?:key|value)\b)[\w-]++(?:\s+key\b)?"
)
_KEY = rf"({_KEY_NAME})"
# What separates the key from the value: ``=``, ``:``, ``=>``, ``->`` (a JSON key's closing
# quote allowed first), or prose: "is", "is:", "was", "set to", "for staging is",
# "for prod:" …, or only a space when the value looks generated ("the auth token 9f8e…",
# "api key Zm9v…": 16+ characters holding both letters and digits).
_SEP = (
    r"(\"?\s*(?:[:=]|=>|->)\s*|"
    r"(?:\s+(?:for|of|on|in|to)\b[^\n.,;:=\"']{0,40}?)?"
    r"(?:\s*[:=]\s*|\s+(?:is|was|are|=|set\s+to|changed\s+to)\b\s*[:=]?\s*)|"
    r"[^\S\n]+(?=[A-Za-z0-9])(?=[A-Za-z_/+=-]{0,200}\d)(?=[\d_/+=-]{0,200}[A-Za-z])(?=[A-Za-z0-9_/+=-]{16}))"
)
# The value: quoted (spaces, commas and all, up to the closing quote or the end of the line)
# or one unquoted word.
_VALUE = r"(?:([\"'`])[^\n]*?(?:\3|$)|“[^”\n]*(?:”|$)|[^\s\"'`,;]{3,})"
# Password phrases in other languages ("Passwort ist …", "パスワードは…"). The value after a
# Japanese or Korean phrase is the ASCII run (or 「…」) that follows, so the sentence's own
# particles and verb stay; after a phrase in a European language it is quoted or one word,
# as for the English forms above. ``(?!\[REDACTED:)``: a value an earlier rule removed is not
# counted twice.
_NOT_DONE = r"(?!\[REDACTED:)"
_WORD_VALUE = (
    rf"{_NOT_DONE}(?:\"[^\"\n]*(?:\"|$)|'[^'\n]*(?:'|$)|«[^»\n]*(?:»|$)|„[^“”\n]*(?:[“”]|$)|[^\s\"'`,;«»]{{3,}})"
)
_ASCII_VALUE = rf"{_NOT_DONE}(?:「[^」\n]*(?:」|$)|\"[^\"\n]*(?:\"|$)|'[^'\n]*(?:'|$)|[!-~]{{3,}})"
_PHRASE_RULES: list[tuple[str, re.Pattern, str]] = [
    (
        "password",
        # Japanese and Korean: パスワードは…, 暗証番号：…, 비밀번호는 …, 패스워드: …
        re.compile(
            rf"(パスワード|暗証番号|パスコード|비밀번호|패스워드)(\s*(?:は|が|는|은|가|이|[:=])\s*[:=]?\s*){_ASCII_VALUE}"
        ),
        r"\1\2" + marker("password"),
    ),
    (
        "password",
        # Spanish, French, German: "la contraseña (de X) es …", "le mot de passe est …",
        # "das Passwort (für X) ist/lautet …", or the word and a colon.
        re.compile(
            r"(?i)\b(contrase[ñn]as?|clave de acceso|mots? de passe|passw[oö]rt(?:er)?|kennw[oö]rt(?:er)?)"
            r"((?:\s+(?:de|del|para|en|du|des|pour|sur|f[üu]r|von|vom|des|der|zum|zur)\b[^\n.,;:=\"']{0,40}?)?"
            r"(?:\s*[:=]\s*|\s+(?:es|era|est|[ée]tait|ist|lautet|war)\b\s*[:=]?\s*))" + _WORD_VALUE
        ),
        r"\1\2" + marker("password"),
    ),
    (
        "password",
        # Russian: "пароль: …", "пароль от сервера — …", "пароль это …", or only a space when
        # the value looks generated ("мой пароль Hunter2Secret").
        re.compile(
            r"(?i)(?<!\w)(парол[ьяюе]м?)"
            r"((?:\s+(?:от|для|к|на)\b[^\n.,;:=—\"']{0,40}?)?"
            r"(?:\s*[:=—–]\s*|\s+(?:это|был|будет)\b\s*[:=—–]?\s*)|"
            r"[^\S\n]+(?=[A-Za-z0-9])(?=[A-Za-z_/+=-]{0,200}\d)(?=[\d_/+=-]{0,200}[A-Za-z]))" + _WORD_VALUE
        ),
        r"\1\2" + marker("password"),
    ),
]
# Credentials on a command line: the password of ``mysql -p…`` (attached), ``sshpass -p``,
# ``docker login -p/--password`` and ``curl -u user:password``. Only after the command's name
# on the same line (at most a few hundred characters, no pipe or ``;`` between), so ``ls -p``,
# ``grep -u`` or ``docker run -u 1000:1000`` stay as they are.
_CLI_VALUE = rf"{_NOT_DONE}(?:\"[^\"\n]*(?:\"|$)|'[^'\n]*(?:'|$)|[^\s\"']+)"
_CLI_RULES: list[tuple[str, re.Pattern, str]] = [
    (
        "password",
        re.compile(
            r"(\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlshow|mysqlpump|mariadb|mariadb-dump)"
            r"\b[^\n|;&]{0,300}?\s-p)(?=[^\s-])" + _CLI_VALUE
        ),
        r"\1" + marker("password"),
    ),
    (
        "password",
        re.compile(r"(\bsshpass\b[^\n|;&]{0,300}?\s-p[^\S\n]*)(?=[^\s-])" + _CLI_VALUE),
        r"\1" + marker("password"),
    ),
    (
        "password",
        re.compile(
            r"(\b(?:docker|podman|nerdctl|buildah|skopeo|helm\s+registry|oras)\s+login\b[^\n|;&]{0,300}?"
            r"\s(?:-p|--password)(?:[^\S\n]+|=))(?=[^\s-])" + _CLI_VALUE
        ),
        r"\1" + marker("password"),
    ),
    (
        "password",
        re.compile(
            r"(\b(?:curl|wget|http|https|xh)\b[^\n|;&]{0,300}?\s(?:-u|--user|-a|--auth)(?:[^\S\n]*|=)"
            r"[\"']?[^\s:\"'@]{1,128}:)" + _NOT_DONE + r"[^\s\"']+"
        ),
        r"\1" + marker("password"),
    ),
]
# A payment card number: 13 to 19 digits, bare or in the groups cards print (4-4-4-4[-3|4],
# 4-6-5, 4-6-4) with one kind of separator, starting as issued cards do (2–6) and passing the
# Luhn check. Order numbers, ISBNs and phone numbers fail one of these.
_CARD = re.compile(
    r"(?<![\w.,/+-])(?:[2-6]\d{12,18}|[2-6]\d{3}(?:[ -]\d{4}){3}(?:[ -]\d{3,4})?|[2-6]\d{3}[ -]\d{6}[ -]\d{4,5})"
    r"(?![\w-]|[.,]\d|[ -]\d)"
)


def _luhn(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char) * (2 if index % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


def _if_card(match: re.Match) -> str:
    value = match.group(0)
    if len(set(re.findall(r"[ -]", value))) > 1:
        return value
    digits = re.sub(r"[ -]", "", value)
    return marker("card") if 13 <= len(digits) <= 19 and _luhn(digits) else value


# (kind, pattern, replacement); a replacement may keep a group (the key name) visible.
_RULES: list[tuple[str, re.Pattern, str | Callable[[re.Match], str]]] = [
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
    *_PHRASE_RULES,
    *_CLI_RULES,
    ("card", _CARD, _if_card),
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


def _if_random(kind: str, min_changes: float):
    def replace(match: re.Match) -> str:
        value = match.group(0)
        return marker(kind) if _looks_random(value, min_changes=min_changes) else value

    return replace


# Bare secrets with no key name and no known prefix, after everything above (so a known format
# keeps its own kind). Measured on ordinary text (bench/redaction_worst_case.py): English and
# Chinese prose, git ids and messages, UUIDs, URLs and file paths are left as they are.
_BARE_RULES: list[tuple[str, re.Pattern, str | Callable[[re.Match], str]]] = [
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
    rules = _RULES + (_CONTACT_RULES if contact_info else []) + _BARE_RULES
    for kind, pattern, replacement in rules:
        text, n = _substitute(pattern, replacement, text)
        if n:
            counts[kind] += n
    if not counts:
        return Redacted(text=original, counts={})  # nothing found: the text stays as it was
    return Redacted(text=text, counts=dict(counts))


def _substitute(pattern: re.Pattern, replacement, text: str) -> tuple[str, int]:
    """``pattern.subn``, where a callable replacement may decline a match by returning it as is
    (a declined match is not counted)."""
    if not callable(replacement):
        return pattern.subn(replacement, text)
    replaced = 0

    def replace(match: re.Match) -> str:
        nonlocal replaced
        result = replacement(match)
        replaced += result != match.group(0)
        return result

    return pattern.sub(replace, text), replaced
