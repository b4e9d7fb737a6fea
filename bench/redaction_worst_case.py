"""Redaction: time on adversarial text, and what it removes from ordinary text.

    .venv/bin/python bench/redaction_worst_case.py [--show]

1. Each adversarial shape is repeated to the largest size a run text can have (MAX_TEXT_CHARS,
   200 000 characters); prints seconds per shape (linear patterns stay well under a second
   each; a quadratic one would take minutes).
2. The secret corpus of tests/memory_app/distill/secret_corpus.py: forms removed (written,
   generated, held out) and look-alikes changed (target: at most 1 %).
3. False positives: redacts ordinary text that holds no secret and prints, per corpus, how many
   redactions of each kind were made (``--show`` prints each redacted piece). The corpora are
   built from what every installation has: Python's own documentation (English prose with code),
   this repository's README and docs (but the one listing the secret forms), Django's Chinese
   translations, this repository's git log (commit ids and messages), generated UUIDs and SHA-1
   commit ids, the URLs found in that English text and in Django's source, the paths of the
   installed packages' files, and look-alikes of the command-line, other-language and card
   forms (``LOOKALIKES``: flags that carry no password, order numbers, ISBNs, phone numbers,
   16-digit numbers that fail the Luhn check, password prose without a value).
"""

import hashlib
import os
import random
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django

django.setup()

from memory_app.automemory.worker import MAX_TEXT_CHARS  # noqa: E402
from memory_app.distill.redaction import redact  # noqa: E402
from tests.memory_app.distill.redaction_lookalikes import LOOKALIKES  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

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
    # Shapes aimed at the token formats and the bare-secret pass.
    "bot_ids": "12345678:",
    "hex_run": "0123456789abcdef",
    "base64_run": "aB3/",
    "base64_words": "aB3dE5fG7hJ9kL1mN2pQ ",
    "near_aws_keys": "aB3dE5fG7hJ9kL1mN2pQaB3dE5fG7hJ9kL1mN2p ",
    "dotted_tokens": "MTA4NjYxMjM0NTY3ODkwMTIzNA.",
    "key_then_word": "token aB3dE5fG7hJ9kL1m ",
    "key_then_digits": "api key 1",
    # Shapes aimed at the command-line, other-language and card rules.
    "mysql_flags": "mysql -u ",
    "curl_users": "curl -u a",
    "docker_login": "docker login -x ",
    "card_digits": "4111 ",
    "card_dashes": "4111-1111-",
    "passwort": "Passwort für ",
    "russian": "пароль от ",
    "japanese": "パスワードは",
    # Shapes aimed at the loose password values, the other languages, command lines and the
    # identifiers with check digits.
    "loose_password": "password aB3! ",
    "password_words": "password password ",
    "set_to": "set the password to ",
    "long_options": "--db-password --api-key ",
    "htpasswd": "htpasswd -b a b ",
    "piped_token": "echo aB3 | ",
    "with_token": "echo a | gh --with-token ",
    "dutch_colon": "wachtwoord a b: ",
    "arabic": "كلمة المرور ",
    "hindi": "पासवर्ड a1 ",
    "chinese_ascii": "密码a1",
    "pin": "PIN 1234 ",
    "iban_groups": "DE89 3704 ",
    "digit_groups": "2345 6789 ",
    "cn_id_digits": "110105194912310021",
    "dni_digits": "12345678Z ",
    "ssn_digits": "123-45-6789 ",
    "nino": "AB 12 34 56 C ",
    "variables": "password=$A ",
}


def english() -> str:
    # docs/auto-memory.md is left out: it spells out the secret forms on purpose.
    docs = [p for p in sorted((ROOT / "docs").glob("*.md")) if p.name != "auto-memory.md"]
    parts = [(ROOT / "README.md").read_text(), *(p.read_text() for p in docs)]
    try:
        from pydoc_data.topics import topics  # Python's language reference, as `help()` shows it
    except ImportError:
        topics = {}
    return "\n".join(parts + list(topics.values()))


def chinese() -> str:
    root = Path(django.__file__).parent
    strings = []
    for po in sorted(root.rglob("locale/zh_Han*/LC_MESSAGES/django*.po")):
        strings += re.findall(r'^msgstr(?:\[\d\])? "(.+)"$', po.read_text(), re.M)
    return "\n".join(strings)


