"""The vector store's reads and writes: vectors copied into ``vec``, which path ranks a search, a
scope's mean vector and count, and the ranking by the index with exact re-scoring."""

import logging
import time

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from pgvector import HalfVector

from memory_app.search.embeddings import DTYPE, EmbeddingProvider
from memory_app.search.vectorstore.schema import (
    CANDIDATES,
    COLUMN,
    EF_SEARCH,
    MAX_SCAN_TUPLES,
    TABLE,
    backend,
    column_ready,
    counts_lock,
    db_key,
    halfvec_text,
    index_ready,
    scope_counts,
    scope_means,
    sql_literal,
)

logger = logging.getLogger(__name__)


def store(doc_vectors: list[tuple[int, bytes | memoryview | None]]) -> None:
    """Copy ``(document id, float32 bytes)`` just stored into the ``vec`` column (in the
    caller's transaction); nothing without the column."""
    if not doc_vectors or not column_ready():
        return
    rows = [(halfvec_text(np.frombuffer(bytes(raw), dtype=DTYPE)), doc_id) for doc_id, raw in doc_vectors if raw]
    with connection.cursor() as cursor:
        cursor.executemany(f"UPDATE {TABLE} SET {COLUMN} = %s::halfvec WHERE id = %s", rows)


def exact_docs() -> int:
    return int(getattr(settings, "MEMORY_VECTOR_EXACT_DOCS", 150_000))


def use_pgvector(n_docs: int, provider: EmbeddingProvider, *, fits_in_memory: bool = True) -> bool:
    """Whether a search over ``n_docs`` documents is ranked in PostgreSQL (module docstring);
    ``fits_in_memory``: whether their vectors fit in the in-memory path's cache."""
    chosen = backend()
    if chosen == "numpy" or connection.vendor != "postgresql":
        return False
    if chosen == "auto" and fits_in_memory and n_docs <= exact_docs():
        return False
    return index_ready(provider.model, provider.dim)


def _outdated(version_read: int, read_at: float, version: int, now: float) -> bool:
    """Whether a scope's reading (its count, its mean) must be made again: the scope has a new
    version and the reading is older than ``COUNT_MAX_AGE`` (until then it stands for them)."""
    return version_read != version and now - read_at > COUNT_MAX_AGE


MEAN_SAMPLE = 5000  # a scope's newest vectors its mean is taken over (one bounded read by the scope's index)


def mean_vector(scopes: list[tuple], model: str, dim: int) -> np.ndarray | None:
    """The mean vector of ``model`` in ``scopes`` (``(id, docs, length, version)``), None where
    they hold none: per scope ``avg(vec)`` of its newest ``MEAN_SAMPLE`` vectors (half precision,
    as the index ranks; what a large scope's documents have in common shows in any few thousand
    of them), weighted by the scope's vectors (its documents, where the sample is full). A scope
    is read again when its version changed and its last reading is older than
    ``COUNT_MAX_AGE``; the scopes to read are read in one statement."""
    now = time.monotonic()
    readings: dict[int, tuple] = {}
    stale: list[tuple[int, int]] = []
    for scope_id, _, _, version in scopes:
        with counts_lock:
            found = scope_means.get(db_key(scope_id, model))
        if found is None or _outdated(found[0], found[3], version, now):
            stale.append((scope_id, version))
        else:
            readings[scope_id] = found
    if stale:
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT s.id, COUNT(*), avg(newest.{COLUMN})::text FROM unnest(%s::bigint[]) AS s(id) "
                f"CROSS JOIN LATERAL (SELECT d.{COLUMN} FROM {TABLE} AS d WHERE d.scope_id = s.id "
                f"AND d.model = %s AND d.{COLUMN} IS NOT NULL ORDER BY d.id DESC LIMIT %s) AS newest GROUP BY s.id",
                [[scope_id for scope_id, _ in stale], model, MEAN_SAMPLE],
            )
            read = {scope_id: (n, mean) for scope_id, n, mean in cursor.fetchall()}
        with counts_lock:
            if len(scope_means) > 10_000:
                scope_means.clear()
            for scope_id, version in stale:
                n, mean = read.get(scope_id, (0, None))
                found = (version, n, HalfVector.from_text(mean).to_numpy().astype(np.float64) if n else None, now)
                scope_means[db_key(scope_id, model)] = readings[scope_id] = found
    total, weight = np.zeros(int(dim), dtype=np.float64), 0
    for scope_id, docs, _, _ in scopes:
        _, n, mean, _ = readings[scope_id]
        if mean is not None and len(mean) == int(dim):
            share = n if n < MEAN_SAMPLE else max(int(docs), n)
            total += mean * share
            weight += share
    return total / weight if weight else None


