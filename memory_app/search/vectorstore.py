"""Vectors in PostgreSQL with pgvector, for scopes too large to rank exactly in memory.

Where the ``vector`` extension is installed (migration ``0021_search_vectors_pgvector``), each
``SearchDocument`` row also holds its vector in a ``vec halfvec`` column (half precision: half
the bytes of ``vector``, the same top 10 in our measurements, docs/search.md), filled wherever a
vector is stored (``store``, called by ``index.vectors_store`` and ``embedder.embed_now``).
An HNSW index per embedding model (``ensure_index``: a partial index on
``vec::halfvec(<dim>)`` for the rows of that model, since models differ in dimension) ranks
them by inner product, which is the cosine similarity of the normalised vectors.

``rank`` reads the nearest rows of the searched scopes only: the scope filter is part of the
one SQL statement, and pgvector 0.8's iterative index scans (``hnsw.iterative_scan =
relaxed_order``) keep reading the index until enough rows of those scopes are found, so a
filter does not cost recall. The candidates are then scored again exactly from their float32
bytes, so scores are those of the in-memory path.

Which path ranks a search (``use_pgvector``), by ``MEMORY_VECTOR_BACKEND``:

- ``numpy``: always the exact in-memory ranking (``engine._VectorCache``);
- ``pgvector``: PostgreSQL whenever the column and the model's index exist;
- ``auto`` (default): PostgreSQL for searches over more than ``MEMORY_VECTOR_EXACT_DOCS``
  documents, or more than the in-memory cache holds, when it can; numpy below that (exact, and
  no round trip for small scopes).

Without the extension (SQLite, or PostgreSQL without it) nothing here does anything, and
``check --deploy`` says so (``memory_app.W001``).
"""

import hashlib
import logging
import threading
import time
from collections.abc import Callable

import numpy as np
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from pgvector import HalfVector

from memory_app.search.embeddings import DTYPE, EmbeddingProvider

logger = logging.getLogger(__name__)

BACKENDS = ("auto", "numpy", "pgvector")
TABLE = "memory_app_searchdocument"
INDEX_PREFIX = "search_document_vec_"
COLUMN = "vec"
# The graph's build settings (docs/search.md: at a million rows m 16 / ef_construction 64 gave
# recall@10 0.94 of exact, m 24 / 128 gave 1.00); ``refresh_embeddings`` rebuilds an index
# built with others (``index_outdated``).
HNSW_M = 24
HNSW_EF_CONSTRUCTION = 128
EF_SEARCH = 400  # MEMORY_VECTOR_EF_SEARCH: candidates per index scan step (docs/search.md)
# Rows read from the index per search, then scored exactly: with ``relaxed_order`` an iterative
# scan returns rows roughly, not strictly, nearest first, so the best ``depth`` are taken from
# more (docs/search.md: at 10 candidates a filtered scope's recall@10 fell to about 0.6).
CANDIDATES = 100
MAX_SCAN_TUPLES = 40_000  # rows an iterative scan may visit before it gives up on a filter
_NEGATIVE_TTL = 60.0  # seconds a "not there" answer is kept (an index may be built meanwhile)
_ready: dict[tuple, tuple[bool, float]] = {}
_ready_lock = threading.Lock()


def backend() -> str:
    value = getattr(settings, "MEMORY_VECTOR_BACKEND", "auto")
    return value if value in BACKENDS else "auto"


def index_name(model: str, dim: int) -> str:
    digest = hashlib.blake2b(model.encode("utf-8"), digest_size=5).hexdigest()
    return f"{INDEX_PREFIX}{digest}_{int(dim)}"


def _literal(value: str) -> str:
    """A string literal for the partial index's predicate, which a query must repeat as a
    literal (not a parameter) for the planner to use the index."""
    return "'" + value.replace("'", "''") + "'"


def _cached(key: tuple[object, ...], probe: Callable[[], object]) -> bool:
    now = time.monotonic()
    with _ready_lock:
        found = _ready.get(key)
    if found is not None and (found[0] or now - found[1] < _NEGATIVE_TTL):
        return found[0]
    value = bool(probe())
    with _ready_lock:
        _ready[key] = (value, now)
    return value


def reset() -> None:
    """Forget what was found about the database (tests, after a migration)."""
    with _ready_lock:
        _ready.clear()
    with _counts_lock:
        _counts.clear()
        _means.clear()


def _db_key(*parts: object) -> tuple[object, ...]:
    return (connection.alias, connection.settings_dict.get("NAME"), *parts)


def column_ready() -> bool:
    """The ``vec`` column exists (PostgreSQL with the extension, migration applied)."""
    if connection.vendor != "postgresql":
        return False

    def probe() -> bool:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name = %s AND column_name = %s",
                [TABLE, COLUMN],
            )
            return cursor.fetchone() is not None

    return _cached(_db_key("column"), probe)


def extension_available(name: str = "vector") -> bool:
    """The server offers the extension ``name`` (installed or not)."""
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = %s", [name])
        return cursor.fetchone() is not None


