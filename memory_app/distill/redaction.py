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

from memory_app.distill import identifiers as ids


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
    r"(?:\s*[:=]\s*|\s+(?:(?:(?:is|was|has\s+been|got)\s+)?(?:set|changed|reset|updated)\s+to|is|was|are|=)\b"
    r"\s*[:=]?\s*)|"
    r"[^\S\n]+(?=[A-Za-z0-9])(?=[A-Za-z_/+=-]{0,200}\d)(?=[\d_/+=-]{0,200}[A-Za-z])(?=[A-Za-z0-9_/+=-]{16}))"
)
# The value: quoted (spaces, commas and all, up to the closing quote or the end of the line)
# or one unquoted word.
# A reference to a variable ("$DB_PASS", ${TOKEN}) names where the secret is, not the secret.
_VARIABLE = r"(?![\"'`]?\$\{?[A-Za-z_]\w*\}?[\"'`]?(?![^\s,;]))"
_VALUE = rf"{_VARIABLE}(?:([\"'`])[^\n]*?(?:\3|$)|“[^”\n]*(?:”|$)|[^\s\"'`,;]{{3,}})"
# Password phrases in other languages ("Passwort ist …", "パスワードは…"). The value after a
# Japanese or Korean phrase is the ASCII run (or 「…」) that follows, so the sentence's own
# particles and verb stay; after a phrase in a European language it is quoted or one word,
# as for the English forms above. ``(?!\[REDACTED:)``: a value an earlier rule removed is not
# counted twice, and a variable is no value.
_NOT_DONE = r"(?!\[REDACTED:)" + _VARIABLE
_WORD_VALUE = (
    rf"{_NOT_DONE}(?:\"[^\"\n]*(?:\"|$)|'[^'\n]*(?:'|$)|«[^»\n]*(?:»|$)|„[^“”\n]*(?:[“”]|$)|[^\s\"'`,;«»]{{3,}})"
)
_ASCII_VALUE = rf"{_NOT_DONE}(?:「[^」\n]*(?:」|$)|\"[^\"\n]*(?:\"|$)|'[^'\n]*(?:'|$)|[!-~]{{3,}})"
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
_LOOSE_VALUE = (
    rf"{_NOT_DONE}(?![$%<])(?:\"[^\"\n]{{3,}}(?:\"|$)|'[^'\n]{{3,}}(?:'|$)|"
    rf"(?=[^\s\"'`,;]{{5}})(?=[^\s\"'`,;]{{0,200}}?[^\W\d_])(?=[^\s\"'`,;]{{0,200}}?{_SECRETISH})[^\s\"'`,;]+)"
)
_LOOSE_ASCII = rf"{_NOT_DONE}(?![$%<])(?=[!-~]{{5}})(?=[!-~]{{0,200}}?{_SECRETISH_ASCII})[!-~]+"


def _spaced_phrase_rules(words: str, preps: str, copulas: str) -> list[re.Pattern]:
    """A language written with spaces: the word for password, perhaps "of/for …", then a colon,
    ``=`` or the language's "is", then the value (quoted or one word); or the word, a space and
    a value that looks like a password."""
    return [
        re.compile(
            rf"(?i)(?<!\w)({words})"
            rf"((?:\s+(?:{preps})(?!\w)[^\n.,;:=\"']{{0,40}}?|(?:[^\S\n]+[^\s:=,.;?!\"'\[\]]{{1,20}}){{1,2}}(?=\s*[:=]))?"
            rf"(?:\s*[:=]\s*|\s+(?:{copulas})(?!\w)\s*[:=]?\s*))" + _WORD_VALUE
        ),
        re.compile(rf"(?i)(?<!\w)({words})([^\S\n]+)" + _LOOSE_VALUE),
    ]


def _unspaced_phrase_rules(words: str, copulas: str) -> list[re.Pattern]:
    """A script whose values are ASCII runs in other text (Chinese, Arabic, Hindi, Thai …): the
    word, then a colon or "is" and any ASCII value, or the ASCII value right after the word when
    it looks like a password ("मेरा पासवर्ड Abc12345 है")."""
    return [
        re.compile(rf"({words})(\s*(?:(?:{copulas})\s*[:：=]?|[:：=])\s*)" + _ASCII_VALUE),
        re.compile(rf"({words})(\s*)" + _LOOSE_ASCII),
    ]


