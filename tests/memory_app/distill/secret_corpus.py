"""A corpus of secret forms and of look-alikes that are not secrets, in many languages, for the
redaction tests (test_secret_corpus.py) and bench/redaction_worst_case.py.

``Entry(lang, text, secret)``: ``text`` holds ``secret``, which redaction must remove whole (for
a look-alike ``secret`` is empty and ``text`` must come back unchanged).

- ``WRITTEN``: forms written by hand: passwords in prose and on command lines, identity and
  account numbers, in 20+ languages.
- ``generated(seed)``: the same kinds with values made here — IBANs of 20 countries with their
  mod-97 check digits, payment cards with their Luhn digit, CPFs, DNIs/NIEs, Aadhaar numbers
  (Verhoeff), Chinese resident ids (birth date and MOD 11-2), SSNs, NINOs, random passwords in
  each language's phrases, credentials on command lines.
- ``HELD_OUT``: written and generated forms (another seed, other phrasings) kept apart: they were
  written before the rules were tuned on the rest and are reported on their own.
- ``LOOKALIKES``: prose about passwords with no value, commands that carry no secret, and
  numbers shaped like the identifiers above whose check digits fail (or that were never issued).
"""

import random
import string
from typing import NamedTuple

from memory_app.distill import identifiers as ids


class Entry(NamedTuple):
    lang: str
    text: str
    secret: str


# --- values with check digits -------------------------------------------------------------------
IBAN_COUNTRIES = ["DE", "FR", "ES", "IT", "NL", "GB", "BE", "AT", "CH", "PL", "PT", "SE", "NO", "DK", "FI", "IE"]
IBAN_COUNTRIES += ["TR", "SA", "AE", "BR"]


def _digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.digits) for _ in range(n))


def make_iban(rng: random.Random, country: str, *, spaced: bool = True, valid: bool = True) -> str:
    length = ids.IBAN_LENGTHS[country]
    bban = _digits(rng, length - 4)
    if country in ("GB", "NL", "IE"):  # a bank code of letters first
        bban = "".join(rng.choice(string.ascii_uppercase) for _ in range(4)) + bban[4:]
    number = int("".join(str(int(c, 36)) for c in bban + country + "00"))
    check = 98 - number % 97
    if not valid:  # any other two digits that the mod-97 check refuses
        check = rng.choice([c for c in range(100) if (c - check) % 97])
    iban = f"{country}{check:02d}{bban}"
    assert ids.iban_ok(iban) is valid, iban
    return " ".join(iban[i : i + 4] for i in range(0, len(iban), 4)) if spaced else iban


def _luhn_digit(body: str) -> str:
    for digit in string.digits:
        if ids.luhn_ok(body + digit):
            return digit
    raise AssertionError(body)


def make_card(rng: random.Random, *, valid: bool = True) -> str:
    prefix, length = rng.choice([("4", 16), ("51", 16), ("55", 16), ("2221", 16), ("34", 15), ("37", 15)])
    prefix, length = rng.choice([(prefix, length), ("6011", 16), (f"35{rng.randint(28, 89)}", 16), ("62", 16)])
    body = prefix + _digits(rng, length - 1 - len(prefix))
    last = _luhn_digit(body)
    if not valid:
        last = str((int(last) + rng.randint(1, 9)) % 10)
    number = body + last
    if length == 15:
        return f"{number[:4]} {number[4:10]} {number[10:]}"
    sep = rng.choice([" ", "-", ""])
    return sep.join(number[i : i + 4] for i in range(0, 16, 4))


def make_cpf(rng: random.Random, *, valid: bool = True) -> str:
    while True:
        digits = _digits(rng, 9)
        for size in (9, 10):
            total = sum(int(digits[i]) * (size + 1 - i) for i in range(size))
            digits += str(total * 10 % 11 % 10)
        if not valid:
            digits = digits[:10] + str((int(digits[10]) + rng.randint(1, 9)) % 10)
        if ids.cpf_ok(digits) is valid:
            return f"{digits[:3]}.{digits[3:6]}.{digits[6:9]}-{digits[9:]}"


def make_dni(rng: random.Random, *, nie: bool = False, valid: bool = True) -> str:
    if nie:
        first = rng.choice("XYZ")
        number = first + _digits(rng, 7)
        value = int(str("XYZ".index(first)) + number[1:])
    else:
        number = _digits(rng, 8)
        value = int(number)
    letter = ids.DNI_LETTERS[value % 23]
    if not valid:
        letter = ids.DNI_LETTERS[(value + rng.randint(1, 22)) % 23]
    return number + letter


_VERHOEFF_INV = [0, 4, 3, 2, 1, 5, 6, 7, 8, 9]


