"""Contact information (emails, phone numbers), removed when the setting asks for it."""

import re

from memory_app.distill.redaction.rule import Rule, marker

CONTACT_RULES: list[Rule] = [
    ("email", re.compile(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]++@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b"), marker("email")),
    (
        "phone",
        re.compile(r"(?<![\w+])\+\d{1,3}[\s.-]?(?:\(\d{1,4}\)[\s.-]?)?\d{2,4}(?:[\s.-]?\d{2,4}){1,4}(?!\w)"),
        marker("phone"),
    ),
    ("phone", re.compile(r"(?<!\d)1[3-9]\d{9}(?!\d)"), marker("phone")),
    ("phone", re.compile(r"(?<![\w(])\(?\d{3}\)?[\s.-]\d{3}[\s.-]\d{4}(?!\d)"), marker("phone")),
]