# (words for password, words for "of/for", words for "is") of languages written with spaces;
# English, Spanish, French, German and Russian have rules of their own above and below.
_SPACED_PHRASES = [
    # Italian
    (r"password|parola d'ordine|parola chiave|codice di accesso", r"di|del|della|dello|dell'|per|su", r"è|e'|era|sarà"),
    # Portuguese
    (r"senhas?|palavra[- ]passe", r"de|do|da|dos|das|para|no|na", r"é|e|era|será|fica"),
    # Dutch
    (r"wachtwoord|paswoord", r"van|voor|bij|op", r"is|was|luidt|wordt"),
    # Polish
    (r"hasło|hasła|hasłem|haslo", r"do|dla|od|na", r"to|jest|brzmi|było"),
    # Turkish ("şifre: …", "Wi-Fi şifresi Abc123", "şifre olarak …")
    (r"şifre(?:si|m|miz|niz)?|parola(?:sı|m|mız)?|sifre", r"için", r"olarak|şudur|budur"),
    # Swedish, Danish and Norwegian
    (r"lösenord(?:et)?|losenord|adgangskode(?:n)?|passord(?:et)?|kodeord(?:et)?", r"till|för|til|for|på", r"är|var|er"),
    # Finnish
    (r"salasana(?:n|ni|mme)?", r"", r"on|oli"),
    # Czech and Slovak
    (r"heslo|hesla", r"k|do|pro|na|ku", r"je|bylo|zní"),
    # Romanian
    (r"parol[aă]", r"de|pentru|la", r"este|e|era"),
    # Hungarian
    (r"jelszó|jelszava(?:m|nk)?|jelszo", r"", r"volt"),
    # Indonesian and Malay
    (r"kata sandi|kata laluan|sandi", r"untuk|dari|ke", r"adalah|ialah|yaitu|yakni|nya"),
    # Vietnamese
    (r"mật khẩu|mat khau", r"của|cho|vào", r"là|la"),
    # Greek
    (r"κωδικός(?: πρόσβασης)?|συνθηματικό", r"για|του|της", r"είναι|ήταν"),
]
_SPACED_PHRASES = [(w, p or r"(?!)", c) for w, p, c in _SPACED_PHRASES]
# Scripts whose values are ASCII runs: Chinese (simplified and traditional), Arabic, Persian,
# Hebrew, Hindi, Bengali, Thai.
_UNSPACED_PHRASES = [
    (
        r"密码|密碼|口令|密钥|密鑰|金鑰|私鑰|令牌|權杖|憑證|憑據|通行碼",
        r"是|為|为|都是|改為|改为|設為|设为|設定為|设置为|設置為",
    ),
    (r"كلمة المرور|كلمة السر|كلمة مرور|رمز المرور|الرقم السري", r"هي|هو|الخاصة بي هي"),
    (r"رمز عبور|گذرواژه|کلمه عبور", r"است|برابر|هست"),
    (r"סיסמה|סיסמא|הסיסמה|הסיסמא", r"היא|הוא|זה"),
    (r"पासवर्ड|कूटशब्द", r"है|हैं|था"),
    (r"পাসওয়ার্ড", r"হল|হলো"),
    (r"รหัสผ่าน", r"คือ|เป็น"),
    (r"パスワード|暗証番号|パスコード|비밀번호|패스워드", r"は|が|는|은|가|이"),
]


@dataclass(frozen=True)
class Gated:
    """A rule's pattern that runs only when each of ``gates`` finds something in the text as it
    came in (once per ``redact`` call, shared by the rules that name the same gate): the phrase
    rules of twenty languages cost one scan for a text that names no password at all."""

    pattern: re.Pattern
    gates: tuple[re.Pattern, ...]


def _gate(words: str) -> re.Pattern:
    return re.compile(rf"(?i){words}")


def _gate_words(words: str) -> str:
    """What opens a language's gate: its words for password — but the Italian "password" is also
    the English word, which the English rules handle: only its Italian "of/for" and "is" (or a
    colon one or two words on) open the Italian rules."""
    if words.startswith("password|"):
        return (
            words.removeprefix("password|")
            + r"|password(?:\s+(?:di|del|della|dello|dell'|per|su|è|e'|era|sarà)(?!\w)|(?:\s+[^\s:=]{1,20}){1,2}\s*[:=])"
        )
    return words


_ALL_PHRASE_WORDS = _gate(
    "|".join(
        [_gate_words(words) for words, _, _ in _SPACED_PHRASES]
        + [words for words, _ in _UNSPACED_PHRASES]
        + [r"contrase|clave de acceso|mots? de passe|passw|kennw|парол"]
    )
)

Rule = tuple[str, "re.Pattern | Gated", "str | Callable[[re.Match], str]"]


