"""Credentials on a command line: ``mysql -p…``, ``curl -u user:password``, ``--password …``,
``htpasswd -b``, a token piped into ``--with-token``."""

import re

from memory_app.distill.redaction.keyed import NOT_DONE
from memory_app.distill.redaction.rule import Rule, gated, marker

# Credentials on a command line: the password of ``mysql -p…`` (attached), ``sshpass -p``,
# ``docker login -p/--password`` and ``curl -u user:password``. Only after the command's name
# on the same line (at most a few hundred characters, no pipe or ``;`` between), so ``ls -p``,
# ``grep -u`` or ``docker run -u 1000:1000`` stay as they are.
_CLI_VALUE = rf"{NOT_DONE}(?:\"[^\"\n]*(?:\"|$)|'[^'\n]*(?:'|$)|[^\s\"']+)"
_CLI_RULES: list[Rule] = [
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
            r"[\"']?[^\s:\"'@]{1,128}:)" + NOT_DONE + r"[^\s\"']+"
        ),
        r"\1" + marker("password"),
    ),
    # Any long option naming a secret, with its value after a space or "=": --password VALUE,
    # --db-password=…, --api-key …, --client-secret …, --token …. An option that names a file
    # or stdin (--password-file, --token-stdin) is another word; a variable ($PASS) is no value.
    (
        "password",
        re.compile(
            r"(?<![\w-])(--(?!(?:with|no|ask|prompt|read|show|use)-)(?:[A-Za-z0-9]+-){0,4}"
            r"(?:password|passwd|pass|pwd|passphrase|secret|token|api-?key|apikey|access-key|secret-key|auth-key|"
            r"storepass|keypass)(?:[^\S\n]+|=))(?![\"']?[-$%<])" + _CLI_VALUE
        ),
        r"\1" + marker("password"),
    ),
    # Short options that take a password in a few common tools, after the tool's name on the line.
    (
        "password",
        re.compile(
            r"(\b(?:redis-cli\b[^\n|;&]{0,300}?\s-a|"
            r"(?:mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport)\b[^\n|;&]{0,300}?\s-p|"
            r"(?:sqlcmd|bcp)\b[^\n|;&]{0,300}?\s-P|"
            r"ldap(?:search|modify|add|delete|whoami|passwd|compare)\b[^\n|;&]{0,300}?\s-w|"
            r"(?:zip|unzip|zipcloak)\b[^\n|;&]{0,300}?\s-P|"
            r"az\s+login\b[^\n|;&]{0,300}?\s-p|"
            r"keytool\b[^\n|;&]{0,300}?\s-(?:storepass|keypass|srcstorepass|deststorepass|srckeypass|destkeypass))"
            r"[^\S\n]+)(?![-$%<])" + _CLI_VALUE
        ),
        r"\1" + marker("password"),
    ),
    (
        "password",
        # 7-Zip's -pPASSWORD, OpenSSL's -passin/-passout pass:PASSWORD, smbclient's -U user%PASSWORD.
        re.compile(
            r"(\b7za?\b[^\n|;&]{0,300}?\s-p(?=[^\s-])|"
            r"\s-pass(?:in|out)[^\S\n]+pass:|"
            r"\bsmbclient\b[^\n|;&]{0,300}?\s(?:-U|--user)(?:[^\S\n]+|=)[^\s%]{1,128}%)" + _CLI_VALUE
        ),
        r"\1" + marker("password"),
    ),
    # htpasswd -b FILE USER PASSWORD (-nb USER PASSWORD): the password is an argument.
    ("password", re.compile(r"\bhtpasswd\b[^\n|;&<>]{0,300}"), lambda match: _htpasswd(match.group(0))),
    # A token or password piped into a login that reads it from stdin:
    # echo TOKEN | gh auth login --with-token, printf '%s' PASS | docker login --password-stdin,
    # and the same with a here-string (--with-token <<< TOKEN).
    (
        "password",
        re.compile(
            r"(\b(?:echo|printf)(?:[^\S\n]+-[neE]{1,3})*[^\S\n]+(?:[\"']%s(?:\\n)?[\"'][^\S\n]+)?)"
            r"(?![\"']?[$%])" + _CLI_VALUE + r"(?=[^\S\n]*\|[^\n|;&]{0,200}?"
            r"--(?:with-token|password-stdin|token-stdin|passphrase-stdin|stdin)\b)"
        ),
        r"\1" + marker("password"),
    ),
    (
        "password",
        re.compile(r"(--(?:with-token|password-stdin|token-stdin)[^\S\n]*<<<[^\S\n]*)(?![\"']?[$%])" + _CLI_VALUE),
        r"\1" + marker("password"),
    ),
]


def _htpasswd(command: str) -> str:
    """The password argument of ``htpasswd -b…`` removed (the last of FILE USER PASSWORD, or of
    USER PASSWORD with ``-n``); anything else as it was."""
    parts = re.findall(r"\"[^\"]*\"?|'[^']*'?|\S+|\s+", command)
    words = [(i, part) for i, part in enumerate(parts) if not part.isspace()]
    flags = "".join(part[1:] for _, part in words[1:] if part.startswith("-") and not part.startswith("--"))
    if "b" not in flags:
        return command
    positional = [(i, part) for i, part in words[1:] if not part.startswith("-") and not part.isdigit()]
    wanted = 2 if "n" in flags else 3
    if len(positional) < wanted or positional[wanted - 1][1].startswith("[REDACTED:"):
        return command
    parts[positional[wanted - 1][0]] = marker("password")
    return "".join(parts)


# One scan decides whether the rules can match at all: they need one of their commands (or an
# option).
_CLI_GATE = re.compile(
    r"(?i)--|htpasswd|redis-cli|mongo|sqlcmd|bcp|ldap|zip|7z|az\s|keytool|smbclient|-pass|echo|printf|"
    r"mysql|mariadb|sshpass|login|curl|wget|https?\b|xh\b"
)
COMMAND_LINE_RULES = gated(_CLI_RULES, _CLI_GATE)
