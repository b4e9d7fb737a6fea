"""The word for password in other languages ("Passwort ist …", "パスワードは…", "密码是…"),
each language's rules behind a gate that opens only when the text names a password in it."""

import re

from memory_app.distill.redaction.keyed import ASCII_VALUE, LOOSE_ASCII, LOOSE_VALUE, WORD_VALUE
from memory_app.distill.redaction.rule import Gated, Rule, marker, words_gate


def _spaced_phrase_rules(words: str, preps: str, copulas: str) -> list[re.Pattern[str]]:
    """A language written with spaces: the word for password, perhaps "of/for …", then a colon,
    ``=`` or the language's "is", then the value (quoted or one word); or the word, a space and
    a value that looks like a password."""
    return [
        re.compile(
            rf"(?i)(?<!\w)({words})"
            rf"((?:\s+(?:{preps})(?!\w)[^\n.,;:=\"']{{0,40}}?|(?:[^\S\n]+[^\s:=,.;?!\"'\[\]]{{1,20}}){{1,2}}(?=\s*[:=]))?"
            rf"(?:\s*[:=]\s*|\s+(?:{copulas})(?!\w)\s*[:=]?\s*))" + WORD_VALUE
        ),
        re.compile(rf"(?i)(?<!\w)({words})([^\S\n]+)" + LOOSE_VALUE),
    ]


def _unspaced_phrase_rules(words: str, copulas: str) -> list[re.Pattern[str]]:
    """A script whose values are ASCII runs in other text (Chinese, Arabic, Hindi, Thai …): the
    word, then a colon or "is" and any ASCII value, or the ASCII value right after the word when
    it looks like a password ("मेरा पासवर्ड Abc12345 है")."""
    return [
        re.compile(rf"({words})(\s*(?:(?:{copulas})\s*[:：=]?|[:：=])\s*)" + ASCII_VALUE),
        re.compile(rf"({words})(\s*)" + LOOSE_ASCII),
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


_ALL_PHRASE_WORDS = words_gate(
    "|".join(
        [_gate_words(words) for words, _, _ in _SPACED_PHRASES]
        + [words for words, _ in _UNSPACED_PHRASES]
        + [r"contrase|clave de acceso|mots? de passe|passw|kennw|парол"]
    )
)


def _in_language(words: str, patterns: list[re.Pattern[str]]) -> list[Rule]:
    gate = words_gate(_gate_words(words))
    return [
        ("password", Gated(pattern, (_ALL_PHRASE_WORDS, gate)), r"\1\2" + marker("password")) for pattern in patterns
    ]


PHRASE_RULES: list[Rule] = [
    (
        "password",
        # Japanese and Korean: パスワードは…, 暗証番号：…, 비밀번호는 …, 패스워드: …
        re.compile(
            rf"(パスワード|暗証番号|パスコード|비밀번호|패스워드)(\s*(?:は|が|는|은|가|이|[:=])\s*[:=]?\s*){ASCII_VALUE}"
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
            r"(?:\s*[:=]\s*|\s+(?:es|era|est|[ée]tait|ist|lautet|war)\b\s*[:=]?\s*))" + WORD_VALUE
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
            r"[^\S\n]+(?=[A-Za-z0-9])(?=[A-Za-z_/+=-]{0,200}\d)(?=[\d_/+=-]{0,200}[A-Za-z]))" + WORD_VALUE
        ),
        r"\1\2" + marker("password"),
    ),
    (
        "password",
        re.compile(r"(?i)(?<!\w)(парол[ьяюе]м?)([^\S\n]+)" + LOOSE_VALUE),
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
