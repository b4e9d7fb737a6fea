"""Secrets named by a key, a header or a phrase in English and Chinese: whole blocks (private
keys, connection strings), credential headers, ``key=value`` and "the password is …" forms; the
pieces (key, separator, value) the other-language and command-line rules reuse."""

import re

from memory_app.distill.redaction.rule import Rule, marker

_SECRET_WORDS = (
    r"pass(?:word|wd|phrase)?|pwd|secret|token|api[\s_-]?key|apikey|access[_-]?key|"
    r"private[_-]?key|client[_-]?secret|credentials?|auth[_-]?key"
)
# A key that names a secret: db_password, "apiKey", X-API-Key, AWS_SECRET_ACCESS_KEY, api key,
# spring.datasource.password, secret.key … The key is a whole run of [\w.-] (starting where a
# run starts, taken possessively) in whose first 80 characters a secret word occurs, and whose
# last dotted part names the secret too (or is "key"/"value"), so a file name such as
# "tokens.py" or "password_reset.html" is not a key: linear time even on long or dotted words.
KEY_NAME = (
    rf"(?<![\w.-])(?=[\w.-]{{0,80}}?(?:{_SECRET_WORDS}))(?:[\w-]*+\.)*+"
    rf"(?=[\w-]{{0,80}}?(?:{_SECRET_WORDS})|(?:key|value)\b)[\w-]++(?:\s+key\b)?"
)
KEY = rf"({KEY_NAME})"
# What separates the key from the value: ``=``, ``:``, ``=>``, ``->`` (a JSON key's closing
# quote allowed first), or prose: "is", "is:", "was", "set to", "for staging is",
# "for prod:" …, or only a space when the value looks generated ("the auth token 9f8e…",
# "api key Zm9v…": 16+ characters holding both letters and digits).
SEP = (
    r"(\"?\s*(?:[:=]|=>|->)\s*|"
    r"(?:\s+(?:for|of|on|in|to)\b[^\n.,;:=\"']{0,40}?)?"
    r"(?:\s*[:=]\s*|\s+(?:(?:(?:is|was|has\s+been|got)\s+)?(?:set|changed|reset|updated)\s+to|is|was|are|=)\b"
    r"\s*[:=]?\s*)|"
    r"[^\S\n]+(?=[A-Za-z0-9])(?=[A-Za-z_/+=-]{0,200}\d)(?=[\d_/+=-]{0,200}[A-Za-z])(?=[A-Za-z0-9_/+=-]{16}))"
)
# The value: quoted (spaces, commas and all, up to the closing quote or the end of the line)
# or one unquoted word.
# A reference to a variable ("$DB_PASS", ${TOKEN}) names where the secret is, not the secret.
_VARIABLE = r"(?![\"'`]?\$\{?[A-Za-z_]\w*\}?[\"'`]?(?![^\s,;]))"
VALUE = rf"{_VARIABLE}(?:([\"'`])[^\n]*?(?:\3|$)|“[^”\n]*(?:”|$)|[^\s\"'`,;]{{3,}})"
# Password phrases in other languages ("Passwort ist …", "パスワードは…"). The value after a
# Japanese or Korean phrase is the ASCII run (or 「…」) that follows, so the sentence's own
# particles and verb stay; after a phrase in a European language it is quoted or one word,
# as for the English forms above. ``(?!\[REDACTED:)``: a value an earlier rule removed is not
# counted twice, and a variable is no value.
NOT_DONE = r"(?!\[REDACTED:)" + _VARIABLE
WORD_VALUE = (
    rf"{NOT_DONE}(?:\"[^\"\n]*(?:\"|$)|'[^'\n]*(?:'|$)|«[^»\n]*(?:»|$)|„[^“”\n]*(?:[“”]|$)|[^\s\"'`,;«»]{{3,}})"
)
ASCII_VALUE = rf"{NOT_DONE}(?:「[^」\n]*(?:」|$)|\"[^\"\n]*(?:\"|$)|'[^'\n]*(?:'|$)|[!-~]{{3,}})"
# A value that nothing but a space (or, in scripts written without spaces, nothing at all)
# separates from the word for password: taken only when it looks like one — five or more
# characters holding a letter and a digit or a symbol ("hunter2", "Tr0ub4dor&3"), or, after a
# word in a non-Latin script, any ASCII run of five or more with a digit or a symbol
# ("WiFi密码12345678"). "password reset", "Passwort vergessen" and "パスワードを" stay. A
# reference to a variable ($DB_PASS, %PASS%) is not a value.
# A digit or a symbol, but not a sentence's own "!" or "?" at the end of the word
# ("Wachtwoord vergeten?" is a question, "Sommar!2024" a password).
_SECRETISH = r"(?:\d|[@#$%^&*+=~]|[!?](?=[^\s\"'`,;]))"
_SECRETISH_ASCII = r"(?:\d|[@#$%^&*+=~]|[!?](?=[!-~]))"
LOOSE_VALUE = (
    rf"{NOT_DONE}(?![$%<])(?:\"[^\"\n]{{3,}}(?:\"|$)|'[^'\n]{{3,}}(?:'|$)|"
    rf"(?=[^\s\"'`,;]{{5}})(?=[^\s\"'`,;]{{0,200}}?[^\W\d_])(?=[^\s\"'`,;]{{0,200}}?{_SECRETISH})[^\s\"'`,;]+)"
)
LOOSE_ASCII = rf"{NOT_DONE}(?![$%<])(?=[!-~]{{5}})(?=[!-~]{{0,200}}?{_SECRETISH_ASCII})[!-~]+"