def make_aadhaar(rng: random.Random, *, sep: str = " ", valid: bool = True) -> str:
    body = rng.choice("23456789") + _digits(rng, 10)
    check = 0
    for index, char in enumerate(reversed(body)):
        check = ids._VERHOEFF_D[check][ids._VERHOEFF_P[(index + 1) % 8][int(char)]]
    digit = _VERHOEFF_INV[check]
    if not valid:
        digit = (digit + rng.randint(1, 9)) % 10
    number = body + str(digit)
    assert ids.verhoeff_ok(number) is valid
    return sep.join(number[i : i + 4] for i in range(0, 12, 4))


def make_cn_id(rng: random.Random, *, valid: bool = True) -> str:
    region = rng.choice(["110105", "310104", "440305", "510107", "330106", "420111", "610113", "210102"])
    birth = f"{rng.randint(1950, 2005)}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}"
    body = region + birth + _digits(rng, 3)
    total = sum(int(c) * w for c, w in zip(body, ids._CN_WEIGHTS, strict=True))
    check = "10X98765432"[total % 11]
    if not valid:
        check = "10X98765432"[(total + rng.randint(1, 10)) % 11]
    return body + check


def make_ssn(rng: random.Random) -> str:
    area = rng.choice([a for a in range(1, 900) if a != 666])
    return f"{area:03d}-{rng.randint(1, 99):02d}-{rng.randint(1, 9999):04d}"


NINO_FIRST = "ABCEGHJKLMNOPRSTWXYZ"
NINO_SECOND = "ABCEGHJKLMNPRSTWXYZ"


def make_nino(rng: random.Random, *, spaced: bool = True) -> str:
    while True:
        prefix = rng.choice(NINO_FIRST) + rng.choice(NINO_SECOND)
        if prefix not in ("BG", "GB", "KN", "NK", "NT", "TN", "ZZ"):
            break
    digits = _digits(rng, 6)
    suffix = rng.choice("ABCD")
    if spaced:
        return f"{prefix} {digits[:2]} {digits[2:4]} {digits[4:]} {suffix}"
    return f"{prefix}{digits}{suffix}"


def make_password(rng: random.Random) -> str:
    words = ["Kiwi", "orchard", "Blue", "tiger", "Nordic", "lamp", "River", "stone", "Maple", "quartz"]
    symbol = rng.choice("!#%&*+?@")
    return rng.choice(words) + _digits(rng, rng.randint(2, 4)) + symbol + rng.choice(words).lower()


def make_token(rng: random.Random, length: int = 24) -> str:
    alphabet = string.ascii_letters + string.digits
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(length))
        if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            return value


