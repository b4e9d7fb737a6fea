"""What of the vector store exists in the database: the ``vec`` column, the extension, each model's
HNSW index (built, rebuilt when its options change), the backfill of the column, the prefetch of
the search relations, and what this process remembers of them (``reset`` forgets it)."""

import hashlib
import logging
import threading
import time
from collections.abc import Callable

import numpy as np
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from pgvector import HalfVector

from memory_app.search.embeddings import DTYPE

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


def sql_literal(value: str) -> str:
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
    with counts_lock:
        scope_counts.clear()
        scope_means.clear()


def db_key(*parts: object) -> tuple[object, ...]:
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

    return _cached(db_key("column"), probe)


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

    return _cached(db_key("index", model, dim), probe)


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
        _ready.pop(db_key("index", model, dim), None)
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
            f"WHERE model = {sql_literal(model)} AND {COLUMN} IS NOT NULL"
        )
        if target != name:
            with transaction.atomic():  # the old index serves until the new one takes its name
                cursor.execute(f"DROP INDEX {connection.ops.quote_name(name)}")
                cursor.execute(
                    f"ALTER INDEX {connection.ops.quote_name(target)} RENAME TO {connection.ops.quote_name(name)}"
                )
    with _ready_lock:
        _ready.pop(db_key("index", model, dim), None)
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


# What this process remembers of each scope: its mean vector and its count of embedded rows
# (``queries.mean_vector``, ``queries.embedded_count``), emptied by ``reset``.
scope_means: dict[tuple, tuple[int, int, np.ndarray | None, float]] = {}
scope_counts: dict[tuple, tuple[int, int, float]] = {}
counts_lock = threading.Lock()


def halfvec_text(vector: np.ndarray) -> str:
    return HalfVector(np.asarray(vector, dtype=np.float32)).to_text()


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
                (halfvec_text(np.frombuffer(bytes(raw), dtype=DTYPE)), doc_id)
                for doc_id, raw in found
                if len(raw) % 4 == 0
            ]
            cursor.executemany(f"UPDATE {TABLE} SET {COLUMN} = %s::halfvec WHERE id = %s", rows)
        done += len(found)
        if progress is not None:
            progress(done)
