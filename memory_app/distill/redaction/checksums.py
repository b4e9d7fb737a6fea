"""Numbers confirmed by their check digits: account and identity numbers
(memory_app/distill/identifiers.py) and payment card numbers (network prefix, length, Luhn)."""

import re
from collections.abc import Callable

from memory_app.distill import identifiers as ids
from memory_app.distill.redaction.rule import Rule, gated, marker


def _checked(test: Callable[[re.Match[str]], bool], kind: str) -> Callable[[re.Match[str]], str]:
    """A replacement that removes the match when ``test`` (its check digits) confirms it."""
    return lambda match: marker(kind) if test(match) else match.group(0)


def _named(test: Callable[[str], bool], kind: str) -> Callable[[re.Match[str]], str]:
    """For ``(name)(gap)(number)`` matches: the number removed when ``test`` confirms it."""
    return lambda m: m.group(1) + m.group(2) + marker(kind) if test(m.group(3)) else m.group(0)


# One scan decides whether the identifier rules can match at all: two digits in a row.
_DIGITS_GATE = re.compile(r"\d\d")


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


def _if_card(match: re.Match[str]) -> str:
    value = match.group(0)
    if len(set(re.findall(r"[ -]", value))) > 1:
        return value
    digits = re.sub(r"[ -]", "", value)
    return marker("card") if _card_network_length(digits) and ids.luhn_ok(digits) else value


CHECKSUM_RULES: list[Rule] = [*gated(_ID_RULES, _DIGITS_GATE), ("card", _CARD, _if_card)]
