"""Context section 5: scoped items (chat/global) relevant to the current message, found by
the cascade search (SPEC §7). Implemented by the scope-isolation part."""


def scoped_items_section(*, run, query: str) -> str | None:
    """Return the rendered low-trust section text, or None when there is nothing to add."""
    return None