def extension_installed(name: str) -> bool:
    """The extension ``name`` is created in this database."""
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = %s", [name])
        return cursor.fetchone() is not None


def index_ready(model: str, dim: int) -> bool:
    if not column_ready():
        return False

    def probe() -> bool:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() AND tablename = %s AND indexname = %s",
                [TABLE, index_name(model, dim)],
            )
            return cursor.fetchone() is not None

    return _cached(_db_key("index", model, dim), probe)


def _wanted_options() -> set[str]:
    return {f"m={HNSW_M}", f"ef_construction={HNSW_EF_CONSTRUCTION}"}


def _build_options(name: str) -> set[str] | None:
    """The storage options an index was built with (``{"m=24", …}``), None if it does not exist."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND c.relname = %s AND c.relkind = 'i'",
            [name],
        )
        row = cursor.fetchone()
    return None if row is None else set(row[0] or [])


def index_outdated(model: str, dim: int) -> bool:
    """``model``'s index exists but was built with other settings than ``HNSW_M`` /
    ``HNSW_EF_CONSTRUCTION`` (an earlier release's): ``check --deploy`` says so (W004) and
    ``refresh_embeddings`` rebuilds it."""
    if not column_ready():
        return False
    built_with = _build_options(index_name(model, dim))
    return built_with is not None and built_with != _wanted_options()


def ensure_index(model: str, dim: int, *, concurrently: bool = False, rebuild: bool = False) -> bool:
    """Build the HNSW index of ``model``'s vectors if it is missing (minutes for a million
    rows: ``prepare_node`` and ``refresh_embeddings`` call it, never a request). With
    ``rebuild``, an index built with other settings (``index_outdated``) is built again beside
    the old one, which serves until the new one replaces it. Returns whether the index exists
    afterwards (False without the column)."""
    if not column_ready():
        return False
    if not 1 <= int(dim) <= 4000:  # halfvec's HNSW limit
        return False
    with _ready_lock:
        _ready.pop(_db_key("index", model, dim), None)
    name = index_name(model, dim)
    built_with = _build_options(name)
    if built_with is not None and (built_with == _wanted_options() or not rebuild):
        return True  # no DDL at all, so no lock on the table
    how = "CONCURRENTLY " if concurrently else ""
    target = f"{name}_next" if built_with is not None else name
    with connection.cursor() as cursor:
        if built_with is not None:
            logger.info("rebuilding the vector index %s (built with %s)", name, ", ".join(sorted(built_with)))
            cursor.execute(f"DROP INDEX {how}IF EXISTS {connection.ops.quote_name(target)}")  # an interrupted rebuild
        cursor.execute(
            f"CREATE INDEX {how}IF NOT EXISTS {connection.ops.quote_name(target)} ON {TABLE} "
            f"USING hnsw (({COLUMN}::halfvec({int(dim)})) halfvec_ip_ops) "
            f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) "
            f"WHERE model = {_literal(model)} AND {COLUMN} IS NOT NULL"
        )
        if target != name:
            with transaction.atomic():  # the old index serves until the new one takes its name
                cursor.execute(f"DROP INDEX {connection.ops.quote_name(name)}")
                cursor.execute(
                    f"ALTER INDEX {connection.ops.quote_name(target)} RENAME TO {connection.ops.quote_name(name)}"
                )
    with _ready_lock:
        _ready.pop(_db_key("index", model, dim), None)
    return index_ready(model, dim)


def install(model: str, dim: int, *, rebuild: bool = False) -> bool:
    """Where the server offers the extension: create it (if this role may), add the ``vec``
    column, copy the vectors already stored and build ``model``'s index. Run by migration 0018,
    ``prepare_node`` and ``refresh_embeddings``, so pgvector installed on the server later is
    taken up at the next start; ``rebuild``: as ``ensure_index``'s (``refresh_embeddings``).
    Returns whether the column exists afterwards."""
    if connection.vendor != "postgresql":
        return False
    reset()
    if not column_ready():
        if not extension_available():
            return False
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
                cursor.execute(f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS {COLUMN} halfvec")
        except DatabaseError:
            return False  # no privilege to create the extension: stay on the in-memory path
        reset()
    backfill()
    # Concurrently where it may (not inside a transaction): searches and writes go on meanwhile.
    ensure_index(model, dim, concurrently=rebuild and not connection.in_atomic_block, rebuild=rebuild)
    return column_ready()


PREWARMED_TABLES = (TABLE, "memory_app_searchposting")


def prewarm(model: str, dim: int) -> list[str]:
    """Where the operator has created the ``pg_prewarm`` extension: ask the server to read the
    search tables, their indexes and ``model``'s HNSW index into its operating system's cache
    (``prefetch`` mode: asynchronous, the call returns at once), so that the first searches
    after a restart do not read the graph from disk (docs/deploy.md). Never creates the
    extension. Returns the relations asked for (none without the extension or on SQLite)."""
    if not extension_installed("pg_prewarm"):  # also: not PostgreSQL
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_class c WHERE c.relname = ANY(%s) AND pg_table_is_visible(c.oid) "
            "UNION ALL SELECT i.relname FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid "
            "JOIN pg_class i ON i.oid = x.indexrelid WHERE t.relname = ANY(%s) AND pg_table_is_visible(t.oid)",
            [list(PREWARMED_TABLES), list(PREWARMED_TABLES)],
        )
        graph = index_name(model, dim)
        # Of the graph indexes (one per embedding model), only the one searches use.
        names = [name for (name,) in cursor.fetchall() if name == graph or not name.startswith(INDEX_PREFIX)]
    asked = []
    for name in names:
        try:  # a start never fails for this: it only saves the first searches a read from disk
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SELECT pg_prewarm(%s::regclass, 'prefetch')", [name])
        except DatabaseError as exc:
            logger.warning(
                "search relation not prefetched", extra={"relation": name, "error_class": type(exc).__name__}
            )
            continue
        asked.append(name)
    return asked


def _text(vector: np.ndarray) -> str:
    return HalfVector(np.asarray(vector, dtype=np.float32)).to_text()


def store(doc_vectors: list[tuple[int, bytes | memoryview | None]]) -> None:
    """Copy ``(document id, float32 bytes)`` just stored into the ``vec`` column (in the
    caller's transaction); nothing without the column."""
    if not doc_vectors or not column_ready():
        return
    rows = [(_text(np.frombuffer(bytes(raw), dtype=DTYPE)), doc_id) for doc_id, raw in doc_vectors if raw]
    with connection.cursor() as cursor:
        cursor.executemany(f"UPDATE {TABLE} SET {COLUMN} = %s::halfvec WHERE id = %s", rows)


def backfill(*, batch: int = 2000, progress: Callable[[int], object] | None = None) -> int:
    """Fill ``vec`` for rows that have a vector but no ``vec`` (after the extension was
    installed, or a bulk load); returns how many rows were filled."""
    if not column_ready():
        return 0
    done, last_id = 0, 0
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                f"SELECT id, vector FROM {TABLE} WHERE id > %s AND vector IS NOT NULL AND {COLUMN} IS NULL "
                "ORDER BY id LIMIT %s",
                [last_id, batch],
            )
            found = cursor.fetchall()
            if not found:
                return done
            last_id = found[-1][0]
            rows = [
                (_text(np.frombuffer(bytes(raw), dtype=DTYPE)), doc_id) for doc_id, raw in found if len(raw) % 4 == 0
            ]
            cursor.executemany(f"UPDATE {TABLE} SET {COLUMN} = %s::halfvec WHERE id = %s", rows)
        done += len(found)
        if progress is not None:
            progress(done)


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