# --- hand-written secret forms ------------------------------------------------------------------
WRITTEN: list[Entry] = [
    # English: prose with and without "is", and the key/value forms
    Entry("en", "The wifi password hunter2go is on the fridge.", "hunter2go"),
    Entry("en", "Log in with password Tr0ub4dor&3 on the lab box.", "Tr0ub4dor&3"),
    Entry("en", "My bank PIN is 4711 and nobody knows it.", "4711"),
    Entry("en", "PIN: 902817 for the door.", "902817"),
    Entry("en", "The admin pw: Gr33nTea!", "Gr33nTea!"),
    Entry("en", "Use passphrase 'correct horse battery staple' for the vault.", "correct horse battery staple"),
    Entry("en", "The passcode 8H3k9q2 opens the safe.", "8H3k9q2"),
    Entry("en", "Our root password was changed to Winter2025! yesterday.", "Winter2025!"),
    Entry("en", "my password: ilovecats77", "ilovecats77"),
    Entry("en", "password Blue42sky for the router", "Blue42sky"),
    # English: command lines
    Entry("en", "Run mysql --password S3cretDb! -u app billing.", "S3cretDb!"),
    Entry("en", "Deploy with ./deploy.sh --db-password Pg9Secret --env prod.", "Pg9Secret"),
    Entry("en", "Start it as app --api-key 7dd8f0c2b1a94e55 --verbose.", "7dd8f0c2b1a94e55"),
    Entry("en", "Call vault-sync --client-secret=Qx7kLm2Np9 to refresh.", "Qx7kLm2Np9"),
    Entry("en", "Then htpasswd -b /etc/nginx/.htpasswd alice Apr1lShowers!", "Apr1lShowers!"),
    Entry("en", "Create it with htpasswd -bc .htpasswd bob b0bsP4ss first.", "b0bsP4ss"),
    Entry("en", "Print one with htpasswd -nbB carol Car0lPass for the config.", "Car0lPass"),
    Entry("en", "Then echo ghp_R4nd0mT0kenValue9x | gh auth login --with-token", "ghp_R4nd0mT0kenValue9x"),
    Entry("en", "Use echo 'Reg1stryPass' | docker login -u ci --password-stdin registry.io", "Reg1stryPass"),
    Entry("en", "Or gh auth login --with-token <<< glpat-Xy7Zq8Wv9Ut0Sr1Qp2", "glpat-Xy7Zq8Wv9Ut0Sr1Qp2"),
    Entry("en", "Connect with redis-cli -h cache -a R3disSecret ping", "R3disSecret"),
    Entry("en", "Dump with mongodump -u admin -p M0ngoPass --db app", "M0ngoPass"),
    Entry("en", "Query with sqlcmd -S db -U sa -P SqlS3rver! -Q 'select 1'", "SqlS3rver!"),
    Entry("en", "Search with ldapsearch -x -D cn=admin -w Ld4pPass -b dc=ex", "Ld4pPass"),
    Entry("en", "Pack it with zip -P Z1pPassword secret.zip notes.txt", "Z1pPassword"),
    Entry("en", "Extract with 7z x -pSev3nZip archive.7z", "Sev3nZip"),
    Entry("en", "Convert with openssl pkcs12 -in a.p12 -passin pass:P12Secret -nokeys", "P12Secret"),
    Entry("en", "Mount with smbclient //nas/share -U backup%Smb4Pass", "Smb4Pass"),
    Entry("en", "Sign with keytool -list -keystore ks.jks -storepass K3ystore!", "K3ystore!"),
    Entry("en", "Login with az login -u ops@example.com -p Azur3Pass!", "Azur3Pass!"),
    Entry("en", "wget --password=Wg3tPass https://example.com/file", "Wg3tPass"),
    Entry("en", "curl --token 9b1f7e3c2d4a --url https://api.example.com", "9b1f7e3c2d4a"),
    # English: identity and account numbers
    Entry("en", "My SSN is 123-45-6789 for the tax form.", "123-45-6789"),
    Entry("en", "Social security number 219 09 9999 on the form.", "219 09 9999"),
    Entry("en", "SSN: 078051120 was on the card.", "078051120"),
    Entry("en", "My NI number is AB 12 34 56 C.", "AB 12 34 56 C"),
    Entry("en", "National Insurance: JG103759A", "JG103759A"),
    Entry("en", "Wire it to GB82 WEST 1234 5698 7654 32 please.", "GB82 WEST 1234 5698 7654 32"),
    Entry("en", "The card 4111 1111 1111 1111 expires soon.", "4111 1111 1111 1111"),
    # Spanish
    Entry("es", "La contraseña del wifi es Casa2024!", "Casa2024!"),
    Entry("es", "Mi DNI es 12345678Z.", "12345678Z"),
    Entry("es", "El NIE X1234567L está en el contrato.", "X1234567L"),
    Entry("es", "Mi IBAN es ES91 2100 0418 4502 0005 1332.", "ES91 2100 0418 4502 0005 1332"),
    Entry("es", "contraseña: gato99azul", "gato99azul"),
    # French
    Entry("fr", "Le mot de passe du serveur est Soleil42!", "Soleil42!"),
    Entry("fr", "Mon IBAN : FR14 2004 1010 0505 0001 3M02 606", "FR14 2004 1010 0505 0001 3M02 606"),
    Entry("fr", "mot de passe : chat2souris", "chat2souris"),
    # German
    Entry("de", "Das Passwort für den Router lautet Sonne2024!", "Sonne2024!"),
    Entry("de", "Meine IBAN ist DE89 3704 0044 0532 0130 00.", "DE89 3704 0044 0532 0130 00"),
    Entry("de", "Kennwort: Haus7Baum", "Haus7Baum"),
    # Italian
    Entry("it", "La password del server è Mare2024!", "Mare2024!"),
    Entry("it", "La parola d'ordine è Pizza4Sempre.", "Pizza4Sempre"),
    Entry("it", "Il mio IBAN è IT60 X054 2811 1010 0000 0123 456.", "IT60 X054 2811 1010 0000 0123 456"),
    Entry("it", "password della posta: Roma1234", "Roma1234"),
    # Portuguese
    Entry("pt", "A senha do wifi é Praia2024!", "Praia2024!"),
    Entry("pt", "Meu CPF é 529.982.247-25.", "529.982.247-25"),
    Entry("pt", "CPF 52998224725 no cadastro.", "52998224725"),
    Entry("pt", "minha senha Lua9Cheia", "Lua9Cheia"),
    Entry("pt", "O meu IBAN é PT50 0002 0123 1234 5678 9015 4.", "PT50 0002 0123 1234 5678 9015 4"),
    # Dutch
    Entry("nl", "Het wachtwoord is Fiets2024!", "Fiets2024!"),
    Entry("nl", "Mijn IBAN is NL91 ABNA 0417 1643 00.", "NL91 ABNA 0417 1643 00"),
    Entry("nl", "wachtwoord voor de server: Molen7Wind", "Molen7Wind"),
    # Polish
    Entry("pl", "Hasło do serwera to Zamek2024!", "Zamek2024!"),
    Entry("pl", "moje hasło Kot7Pies", "Kot7Pies"),
    Entry("pl", "Numer konta: PL61 1090 1014 0000 0712 1981 2874", "PL61 1090 1014 0000 0712 1981 2874"),
    # Turkish
    Entry("tr", "Wi-Fi şifresi Deniz2024! olarak ayarlandı.", "Deniz2024!"),
    Entry("tr", "Şifre: Kedi7Kopek", "Kedi7Kopek"),
    Entry("tr", "Sunucu için parola olarak Ankara06x kullanıyoruz.", "Ankara06x"),
    Entry("tr", "IBAN numaram TR33 0006 1005 1978 6457 8413 26.", "TR33 0006 1005 1978 6457 8413 26"),
    # Swedish, Danish, Norwegian, Finnish
    Entry("sv", "Lösenordet är Sommar2024!", "Sommar2024!"),
    Entry("sv", "lösenord till routern: Alg7Skog", "Alg7Skog"),
    Entry("da", "Adgangskoden er Hygge2024!", "Hygge2024!"),
    Entry("no", "Passordet er Fjord2024!", "Fjord2024!"),
    Entry("fi", "Salasana on Sauna2024!", "Sauna2024!"),
    # Czech, Romanian, Hungarian, Greek, Indonesian
    Entry("cs", "Heslo je Praha2024!", "Praha2024!"),
    Entry("ro", "Parola este Dunare2024!", "Dunare2024!"),
    Entry("hu", "A jelszó: Duna2024!", "Duna2024!"),
    Entry("el", "Ο κωδικός είναι Athina2024!", "Athina2024!"),
    Entry("id", "Kata sandi adalah Bali2024!", "Bali2024!"),
    # Vietnamese
    Entry("vi", "Mật khẩu là Pho2024!", "Pho2024!"),
    Entry("vi", "mật khẩu wifi: Hanoi99x", "Hanoi99x"),
    # Arabic, Persian, Hebrew
    Entry("ar", "كلمة المرور هي Qamar2024!", "Qamar2024!"),
    Entry("ar", "كلمة السر: Nakhla77x", "Nakhla77x"),
    Entry("fa", "رمز عبور Tehran2024! است", "Tehran2024!"),
    Entry("he", "הסיסמה היא Shalom2024!", "Shalom2024!"),
    # Hindi, Bengali, Thai
    Entry("hi", "मेरा पासवर्ड Dilli2024! है", "Dilli2024!"),
    Entry("hi", "पासवर्ड: Ganga77x", "Ganga77x"),
    Entry("hi", "मेरा आधार नंबर 2345 6789 0124 है", "2345 6789 0124"),
    Entry("bn", "পাসওয়ার্ড হল Dhaka2024!", "Dhaka2024!"),
    Entry("th", "รหัสผ่านคือ Bangkok2024!", "Bangkok2024!"),
    # Chinese, simplified and traditional
    Entry("zh-Hans", "数据库密码是Shu7Ju9Ku", "Shu7Ju9Ku"),
    Entry("zh-Hans", "WiFi密码12345678，别告诉别人。", "12345678"),
    Entry("zh-Hans", "我的身份证号是11010519491231002X。", "11010519491231002X"),
    Entry("zh-Hant", "伺服器的密碼是Tai9Pei2024", "Tai9Pei2024"),
    Entry("zh-Hant", "密碼：Gao7Xiong8", "Gao7Xiong8"),
    Entry("zh-Hant", "私鑰為Ji8Long9Shan", "Ji8Long9Shan"),
    # Japanese, Korean, Russian, Ukrainian
    Entry("ja", "サーバーのパスワードはFuji2024!です", "Fuji2024!"),
    Entry("ja", "パスワード Sakura77x を使う", "Sakura77x"),
    Entry("ko", "비밀번호는 Seoul2024! 입니다", "Seoul2024!"),
    Entry("ru", "Пароль от почты — Moskva2024!", "Moskva2024!"),
    Entry("uk", "Пароль це Kyiv2024!", "Kyiv2024!"),
]


