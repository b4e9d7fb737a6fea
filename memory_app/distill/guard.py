"""The secret guard of the writes agents make through the integrations (docs/integrations.md):
a text that holds a credential is refused, not stored, since memories reach agents' context."""

import re

from config.errors import InvalidInput
from memory_app.distill.errors import ErrorCode
from memory_app.distill.redaction import redact

# What redaction left in a text: a mark, not a secret ("my api key is [REDACTED:api_key]").
_MARKER = re.compile(r"\[REDACTED:[a-z_]+\]")


def refuse_secrets(text: str) -> None:
    """Raise ``InvalidInput`` (``contains_secret``) when ``text`` holds a password, a key, a
    token or a connection string (what redaction removes, contact details aside)."""
    found = redact(_MARKER.sub("", text), contact_info=False).counts
    if found:
        raise InvalidInput(
            f"The text looks like it holds a secret ({', '.join(sorted(found))}); memories reach agents' "
            "context, so it was not stored. Keep secrets in a secret store.",
            code=ErrorCode.CONTAINS_SECRET,
        )