# The keyed rules, first of all (pipeline.py): (kind, pattern, replacement); a replacement may keep a group (the key name) visible.
KEYED_RULES: list[Rule] = [
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
        re.compile(rf"(?im)^(\s*(?:-\s+|export\s+)?{KEY_NAME}\s*[:=]\s*)(?![\"'`])\S[^\n]*"),
        r"\1" + marker("password"),
    ),
    ("password", re.compile(rf"(?i){KEY}{SEP}{VALUE}"), r"\1\2" + marker("password")),
    (
        "password",
        re.compile(
            r"(密码|口令|密钥|令牌|秘钥|私钥|凭证|凭据)(\s*(?:(?:是|为|都是|改为|设为|设置为)\s*[:：=]?|[:：=])\s*)"
            r"(?:“[^”\n]*(?:”|$)|「[^」\n]*(?:」|$)|\"[^\"\n]*(?:\"|$)|'[^'\n]*(?:'|$)|[^\s，。；、,;]{3,})",
            re.M,
        ),
        r"\1\2" + marker("password"),
    ),
    (
        "password",
        # "the wifi password hunter2", "use password Tr0ub4dor&3": no "is", no colon, a value
        # that looks like a password (LOOSE_VALUE).
        re.compile(r"(?i)(?<![\w-])(password|passwd|passphrase|passcode|pwd)([^\S\n]+)" + LOOSE_VALUE),
        r"\1\2" + marker("password"),
    ),
    (
        "password",
        # "I set the password to X", "change your PIN to 4711": the new value after "to".
        re.compile(
            r"(?i)(\b(?:set|sets|setting|changed?|changes|changing|reset|resets|updated?|updates)\s+"
            r"(?:(?:the|my|our|your|his|her|their|its|a|new|admin|root|user|wifi|wi-fi|db|database|vpn|account)\s+){0,3}"
            r"(?:password|passphrase|passcode|pin|pwd)\s+to)(\s+)(?:\d{4,8}(?!\d)|" + LOOSE_VALUE + ")"
        ),
        r"\1\2" + marker("password"),
    ),
    (
        "password",
        # "pw: …" (not a secret word inside other words: "upwork: …" stays), and PINs of four
        # to eight digits ("PIN: 4711", "the PIN is 902817", "PIN码 1234").
        re.compile(
            r"(?i)(?<![\w.-])(pw|pin(?:[ -]?code)?|pin码|pin碼)"
            r"(\s*(?:[:=]|\bis\b|\bwas\b|是|为|為)\s*|\s+(?=\d))(?:\d{4,8}(?!\d)|(?<=[:=] )" + WORD_VALUE + ")"
        ),
        r"\1\2" + marker("password"),
    ),
]