# --- generated secret forms -----------------------------------------------------------------------
# Phrases per language that carry a password; {v} is the value.
PASSWORD_PHRASES = {
    "en": ["the password is {v}", "use password {v} here", "password: {v}", "the wifi password {v} works"],
    "es": ["la contraseña es {v}", "contraseña: {v}"],
    "fr": ["le mot de passe est {v}", "mot de passe : {v}"],
    "de": ["das Passwort ist {v}", "Passwort: {v}"],
    "it": ["la password è {v}", "la parola d'ordine è {v}"],
    "pt": ["a senha é {v}", "senha: {v}", "minha senha {v}"],
    "nl": ["het wachtwoord is {v}", "wachtwoord: {v}"],
    "pl": ["hasło to {v}", "hasło: {v}"],
    "tr": ["şifre: {v}", "şifresi {v}"],
    "sv": ["lösenordet är {v}", "lösenord: {v}"],
    "vi": ["mật khẩu là {v}", "mật khẩu: {v}"],
    "ar": ["كلمة المرور هي {v}", "كلمة المرور {v}"],
    "hi": ["पासवर्ड {v} है", "पासवर्ड है {v}"],
    "zh-Hant": ["密碼是{v}", "密碼：{v}"],
    "zh-Hans": ["密码是{v}", "密码：{v}"],
    "ja": ["パスワードは{v}です", "パスワード：{v}"],
    "ko": ["비밀번호는 {v}", "비밀번호: {v}"],
    "ru": ["пароль: {v}", "пароль — {v}"],
}
ID_PHRASES = {
    "iban": [
        ("en", "My IBAN is {v}."),
        ("de", "Meine IBAN lautet {v}."),
        ("fr", "Mon IBAN : {v}"),
        ("es", "Mi IBAN es {v}."),
        ("nl", "Mijn rekeningnummer is {v}."),
        ("it", "Il mio IBAN è {v}."),
        ("pl", "Numer rachunku {v}"),
        ("tr", "IBAN numaram {v}"),
        ("zh-Hans", "我的银行账号是{v}"),
        ("ar", "رقم الآيبان الخاص بي {v}"),
    ],
    "card": [
        ("en", "Card {v} is on file."),
        ("es", "Tarjeta {v}."),
        ("zh-Hans", "信用卡号{v}"),
        ("ja", "カード番号{v}"),
    ],
    "cpf": [("pt", "Meu CPF é {v}."), ("en", "Her CPF: {v}")],
    "dni": [("es", "Mi DNI es {v}."), ("en", "His Spanish id {v}")],
    "nie": [("es", "Mi NIE es {v}."), ("ca", "El meu NIE és {v}.")],
    "aadhaar": [("hi", "मेरा आधार नंबर {v} है"), ("en", "Aadhaar {v} was verified.")],
    "cn_id": [("zh-Hans", "身份证号码：{v}"), ("zh-Hant", "身分證號碼{v}"), ("en", "Chinese ID {v}")],
    "ssn": [("en", "SSN {v} on file."), ("es", "Su número de seguro social es {v}.")],
    "nino": [("en", "NI number {v}."), ("en", "National Insurance {v}")],
}
CLI_FORMS = [
    "mysql --password {v} -u app db",
    "./run --db-password={v}",
    "tool --api-key {v}",
    "htpasswd -b .htpasswd ops {v}",
    "htpasswd -nb ops {v}",
    "echo {v} | gh auth login --with-token",
    "printf '%s' {v} | docker login -u ci --password-stdin",
    "redis-cli -a {v} info",
    "mongosh -u root -p {v}",
    "zip -P {v} out.zip a.txt",
]


