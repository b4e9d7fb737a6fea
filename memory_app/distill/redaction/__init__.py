"""Secrets are removed from conversation text before anything is extracted (docs/auto-memory.md).

Redacted text is what the extractor sees, so no secret can reach a memory or the log.
Order matters: whole blocks (private keys, connection strings) first, then header and
key=value forms (in English, Chinese and other languages), command-line credentials, payment
card numbers, then bare token formats, then (by setting) contact information.

The rules live by job: ``keyed`` (key, header and English/Chinese phrase forms), ``languages``
(the word for password in other languages), ``command_line``, ``checksums`` (identity numbers
and cards), ``tokens`` (known token formats), ``contact`` (by setting), ``bare`` (random-looking
secrets); ``pipeline`` runs them in that order.
"""

from memory_app.distill.redaction.pipeline import Redacted, redact, redact_strings
from memory_app.distill.redaction.rule import marker

__all__ = ["Redacted", "marker", "redact", "redact_strings"]