def _in_language(words: str, patterns: list[re.Pattern]) -> list[Rule]:
    gate = _gate(_gate_words(words))
    return [
        ("password", Gated(pattern, (_ALL_PHRASE_WORDS, gate)), r"\1\2" + marker("password")) for pattern in patterns
    ]


_PHRASE_RULES: list[Rule] = [
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
        # Russian and Ukrainian: "пароль: …", "пароль от сервера — …", "пароль это …", or only a
        # space when the value looks generated ("мой пароль Hunter2Secret").
        re.compile(
            r"(?i)(?<!\w)(парол[ьяюе]м?)"
            r"((?:\s+(?:от|для|к|на|до|від)\b[^\n.,;:=—\"']{0,40}?)?"
            r"(?:\s*[:=—–]\s*|\s+(?:это|был|будет|це|був|буде)\b\s*[:=—–]?\s*)|"
            r"[^\S\n]+(?=[A-Za-z0-9])(?=[A-Za-z_/+=-]{0,200}\d)(?=[\d_/+=-]{0,200}[A-Za-z]))" + _WORD_VALUE
        ),
        r"\1\2" + marker("password"),
    ),
    (
        "password",
        re.compile(r"(?i)(?<!\w)(парол[ьяюе]м?)([^\S\n]+)" + _LOOSE_VALUE),
        r"\1\2" + marker("password"),
    ),
    *(
        rule
        for words, preps, copulas in _SPACED_PHRASES
        for rule in _in_language(words, _spaced_phrase_rules(words, preps, copulas))
    ),
    *(
        rule
        for words, copulas in _UNSPACED_PHRASES
        for rule in _in_language(words, _unspaced_phrase_rules(words, copulas))
    ),
]
# Credentials on a command line: the password of ``mysql -p…`` (attached), ``sshpass -p``,
# ``docker login -p/--password`` and ``curl -u user:password``. Only after the command's name
# on the same line (at most a few hundred characters, no pipe or ``;`` between), so ``ls -p``,
# ``grep -u`` or ``docker run -u 1000:1000`` stay as they are.
_CLI_VALUE = rf"{_NOT_DONE}(?:\"[^\"\n]*(?:\"|$)|'[^'\n]*(?:'|$)|[^\s\"']+)"
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
            r"[\"']?[^\s:\"'@]{1,128}:)" + _NOT_DONE + r"[^\s\"']+"
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


def _checked(test: Callable[[re.Match], bool], kind: str) -> Callable[[re.Match], str]:
    """A replacement that removes the match when ``test`` (its check digits) confirms it."""
    return lambda match: marker(kind) if test(match) else match.group(0)


def _named(test: Callable[[str], bool], kind: str) -> Callable[[re.Match], str]:
    """For ``(name)(gap)(number)`` matches: the number removed when ``test`` confirms it."""
    return lambda m: m.group(1) + m.group(2) + marker(kind) if test(m.group(3)) else m.group(0)


# One scan each decides whether a group of rules can match at all: the command-line rules need
# one of their commands (or an option), the identifiers two digits in a row.
_CLI_GATE = re.compile(
    r"(?i)--|htpasswd|redis-cli|mongo|sqlcmd|bcp|ldap|zip|7z|az\s|keytool|smbclient|-pass|echo|printf|"
    r"mysql|mariadb|sshpass|login|curl|wget|https?\b|xh\b"
)
_DIGITS_GATE = re.compile(r"\d\d")


def _gated(rules: list[Rule], gate: re.Pattern) -> list[Rule]:
    return [
        (kind, Gated(rule.pattern, (gate, *rule.gates)) if isinstance(rule, Gated) else Gated(rule, (gate,)), repl)
        for kind, rule, repl in rules
    ]