def generated(seed: int = 1) -> list[Entry]:
    rng = random.Random(seed)
    out: list[Entry] = []
    for lang, phrases in PASSWORD_PHRASES.items():
        for phrase in phrases:
            value = make_password(rng)
            out.append(Entry(lang, phrase.format(v=value), value))
    makers = {
        "iban": lambda: make_iban(rng, rng.choice(IBAN_COUNTRIES), spaced=rng.random() < 0.7),
        "card": lambda: make_card(rng),
        "cpf": lambda: make_cpf(rng),
        "dni": lambda: make_dni(rng),
        "nie": lambda: make_dni(rng, nie=True),
        "aadhaar": lambda: make_aadhaar(rng, sep=rng.choice([" ", "-"])),
        "cn_id": lambda: make_cn_id(rng),
        "ssn": lambda: make_ssn(rng),
        "nino": lambda: make_nino(rng, spaced=rng.random() < 0.5),
    }
    for kind, phrases in ID_PHRASES.items():
        for lang, phrase in phrases:
            value = makers[kind]()
            out.append(Entry(lang, phrase.format(v=value), value))
    for form in CLI_FORMS:
        value = make_token(rng, rng.randint(10, 20))
        out.append(Entry("en", form.format(v=value), value))
    return out


# --- held out ------------------------------------------------------------------------------------
# Written apart from the rest, with phrasings the rules were not tuned on.
HELD_OUT_WRITTEN: list[Entry] = [
    Entry("en", "Jot this down: the VPN password Qwerty#2026 expires in May.", "Qwerty#2026"),
    Entry("en", "sudo ./install --admin-password 'Adm!n 2026' --yes", "Adm!n 2026"),
    Entry("en", "Her social security number is 401-22-7781.", "401-22-7781"),
    Entry("en", "echo -n Sl4ckT0ken | vault-cli login --token-stdin", "Sl4ckT0ken"),
    Entry("de", "Unser WLAN-Passwort lautet Kaffee&Kuchen9.", "Kaffee&Kuchen9"),
    Entry("es", "Te paso la contraseña: Perro#Gato22", "Perro#Gato22"),
    Entry("fr", "Voici le mot de passe : Baguette#77", "Baguette#77"),
    Entry("it", "Ti mando la password: Gelato#88", "Gelato#88"),
    Entry("pt", "A senha do banco é Cafe#Leite12", "Cafe#Leite12"),
    Entry("nl", "Het wachtwoord van de kluis is Tulp#2026", "Tulp#2026"),
    Entry("pl", "Hasło do wifi: Pierogi#33", "Pierogi#33"),
    Entry("tr", "Modemin şifresi Cay#Simit44", "Cay#Simit44"),
    Entry("sv", "Lösenordet till wifi är Kanel#Bulle5", "Kanel#Bulle5"),
    Entry("vi", "Mật khẩu của tôi là Banh#Mi66", "Banh#Mi66"),
    Entry("ar", "كلمة المرور الخاصة بي هي Shams#99", "Shams#99"),
    Entry("hi", "वाईफाई का पासवर्ड Chai#Samosa7 है", "Chai#Samosa7"),
    Entry("zh-Hant", "路由器密碼為Bao#Zi2026", "Bao#Zi2026"),
    Entry("zh-Hans", "服务器的密码设置为Jiao#Zi88", "Jiao#Zi88"),
    Entry("ja", "金庫の暗証番号は Kagi#2026 です", "Kagi#2026"),
    Entry("ko", "와이파이 비밀번호는 Kimchi#77 이에요", "Kimchi#77"),
    Entry("ru", "Мой пароль Borsch#2026 никому не говорите", "Borsch#2026"),
    Entry("es", "Mi número de DNI es 87654321X", "87654321X"),
    Entry("pt", "CPF do titular: 111.444.777-35", "111.444.777-35"),
    Entry("zh-Hans", "他的身份证：44030519900101123X", "44030519900101123X"),
    Entry("en", "Pay into BE68 5390 0754 7034 by Friday.", "BE68 5390 0754 7034"),
]
HELD_OUT_PASSWORD_PHRASES = {
    "en": "I set the password to {v} today",
    "de": "Das Kennwort ist {v}",
    "es": "la contraseña de la cuenta es {v}",
    "fr": "le mot de passe de la box est {v}",
    "it": "password: {v}",
    "pt": "senha da conta: {v}",
    "nl": "wachtwoord is {v}",
    "pl": "hasło jest {v}",
    "tr": "parola: {v}",
    "sv": "lösenordet var {v}",
    "vi": "mật khẩu cho wifi là {v}",
    "ar": "كلمة السر هي {v}",
    "hi": "पासवर्ड था {v}",
    "zh-Hant": "新密碼設為{v}",
    "zh-Hans": "新的密码为{v}",
    "ja": "パスワードが{v}に変わった",
    "ko": "비밀번호가 {v}",
    "ru": "пароль это {v}",
    "uk": "пароль від пошти: {v}",
    "id": "kata sandi: {v}",
}