_means: dict[tuple, tuple[int, int, np.ndarray | None, float]] = {}
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
        with _counts_lock:
            found = _means.get(_db_key(scope_id, model))
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
        with _counts_lock:
            if len(_means) > 10_000:
                _means.clear()
            for scope_id, version in stale:
                n, mean = read.get(scope_id, (0, None))
                found = (version, n, HalfVector.from_text(mean).to_numpy().astype(np.float64) if n else None, now)
                _means[_db_key(scope_id, model)] = readings[scope_id] = found
    total, weight = np.zeros(int(dim), dtype=np.float64), 0
    for scope_id, docs, _, _ in scopes:
        _, n, mean, _ = readings[scope_id]
        if mean is not None and len(mean) == int(dim):
            share = n if n < MEAN_SAMPLE else max(int(docs), n)
            total += mean * share
            weight += share
    return total / weight if weight else None


_counts: dict[tuple, tuple[int, int, float]] = {}
_counts_lock = threading.Lock()
COUNT_MAX_AGE = 30.0  # seconds a scope's count stands for its later versions (a count of a big scope is not free)


def embedded_count(scopes: list[tuple], model: str) -> int:
    """Documents of ``scopes`` (``(id, docs, length, version)``) with a vector of ``model``:
    counted again when a scope's version changed and the count is older than ``COUNT_MAX_AGE``
    (it only feeds the "not embedded yet" notice)."""
    total = 0
    now = time.monotonic()
    for scope_id, _, _, version in scopes:
        key = _db_key(scope_id, model)
        with _counts_lock:
            found = _counts.get(key)
        if found is None or _outdated(found[0], found[2], version, now):
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT COUNT(*) FROM {TABLE} WHERE scope_id = %s AND model = %s", [scope_id, model])
                found = (version, cursor.fetchone()[0], now)
            with _counts_lock:
                if len(_counts) > 10_000:
                    _counts.clear()
                _counts[key] = found
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
    ``depth`` best are taken (the engine ranks by ``engine._ranking_vector`` and measures its
    floors on the query's cosine)."""
    if not scope_ids or depth <= 0:
        return []
    dim = int(dim)
    query = _text(query_vector)
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
            f"WHERE model = {_literal(model)} AND {COLUMN} IS NOT NULL AND scope_id = ANY(%s) "
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
            where = f"model = {_literal(model)} AND {COLUMN} IS NOT NULL AND scope_id = ANY(%s)"
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