def git_log() -> str:
    try:
        result = subprocess.run(
            ["git", "-C", str(ROOT), "log", "--format=%H %h %s%n%b"],
            check=False,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return result.stdout


def identifiers() -> str:
    rng = random.Random(1)
    lines = []
    for i in range(2000):
        a, b = uuid.UUID(int=rng.getrandbits(128), version=4), uuid.UUID(int=rng.getrandbits(128), version=4)
        sha1 = hashlib.sha1(str(i).encode()).hexdigest()
        lines.append(f"Run {a} (request {b.hex}) was fixed in commit {sha1} ({sha1[:7]}); see {str(b).upper()}.")
    return "\n".join(lines)


def urls() -> str:
    text = english() + "".join(p.read_text(errors="ignore") for p in Path(django.__file__).parent.rglob("*.py"))
    return "\n".join(f"See {url} for that." for url in sorted(set(re.findall(r"https?://[^\s\"'<>)\]`]+", text))))


def paths() -> str:
    site = Path(django.__file__).parent.parent
    return "\n".join(f"The file {os.path.join(d, f)} was changed." for d, _, files in os.walk(site) for f in files)


def lookalikes() -> str:
    return "\n".join(LOOKALIKES)


CORPORA = {
    "lookalikes": lookalikes,
    "english": english,
    "chinese": chinese,
    "git_log": git_log,
    "ids": identifiers,
    "urls": urls,
    "paths": paths,
}
_MARKER = re.compile(r"\[REDACTED:\w+\]")


def worst_case() -> None:
    print(f"Worst case ({MAX_TEXT_CHARS} characters per shape)")
    for name, unit in SHAPES.items():
        text = (unit * (MAX_TEXT_CHARS // len(unit) + 1))[:MAX_TEXT_CHARS]
        start = time.perf_counter()
        redact(text, contact_info=True)
        print(f"{name:>16}: {time.perf_counter() - start:6.3f} s")


def false_positives(show: bool) -> None:
    print("\nRedactions in ordinary text (secrets only; contact details off)")
    for name, build in CORPORA.items():
        text = build()
        lines = text.splitlines()
        start = time.perf_counter()
        changed = []
        counts: dict[str, int] = {}
        for line in lines:
            result = redact(line, contact_info=False)
            if result.counts:
                changed.append((line, result.text))
                for kind, n in result.counts.items():
                    counts[kind] = counts.get(kind, 0) + n
        elapsed = time.perf_counter() - start
        summary = ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items())) or "none"
        print(
            f"{name:>8}: {len(text):>9} chars, {len(lines):>6} lines, {len(changed):>3} changed ({summary}) {elapsed:5.2f} s"
        )
        if show:
            for before, after in changed:
                print(f"          - {before[:160]}\n          + {after[:160]}")


def corpus(show: bool) -> None:
    """The secret corpus (tests/memory_app/distill/secret_corpus.py): how many forms lose their
    secret whole, by part, and how many look-alikes come back changed."""
    from tests.memory_app.distill import secret_corpus as c

    print("\nSecret corpus (the secret must be gone whole; look-alikes must come back unchanged)")
    for name, entries in (("written", c.WRITTEN), ("generated", c.generated()), ("held-out", c.HELD_OUT)):
        missed = [e for e in entries if e.secret in redact(e.text).text]
        languages = len({e.lang for e in entries})
        print(f"{name:>10}: {len(entries) - len(missed):>3} of {len(entries):>3} removed ({languages} languages)")
        for entry in missed if show else []:
            print(f"          missed: {entry.text}")
    changed = [e for e in c.LOOKALIKES if redact(e.text, contact_info=False).counts]
    rate = len(changed) / len(c.LOOKALIKES)
    languages = len({e.lang for e in c.LOOKALIKES})
    print(
        f"lookalikes: {len(changed):>3} of {len(c.LOOKALIKES):>3} changed ({languages} languages): {rate:.1%} (target <= 1%)"
    )
    for entry in changed if show else []:
        print(f"          changed: {entry.text} -> {redact(entry.text, contact_info=False).text}")


def main() -> None:
    corpus(show="--show" in sys.argv)
    worst_case()
    false_positives(show="--show" in sys.argv)


if __name__ == "__main__":
    main()