def held_out_generated(seed: int = 99) -> list[Entry]:
    rng = random.Random(seed)
    out = []
    for lang, phrase in HELD_OUT_PASSWORD_PHRASES.items():
        value = make_password(rng)
        out.append(Entry(lang, phrase.format(v=value), value))
    for country in ("DE", "FR", "ES", "IT", "GB", "NL", "CH", "SE"):
        value = make_iban(rng, country, spaced=rng.random() < 0.5)
        out.append(Entry("en", f"Please transfer the deposit to {value} today.", value))
    for _ in range(3):
        value = make_card(rng)
        out.append(Entry("en", f"Charge {value} for the renewal.", value))
        value = make_cn_id(rng)
        out.append(Entry("zh-Hans", f"乘客身份证{value}已登记", value))
        value = make_aadhaar(rng)
        out.append(Entry("en", f"Aadhaar no. {value}", value))
        value = make_cpf(rng)
        out.append(Entry("pt", f"O CPF {value} foi confirmado.", value))
        value = make_dni(rng)
        out.append(Entry("es", f"DNI del cliente: {value}", value))
    return out


HELD_OUT: list[Entry] = HELD_OUT_WRITTEN + held_out_generated()


# --- look-alikes that are not secrets -------------------------------------------------------------
LOOKALIKES_WRITTEN: list[Entry] = [
    Entry("en", "Forgot your password? Use the reset link we sent.", ""),
    Entry("en", "The password field must hold at least 12 characters.", ""),
    Entry("en", "We store every password in the password manager 1Password.", ""),
    Entry("en", "Rotate the password every 90 days, as policy v3 says.", ""),
    Entry("en", "The password 2FA flow is documented on the wiki.", ""),
    Entry("en", "Read the token from a file: gh auth login --with-token < token.txt", ""),
    Entry("en", "Use echo $GH_TOKEN | gh auth login --with-token in CI.", ""),
    Entry("en", 'Pipe it: echo "$REGISTRY_PASS" | docker login --password-stdin', ""),
    Entry("en", "Create the file with htpasswd -c .htpasswd alice and type it when asked.", ""),
    Entry("en", "Remove a user with htpasswd -D .htpasswd alice.", ""),
    Entry("en", "Pass the secret as --password-file /run/secrets/db.", ""),
    Entry("en", "Use --token-file ~/.config/token instead of --token.", ""),
    Entry("en", 'Run mysql --password="$DB_PASS" -u app billing.', ""),
    Entry("en", "redis-cli -h cache -p 6379 ping answers PONG.", ""),
    Entry("en", "zip -r backup.zip docs and unzip -l backup.zip list it.", ""),
    Entry("en", "keytool -list -keystore ks.jks prompts for the store password.", ""),
    Entry("en", "az login --use-device-code works behind the proxy.", ""),
    Entry("en", "ldapsearch -x -b dc=example,dc=com uid=alice finds her.", ""),
    Entry("en", "Order 123-45-67890 shipped; ticket 000-12-3456 is closed.", ""),
    Entry("en", "Set pin 13 as output on the board.", ""),
    Entry("en", "Version 2024.11.30 fixed issue 4411 and PR 90210.", ""),
    Entry("en", "Call us at (415) 555-2671 between 9 and 5.", ""),
    Entry("en", "The SKU AB-1234-CD ships from warehouse 7.", ""),
    Entry("en", "Commit 9fceb02d0ae598e95dc970b74767f19372d61af8 fixed it.", ""),
    Entry("en", "Use the passphrase prompt of ssh-keygen for new keys.", ""),
    Entry("en", "Password-less login works through the SSO page.", ""),
    Entry("en", "The PIN must have between 4 and 8 digits.", ""),
    Entry("es", "¿Olvidaste tu contraseña? Escribe tu correo.", ""),
    Entry("es", "La contraseña debe tener al menos 12 caracteres.", ""),
    Entry("es", "El pedido 12345678 llega el martes 14.", ""),
    Entry("fr", "Mot de passe oublié ? Cliquez sur le lien.", ""),
    Entry("fr", "Le mot de passe doit contenir 12 caractères.", ""),
    Entry("de", "Passwort vergessen? Das neue Kennwort muss 12 Zeichen haben.", ""),
    Entry("de", "Die Rechnung 2024-0815 ist bezahlt.", ""),
    Entry("it", "Hai dimenticato la password? Reimpostala dal sito.", ""),
    Entry("it", "La password deve avere almeno 12 caratteri.", ""),
    Entry("pt", "Esqueceu a senha? Clique em redefinir.", ""),
    Entry("pt", "A senha precisa ter 12 caracteres.", ""),
    Entry("pt", "O pedido 123.456.789 foi enviado.", ""),
    Entry("nl", "Wachtwoord vergeten? Vraag een nieuw wachtwoord aan.", ""),
    Entry("nl", "Het wachtwoord moet minstens 12 tekens hebben.", ""),
    Entry("pl", "Nie pamiętasz hasła? Zresetuj hasło w ustawieniach.", ""),
    Entry("pl", "Hasło musi mieć co najmniej 12 znaków.", ""),
    Entry("tr", "Şifrenizi mi unuttunuz? Sıfırlama bağlantısına tıklayın.", ""),
    Entry("tr", "Şifre en az 12 karakter olmalıdır.", ""),
    Entry("sv", "Glömt lösenordet? Återställ lösenordet här.", ""),
    Entry("sv", "Lösenordet måste ha minst 12 tecken.", ""),
    Entry("vi", "Quên mật khẩu? Hãy đặt lại mật khẩu.", ""),
    Entry("vi", "Mật khẩu phải có ít nhất 12 ký tự.", ""),
    Entry("ar", "هل نسيت كلمة المرور؟ أعد تعيين كلمة المرور.", ""),
    Entry("ar", "يجب أن تحتوي كلمة المرور على 12 حرفًا على الأقل.", ""),
    Entry("hi", "पासवर्ड भूल गए? पासवर्ड रीसेट करें।", ""),
    Entry("hi", "पासवर्ड कम से कम 12 अक्षर का होना चाहिए।", ""),
    Entry("zh-Hant", "忘記密碼了嗎？請重設您的密碼。", ""),
    Entry("zh-Hant", "密碼長度至少12個字元。", ""),
    Entry("zh-Hans", "密码长度至少12位，必须包含数字。", ""),
    Entry("zh-Hans", "请修改密码后重新登录。", ""),
    Entry("zh-Hans", "订单号20240115123045已发货。", ""),
    Entry("ja", "パスワードを忘れた場合はリセットしてください。", ""),
    Entry("ja", "パスワードは12文字以上にしてください。", ""),
    Entry("ko", "비밀번호를 잊으셨나요? 비밀번호를 재설정하세요.", ""),
    Entry("ru", "Забыли пароль? Сменить пароль можно в настройках.", ""),
    Entry("uk", "Забули пароль? Змініть пароль у налаштуваннях.", ""),
    Entry("da", "Har du glemt adgangskoden? Nulstil den her.", ""),
    Entry("fi", "Unohditko salasanan? Vaihda salasana asetuksista.", ""),
    Entry("cs", "Zapomněli jste heslo? Obnovte heslo v nastavení.", ""),
    Entry("id", "Lupa kata sandi? Atur ulang kata sandi Anda.", ""),
    Entry("el", "Ξεχάσατε τον κωδικό; Επαναφέρετε τον κωδικό σας.", ""),
    Entry("he", "שכחת את הסיסמה? אפס את הסיסמה שלך.", ""),
    Entry("fa", "رمز عبور را فراموش کرده اید؟ آن را بازنشانی کنید.", ""),
    Entry("th", "ลืมรหัสผ่านใช่ไหม กรุณาตั้งรหัสผ่านใหม่", ""),
]
# Numbers shaped like identifiers whose check fails, or that were never issued, in sentences of
# each language.
LOOKALIKE_PHRASES = [
    ("en", "Order number {v} shipped."),
    ("de", "Bestellnummer {v} wurde versandt."),
    ("fr", "La commande {v} est partie."),
    ("es", "El pedido {v} salió hoy."),
    ("it", "L'ordine {v} è stato spedito."),
    ("pt", "O pedido {v} foi enviado."),
    ("nl", "Bestelling {v} is verzonden."),
    ("pl", "Zamówienie {v} zostało wysłane."),
    ("tr", "{v} numaralı sipariş gönderildi."),
    ("sv", "Order {v} har skickats."),
    ("vi", "Đơn hàng {v} đã được gửi."),
    ("ar", "تم شحن الطلب {v}."),
    ("hi", "ऑर्डर {v} भेज दिया गया है।"),
    ("zh-Hans", "订单{v}已发货。"),
    ("zh-Hant", "訂單{v}已出貨。"),
    ("ja", "注文{v}を発送しました。"),
    ("ko", "주문 {v} 발송 완료."),
    ("ru", "Заказ {v} отправлен."),
]


def lookalikes_generated(seed: int = 7) -> list[Entry]:
    rng = random.Random(seed)
    values = [
        lambda: make_iban(rng, rng.choice(IBAN_COUNTRIES), valid=False),
        lambda: make_card(rng, valid=False),
        lambda: make_cpf(rng, valid=False),
        lambda: make_dni(rng, valid=False),
        lambda: make_dni(rng, nie=True, valid=False),
        lambda: make_aadhaar(rng, valid=False),
        lambda: make_cn_id(rng, valid=False),
        lambda: f"{rng.choice(['000', '666', '912'])}-{rng.randint(10, 99)}-{rng.randint(1000, 9999)}",  # never issued
        lambda: f"{rng.choice(['QQ', 'DA', 'GB', 'ZZ'])} {_digits(rng, 2)} {_digits(rng, 2)} {_digits(rng, 2)} A",
    ]
    out = []
    for index, (lang, phrase) in enumerate(LOOKALIKE_PHRASES * 4):
        out.append(Entry(lang, phrase.format(v=values[index % len(values)]()), ""))
    return out


LOOKALIKES: list[Entry] = LOOKALIKES_WRITTEN + lookalikes_generated()
SECRETS: list[Entry] = WRITTEN + generated()
