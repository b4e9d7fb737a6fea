"""Redaction time on adversarial text of the largest size a run can have (MAX_TEXT_CHARS).

    .venv/bin/python bench/redaction_worst_case.py

Each shape is repeated to 200 000 characters; prints seconds per shape (linear patterns stay
well under a second each; a quadratic one would take minutes).
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django

django.setup()

from memory_app.automemory.redaction import redact  # noqa: E402
from memory_app.automemory.worker import MAX_TEXT_CHARS  # noqa: E402

SHAPES = {
    "prose": "We decided to use PostgreSQL for billing and the token is kept in the vault. ",
    "long_word": "a",
    "key_like_word": "x_password_",
    "dotted_words": "a.password.",
    "open_quote": 'password: "a ',
    "url_userinfo": "x://a:b",
    "ado_server": "server=a;",
    "query_params": "?token",
    "config_lines": "password: x\n",
    "prose_gap": "password for a ",
    "chinese": "密码为“",
    "phone_like": "+1 ",
    "cookie_lines": "cookie: a\n",
}


def main() -> None:
    for name, unit in SHAPES.items():
        text = (unit * (MAX_TEXT_CHARS // len(unit) + 1))[:MAX_TEXT_CHARS]
        start = time.perf_counter()
        redact(text, contact_info=True)
        print(f"{name:>14}: {time.perf_counter() - start:6.3f} s for {len(text)} chars")


if __name__ == "__main__":
    main()