COUNT_MAX_AGE = 30.0  # seconds a scope's count stands for its later versions (a count of a big scope is not free)


def embedded_count(scopes: list[tuple], model: str) -> int:
    """Documents of ``scopes`` (``(id, docs, length, version)``) with a vector of ``model``:
    counted again when a scope's version changed and the count is older than ``COUNT_MAX_AGE``
    (it only feeds the "not embedded yet" notice)."""
    total = 0
    now = time.monotonic()
    for scope_id, _, _, version in scopes:
        key = db_key(scope_id, model)
        with counts_lock:
            found = scope_counts.get(key)
        if found is None or _outdated(found[0], found[2], version, now):
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT COUNT(*) FROM {TABLE} WHERE scope_id = %s AND model = %s", [scope_id, model])
                found = (version, cursor.fetchone()[0], now)
            with counts_lock:
                if len(scope_counts) > 10_000:
                    scope_counts.clear()
                scope_counts[key] = found
        total += found[1]
    return total


def rank(
    scope_ids: list[int],
    query_vector: np.ndarray,
    depth: int,
    *,
    model: str,
    dim: int,
    similar_to: np.ndarray | None = None,
    above: float | None = None,
) -> list[tuple[int, float]]:
    """``(document id, inner product with query_vector)`` of the ``depth`` documents of
    ``scope_ids`` that rank highest by it (approximate: HNSW), best first, scored exactly from
    their float32 vectors: the cosine similarity for a normalised query. ``above``: only
    documents whose similarity to ``similar_to`` (default: the query) is above it, before the
    ``depth`` best are taken (the engine ranks by ``dense._ranking_vector`` and measures its
    floors on the query's cosine)."""
    if not scope_ids or depth <= 0:
        return []
    dim = int(dim)
    query = halfvec_text(query_vector)
    candidates = min(max(depth, CANDIDATES), 1000)
    ef_search = max(int(getattr(settings, "MEMORY_VECTOR_EF_SEARCH", EF_SEARCH)), candidates)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
            "set_config('hnsw.ef_search', %s, true), set_config('hnsw.max_scan_tuples', %s, true)",
            [str(ef_search), str(MAX_SCAN_TUPLES)],
        )
        cursor.execute(
            f"SELECT id, vector FROM {TABLE} "
            f"WHERE model = {sql_literal(model)} AND {COLUMN} IS NOT NULL AND scope_id = ANY(%s) "
            f"ORDER BY {COLUMN}::halfvec({dim}) <#> %s::halfvec({dim}) LIMIT %s",
            [list(scope_ids), query, candidates],
        )
        found = cursor.fetchall()
        if len(found) < candidates:
            # Short: the scopes hold fewer rows, or the graph did not lead to all of them (HNSW
            # can leave a row that is far from every other one unreachable, most visibly in a
            # small scope among many). Where the scopes are small, rank them exactly instead:
            # the order expression differs from the index's, so PostgreSQL computes every
            # distance over the scopes' rows (read by the (scope, model, id) index).
            where = f"model = {sql_literal(model)} AND {COLUMN} IS NOT NULL AND scope_id = ANY(%s)"
            cursor.execute(
                f"SELECT COUNT(*) FROM (SELECT 1 FROM {TABLE} WHERE {where} LIMIT %s) AS c",
                [list(scope_ids), exact_docs() + 1],
            )
            held = cursor.fetchone()[0]
            if len(found) < held <= exact_docs():
                cursor.execute(
                    f"SELECT id, vector FROM {TABLE} WHERE {where} "
                    f"ORDER BY ({COLUMN}::halfvec({dim}) <#> %s::halfvec({dim})) + 0 LIMIT %s",
                    [list(scope_ids), query, candidates],
                )
                found = cursor.fetchall()
    if not found:
        return []
    ids = np.fromiter((row[0] for row in found), dtype=np.int64, count=len(found))
    matrix = np.vstack([np.frombuffer(bytes(row[1]), dtype=DTYPE, count=dim) for row in found])
    sims = matrix @ np.asarray(query_vector, dtype=DTYPE)
    order = np.argsort(-sims, kind="stable")
    if above is not None:
        similarity = sims if similar_to is None else matrix @ np.asarray(similar_to, dtype=DTYPE)
        order = order[similarity[order] > above]
    return [(int(ids[i]), float(sims[i])) for i in order[:depth]]
