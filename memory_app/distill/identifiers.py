"""Account and national identity numbers that redaction removes (``redaction/checksums.py``),
each found by its shape and, where the format has one, confirmed by its check digits, so an
order number or a phone number of the same length stays as it is.

- payment cards: the Luhn check (ISO/IEC 7812);
- IBANs: the country's length and ISO 13616's mod-97 check;
- India's Aadhaar: the Verhoeff check;
- Brazil's CPF: its two mod-11 check digits;
- Spain's DNI and NIE: the mod-23 check letter;
- the Chinese resident identity card: a real birth date and the ISO 7064 MOD 11-2 check;
- US SSNs and UK National Insurance numbers have no check digit: the numbers never issued
  (SSN area 000, 666 or 9xx, group 00, serial 0000; NINO prefixes that are never used) are
  left alone, and a bare 9-digit SSN counts only right after its name.
"""

import re
from datetime import date

# --- check digits -----------------------------------------------------------------------------


def luhn_ok(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char) * (2 if index % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


# ISO 13616 lengths (the SWIFT IBAN registry), per country code.
IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BI": 27,
    "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27, "DK": 18, "DO": 28,
    "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
    "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27,
    "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25,
    "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18,
    "NO": 15, "OM": 23, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33,
    "SA": 24, "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28,
    "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}  # fmt: skip


def iban_ok(iban: str) -> bool:
    """``iban``: letters and digits only, upper case."""
    if IBAN_LENGTHS.get(iban[:2]) != len(iban) or not iban[2:4].isdigit():
        return False
    moved = iban[4:] + iban[:4]
    return int("".join(str(int(char, 36)) for char in moved)) % 97 == 1


_VERHOEFF_D = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 2, 3, 4, 0, 6, 7, 8, 9, 5], [2, 3, 4, 0, 1, 7, 8, 9, 5, 6],
    [3, 4, 0, 1, 2, 8, 9, 5, 6, 7], [4, 0, 1, 2, 3, 9, 5, 6, 7, 8], [5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
    [6, 5, 9, 8, 7, 1, 0, 4, 3, 2], [7, 6, 5, 9, 8, 2, 1, 0, 4, 3], [8, 7, 6, 5, 9, 3, 2, 1, 0, 4],
    [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
]  # fmt: skip
_VERHOEFF_P = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 5, 7, 6, 2, 8, 3, 0, 9, 4], [5, 8, 0, 3, 7, 9, 6, 1, 4, 2],
    [8, 9, 1, 6, 0, 4, 3, 5, 2, 7], [9, 4, 5, 3, 1, 2, 6, 8, 7, 0], [4, 2, 8, 6, 5, 7, 3, 9, 0, 1],
    [2, 7, 9, 3, 8, 0, 6, 4, 1, 5], [7, 0, 4, 6, 9, 1, 3, 2, 5, 8],
]  # fmt: skip


def verhoeff_ok(digits: str) -> bool:
    check = 0
    for index, char in enumerate(reversed(digits)):
        check = _VERHOEFF_D[check][_VERHOEFF_P[index % 8][int(char)]]
    return check == 0


def cpf_ok(digits: str) -> bool:
    if len(digits) != 11 or len(set(digits)) == 1:
        return False
    for size in (9, 10):
        total = sum(int(digits[i]) * (size + 1 - i) for i in range(size))
        if (total * 10 % 11) % 10 != int(digits[size]):
            return False
    return True


DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


def dni_ok(number: str, letter: str) -> bool:
    """DNI (8 digits) or NIE (X/Y/Z and 7 digits) and its check letter."""
    if number[0] in "XYZ":
        number = str("XYZ".index(number[0])) + number[1:]
    return DNI_LETTERS[int(number) % 23] == letter.upper()


_CN_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def cn_resident_id_ok(value: str) -> bool:
    """18 characters: region, birth date (YYYYMMDD), sequence and the MOD 11-2 check."""
    try:
        date(int(value[6:10]), int(value[10:12]), int(value[12:14]))
    except ValueError:
        return False
    total = sum(int(char) * weight for char, weight in zip(value[:17], _CN_WEIGHTS, strict=True))
    return "10X98765432"[total % 11] == value[17].upper()