# Account and identity numbers, confirmed by their check digits where the format has them
# (memory_app/distill/identifiers.py).
_ID_RULES: list[Rule] = [
    ("iban", ids.IBAN, lambda match: ids.replace_iban(match, marker("iban"))),
    ("national_id", ids.CN_RESIDENT_ID, _checked(ids.cn_resident_id_confirmed, "national_id")),
    ("national_id", ids.CPF, _checked(ids.cpf_confirmed, "national_id")),
    ("national_id", ids.CPF_NAMED, _named(ids.cpf_ok, "national_id")),
    ("national_id", ids.AADHAAR, _checked(ids.aadhaar_confirmed, "national_id")),
    ("national_id", ids.AADHAAR_NAMED, _named(ids.verhoeff_ok, "national_id")),
    ("national_id", ids.DNI, _checked(ids.dni_confirmed, "national_id")),
    ("national_id", ids.SSN, lambda match: marker("national_id")),
    ("national_id", ids.SSN_NAMED, lambda m: m.group(1) + m.group(2) + marker("national_id")),
    ("national_id", ids.NINO, lambda match: marker("national_id")),
]
# A payment card number: 13 to 19 digits, bare or in the groups cards print (4-4-4-4[-3|4],
# 4-6-5, 4-6-4) with one kind of separator, starting as issued cards do (2–6) and passing the
# Luhn check. Order numbers, ISBNs and phone numbers fail one of these.
_CARD = re.compile(
    r"(?<![A-Za-z0-9_.,/+-])(?<!\d[ -])(?:[2-6]\d{12,18}|[2-6]\d{3}(?:[ -]\d{4}){3}(?:[ -]\d{3,4})?|[2-6]\d{3}[ -]\d{6}[ -]\d{4,5})"
    r"(?![A-Za-z0-9_-]|[.,]\d|[ -]\d)"
)
# Issuer prefixes and the lengths their cards have (ISO/IEC 7812 ranges in use): an 18-digit
# order number that happens to pass the Luhn check is not a card of any network.
_CARD_NETWORKS = [
    (r"4", (13, 16, 19)),
    (r"5[1-5]|2(?:22[1-9]|2[3-9]\d|[3-6]\d\d|7[01]\d|720)", (16,)),
    (r"3[47]", (15,)),
    (r"3(?:0[0-5]|[689])", (14, 15, 16, 17, 18, 19)),
    (r"35(?:2[89]|[3-8]\d)", (16, 17, 18, 19)),
    (r"6(?:011|4[4-9]|5)", (16, 17, 18, 19)),
    (r"62", (16, 17, 18, 19)),
    (r"5[06-8]|6(?:304|39|759|76[1-3])", (13, 14, 15, 16, 17, 18, 19)),  # Maestro
    (r"60|8[12]|508", (16,)),  # RuPay
]
_CARD_NETWORKS_RE = [(re.compile(prefix), lengths) for prefix, lengths in _CARD_NETWORKS]


def _card_network_length(digits: str) -> bool:
    return any(pattern.match(digits) and len(digits) in lengths for pattern, lengths in _CARD_NETWORKS_RE)


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
    return marker("card") if _card_network_length(digits) and _luhn(digits) else value


# (kind, pattern, replacement); a replacement may keep a group (the key name) visible.
_RULES: list[Rule] = [
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
    (
        "password",
        # "the wifi password hunter2", "use password Tr0ub4dor&3": no "is", no colon, a value
        # that looks like a password (_LOOSE_VALUE).
        re.compile(r"(?i)(?<![\w-])(password|passwd|passphrase|passcode|pwd)([^\S\n]+)" + _LOOSE_VALUE),
        r"\1\2" + marker("password"),
    ),
    (
        "password",
        # "I set the password to X", "change your PIN to 4711": the new value after "to".
        re.compile(
            r"(?i)(\b(?:set|sets|setting|changed?|changes|changing|reset|resets|updated?|updates)\s+"
            r"(?:(?:the|my|our|your|his|her|their|its|a|new|admin|root|user|wifi|wi-fi|db|database|vpn|account)\s+){0,3}"
            r"(?:password|passphrase|passcode|pin|pwd)\s+to)(\s+)(?:\d{4,8}(?!\d)|" + _LOOSE_VALUE + ")"
        ),
        r"\1\2" + marker("password"),
    ),
    (
        "password",
        # "pw: …" (not a secret word inside other words: "upwork: …" stays), and PINs of four
        # to eight digits ("PIN: 4711", "the PIN is 902817", "PIN码 1234").
        re.compile(
            r"(?i)(?<![\w.-])(pw|pin(?:[ -]?code)?|pin码|pin碼)"
            r"(\s*(?:[:=]|\bis\b|\bwas\b|是|为|為)\s*|\s+(?=\d))(?:\d{4,8}(?!\d)|(?<=[:=] )" + _WORD_VALUE + ")"
        ),
        r"\1\2" + marker("password"),
    ),
    *_PHRASE_RULES,
    *_gated(_CLI_RULES, _CLI_GATE),
    *_gated(_ID_RULES, _DIGITS_GATE),
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
_BARE_RULES: list[Rule] = [
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
_CONTACT_RULES: list[Rule] = [
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


def redact_strings(value, *, contact_info: bool = True):
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
