"""The key-value view of memories (docs/integrations.md, "The store"): how a namespace below a
tier's own and a key are written into ``Memory.store_namespace`` and ``store_key``."""

from collections.abc import Sequence

from config.errors import InvalidInput
from config.validation import clean_text
from memory_app.memories.errors import ErrorCode

STORE_LABEL_MAX_CHARS = 100
STORE_NAMESPACE_MAX_CHARS = 300
STORE_KEY_MAX_CHARS = 200
STORE_EVIDENCE = "store"  # evidence key of what the store keeps about a keyed memory


def store_namespace_encode(labels: Sequence[str]) -> str:
    """A namespace below a tier's own as stored (``store_namespace``): each label followed by
    ``.``. A label is a non-empty string without ``.`` (so no label can address another
    namespace), storable text of at most ``STORE_LABEL_MAX_CHARS``; the whole at most
    ``STORE_NAMESPACE_MAX_CHARS``."""
    if not isinstance(labels, list | tuple):
        raise InvalidInput("A namespace is a list of labels.", code=ErrorCode.INVALID_NAMESPACE)
    for label in labels:
        if not isinstance(label, str) or not label or "." in label:
            raise InvalidInput(
                "Namespace labels are non-empty strings without a period.", code=ErrorCode.INVALID_NAMESPACE
            )
        if len(label) > STORE_LABEL_MAX_CHARS:
            raise InvalidInput(
                f"A namespace label is longer than {STORE_LABEL_MAX_CHARS} characters.",
                code=ErrorCode.INVALID_NAMESPACE,
            )
        clean_text(label, field="namespace label")
    encoded = "".join(f"{label}." for label in labels)
    if len(encoded) > STORE_NAMESPACE_MAX_CHARS:
        raise InvalidInput(
            f"The namespace is longer than {STORE_NAMESPACE_MAX_CHARS} characters.", code=ErrorCode.INVALID_NAMESPACE
        )
    return encoded


def store_namespace_labels(encoded: str) -> tuple[str, ...]:
    """The labels of a stored namespace (``store_namespace_encode`` undone)."""
    return tuple(encoded.split(".")[:-1]) if encoded else ()


def validate_store_key(key) -> str:
    if not isinstance(key, str) or not key:
        raise InvalidInput("key must be a non-empty string.", code=ErrorCode.INVALID_KEY)
    if len(key) > STORE_KEY_MAX_CHARS:
        raise InvalidInput(f"key is longer than {STORE_KEY_MAX_CHARS} characters.", code=ErrorCode.INVALID_KEY)
    return clean_text(key, field="key")
