"""Application-generated, time-sortable TEXT ids with a type prefix (``mem_01J…``)."""

from ulid import ULID


def new_id(prefix: str) -> str:
    return f"{prefix}_{str(ULID()).lower()}"
