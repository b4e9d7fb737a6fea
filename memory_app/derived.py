"""Derived data kept in step with ``Memory`` rows (search index, embeddings).

Called by the memory services inside their transaction, so a memory and what is derived
from it are written or forgotten together.
"""


def on_memories_written(*, created, changed) -> None:
    """New rows were created and/or existing rows changed status or scope."""
    from memory_app.scoped import index  # noqa: PLC0415 - avoids an import cycle

    index.index_written(created=list(created), changed=list(changed))


def on_memories_deleted(memory_ids: list[str]) -> None:
    """Rows are about to be physically deleted; remove everything derived from them."""
    from memory_app.scoped import index  # noqa: PLC0415

    index.index_deleted(list(memory_ids))
