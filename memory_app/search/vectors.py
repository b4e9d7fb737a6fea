"""Nearest vectors within one scope: pgvector in SQL where installed, else numpy over the
scope's stored vectors, cached per process.

Only the scope's vector ids are read on each query; the vectors themselves (immutable per
stored row) are cached per process and scope.
"""

import threading
from collections import OrderedDict

import numpy as np
from django.db import connection

from memory_app.search import pgvector
from memory_app.search.embeddings import EmbeddingProvider, from_bytes
from memory_app.search.models import MemoryEmbedding


class _VectorCache:
    """Per-process cache of a scope's vector matrix, keyed by the ids of its stored vectors.

    A stored vector row is never updated in place, so equal key lists mean equal matrices;
    the id list itself is read fresh (scope-filtered) on every query.
    """

    def __init__(self, max_scopes: int = 64):
        self.max_scopes = max_scopes
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key, embedding_ids: tuple):
        with self._lock:
            entry = self._data.get(key)
            if entry is not None and entry[0] == embedding_ids:
                self._data.move_to_end(key)
                return entry[1], entry[2]
        return None

    def put(self, key, embedding_ids: tuple, memory_ids: list, matrix: np.ndarray):
        with self._lock:
            self._data[key] = (embedding_ids, memory_ids, matrix)
            self._data.move_to_end(key)
            while len(self._data) > self.max_scopes:
                self._data.popitem(last=False)

    def clear(self):
        with self._lock:
            self._data.clear()


vector_cache = _VectorCache()


def scope_vectors(scope: tuple[str, str], provider: EmbeddingProvider):
    # Plain cursor: this runs on every vector query and reads the whole scope's id list
    # (an index-only scan of embedding_scope_idx on PostgreSQL); model rows cost too much here.
    # A model has one dimension; each vector's size is checked below.
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, memory_id FROM {MemoryEmbedding._meta.db_table} WHERE scope_type = %s AND scope_id = %s "
            "AND active = %s AND provider = %s AND model = %s ORDER BY id",
            [scope[0], scope[1], True, provider.name, provider.model],
        )
        pairs = [tuple(row) for row in cursor.fetchall()]
    # Keyed by (vector id, item id): item ids are never reused, so even a vector id reused
    # after a rolled-back insert (SQLite) cannot bring back a stale vector.
    embedding_ids = tuple(pairs)
    key = (connection.alias, connection.settings_dict.get("NAME"), scope, provider.name, provider.model)
    cached = vector_cache.get(key, embedding_ids)
    if cached is not None:
        return cached
    vectors = (
        dict(MemoryEmbedding.objects.filter(id__in=[p[0] for p in pairs]).values_list("id", "vector")) if pairs else {}
    )
    # Rows that vanished between the two reads (or of another dimension) are dropped.
    size = provider.dim * 4
    kept = [(eid, mid) for eid, mid in pairs if eid in vectors and len(vectors[eid]) == size]
    memory_ids = [mid for _, mid in kept]
    matrix = (
        np.vstack([from_bytes(vectors[eid], provider.dim) for eid, _ in kept])
        if kept
        else np.zeros((0, provider.dim), dtype=np.float32)
    )
    if len(kept) == len(pairs):
        vector_cache.put(key, embedding_ids, memory_ids, matrix)
    return memory_ids, matrix


def nearest(
    *, scope: tuple[str, str], query_vector, provider: EmbeddingProvider, limit: int
) -> list[tuple[str, float]]:
    """``(row id, cosine similarity)`` of the ``limit`` nearest active vectors of ``scope``,
    best first, above the provider's ``min_score``."""
    if limit <= 0:
        return []
    if pgvector.enabled():
        found = pgvector.nearest(scope=scope, query_vector=query_vector, provider=provider, limit=limit)
        return [(mid, sim) for mid, sim in found if sim > provider.min_score]
    memory_ids, matrix = scope_vectors(scope, provider)
    if not memory_ids:
        return []
    sims = matrix @ query_vector
    k = min(limit, len(memory_ids))
    top = np.argpartition(-sims, k - 1)[:k]
    top = top[np.argsort(-sims[top], kind="stable")]
    return [(memory_ids[i], float(sims[i])) for i in top if sims[i] > provider.min_score]