# --- finding them in text -----------------------------------------------------------------------
# Each pattern is bounded (no nested repetition), so the scan is linear in the text; a callable
# confirms the check digits and declines a match (returns it unchanged) otherwise.

# An IBAN: the country code, two check digits, then letters and digits, in groups of four with
# single spaces or none. Long enough for any country; the callable takes exactly the country's
# length from it.
IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:[ -]?[A-Z0-9]){10,30}")


def replace_iban(match: re.Match[str], mark: str) -> str:
    text = match.group(0)
    length = IBAN_LENGTHS.get(text[:2])
    if length is None:
        return text
    taken, end = 0, 0
    for position, char in enumerate(text, start=1):
        if char.isalnum():
            taken += 1
            if taken == length:
                end = position
                break
    if not end:
        return text
    rest = text[end:]
    if rest[:1].isalnum():  # the number goes on: a longer code, not this IBAN
        return text
    compact = re.sub(r"[ -]", "", text[:end])
    return mark + rest if iban_ok(compact) else text


AADHAAR = re.compile(r"(?<![\d-])(?<!\d[ -])[2-9]\d{3}([ -])\d{4}\1\d{4}(?![ -]?\d)")
AADHAAR_NAMED = re.compile(r"(?i)(\b(?:aadhaa?r|uidai|uid)\b|आधार)(\D{0,20}?)(?<!\d)([2-9]\d{11})(?!\d)")


def aadhaar_confirmed(match: re.Match[str]) -> bool:
    return verhoeff_ok(re.sub(r"\D", "", match.group(0)))


CPF = re.compile(r"(?<![\d.-])\d{3}\.\d{3}\.\d{3}-\d{2}(?![\d-]|\.\d)")
CPF_NAMED = re.compile(r"(?i)(\bCPF\b)(\D{0,20}?)(?<!\d)(\d{11})(?!\d)")


def cpf_confirmed(match: re.Match[str]) -> bool:
    return cpf_ok(re.sub(r"\D", "", match.group(0)))


# DNI: 8 digits and a letter; NIE: X, Y or Z, 7 digits and a letter (a hyphen or space allowed
# before the letter).
DNI = re.compile(r"(?<![A-Za-z0-9_-])(?:[XYZxyz][ -]?)?\d{7,8}[ -]?[A-Za-z](?![A-Za-z0-9_-])")


def dni_confirmed(match: re.Match[str]) -> bool:
    if match.group(0)[-2] == " " and match.group(0)[-1].islower():
        return False  # "… 12345678 a day": a number and a word
    value = re.sub(r"[ -]", "", match.group(0)).upper()
    number, letter = value[:-1], value[-1]
    if number[0] in "XYZ":
        return len(number) == 8 and dni_ok(number, letter)
    return len(number) == 8 and number.isdigit() and dni_ok(number, letter)


CN_RESIDENT_ID = re.compile(r"(?<![0-9A-Za-z])[1-8]\d{5}(?:18|19|20)\d{9}[\dXx](?![0-9A-Za-z])")


def cn_resident_id_confirmed(match: re.Match[str]) -> bool:
    return cn_resident_id_ok(match.group(0))


# US Social Security number: AAA-GG-SSSS (hyphens or spaces), never area 000, 666 or 900–999,
# group 00 or serial 0000; nine bare digits only right after its name.
SSN = re.compile(r"(?<![A-Za-z0-9_-])(?!000|666|9\d\d)\d{3}([- ])(?!00)\d{2}\1(?!0000)\d{4}(?![A-Za-z0-9_-])")
SSN_NAMED = re.compile(
    r"(?i)(\b(?:SSN|social security(?: number| no\.?| #)?)\b)(\D{0,20}?)(?<!\d)(?!000|666|9\d\d)(\d{3}(?!00)\d{2}(?!0000)\d{4})(?!\d)"
)
# UK National Insurance number: two letters (D, F, I, Q, U and V never; O never second; the
# prefixes BG, GB, KN, NK, NT, TN and ZZ never), six digits and A–D.
NINO = re.compile(
    r"(?<![A-Za-z0-9])(?!BG|GB|KN|NK|NT|TN|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]"
    r"(?: ?\d{2} ?\d{2} ?\d{2} ?|\d{6})[A-D](?![A-Za-z0-9])"
)
