"""The pgvector path: used automatically when migration 0005 found the extension and added
the ``vec`` column; otherwise ``enabled()`` is False and vectors are ranked in numpy.

(Not exercised on machines without the extension; the portable path is the tested one.)
"""

import numpy as np
from django.db import connection

TABLE = "memory_app_memoryembedding"
_enabled: dict = {}


def enabled() -> bool:
    if connection.vendor != "postgresql":
        return False
    key = (connection.alias, connection.settings_dict.get("NAME"))
    if key not in _enabled:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM information_schema.columns WHERE table_name = %s AND column_name = 'vec'", [TABLE]
            )
            _enabled[key] = cursor.fetchone() is not None
    return _enabled[key]


def literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"


def store(rows: list[tuple[str, str, str, np.ndarray]]) -> None:
    """rows: (memory_id, provider, model, vector)."""
    with connection.cursor() as cursor:
        cursor.executemany(
            f"UPDATE {TABLE} SET vec = %s::vector WHERE memory_id = %s AND provider = %s AND model = %s",
            [(literal(vec), mid, provider, model) for mid, provider, model, vec in rows],
        )


def fill_missing(*, provider, batch_size: int = 1000) -> int:
    """Copy stored bytes into ``vec`` where it is still empty (rows written before pgvector)."""
    from memory_app.search.embeddings import from_bytes  # noqa: PLC0415

    done = 0
    while True:
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT memory_id, vector FROM {TABLE} WHERE vec IS NULL AND provider = %s AND model = %s LIMIT %s",
                [provider.name, provider.model, batch_size],
            )
            rows = cursor.fetchall()
        if not rows:
            return done
        store([(mid, provider.name, provider.model, from_bytes(raw, provider.dim)) for mid, raw in rows])
        done += len(rows)


def nearest(*, scope: tuple[str, str], query_vector: np.ndarray, provider, limit: int) -> list[tuple[str, float]]:
    """(memory_id, cosine similarity) of the scope's nearest active items, scope filter in SQL."""
    q = literal(query_vector)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT e.memory_id, 1 - (e.vec <=> %s::vector) FROM {TABLE} e "
            "WHERE e.scope_type = %s AND e.scope_id = %s AND e.active "
            "AND e.provider = %s AND e.model = %s AND e.vec IS NOT NULL "
            "ORDER BY e.vec <=> %s::vector LIMIT %s",
            [q, scope[0], scope[1], provider.name, provider.model, q, limit],
        )
        return [(mid, float(sim)) for mid, sim in cursor.fetchall()]
