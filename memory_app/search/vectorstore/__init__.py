"""Vectors in PostgreSQL with pgvector, for scopes too large to rank exactly in memory: what exists
in the database (``schema``) and the reads and writes (``queries``); callers import from here.

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

- ``numpy``: always the exact in-memory ranking (``vectorcache._VectorCache``);
- ``pgvector``: PostgreSQL whenever the column and the model's index exist;
- ``auto`` (default): PostgreSQL for searches over more than ``MEMORY_VECTOR_EXACT_DOCS``
  documents, or more than the in-memory cache holds, when it can; numpy below that (exact, and
  no round trip for small scopes).

Without the extension (SQLite, or PostgreSQL without it) nothing here does anything, and
``check --deploy`` says so (``memory_app.W001``).
"""

from memory_app.search.vectorstore.queries import (
    COUNT_MAX_AGE,
    MEAN_SAMPLE,
    embedded_count,
    exact_docs,
    mean_vector,
    rank,
    store,
    use_pgvector,
)
from memory_app.search.vectorstore.schema import (
    BACKENDS,
    CANDIDATES,
    COLUMN,
    EF_SEARCH,
    HNSW_EF_CONSTRUCTION,
    HNSW_M,
    INDEX_PREFIX,
    MAX_SCAN_TUPLES,
    PREWARMED_TABLES,
    TABLE,
    backend,
    backfill,
    column_ready,
    db_key,
    ensure_index,
    extension_available,
    extension_installed,
    halfvec_text,
    index_name,
    index_outdated,
    index_ready,
    install,
    prewarm,
    reset,
    sql_literal,
)

__all__ = [
    "BACKENDS",
    "CANDIDATES",
    "COLUMN",
    "COUNT_MAX_AGE",
    "EF_SEARCH",
    "HNSW_EF_CONSTRUCTION",
    "HNSW_M",
    "INDEX_PREFIX",
    "MAX_SCAN_TUPLES",
    "MEAN_SAMPLE",
    "PREWARMED_TABLES",
    "TABLE",
    "backend",
    "backfill",
    "column_ready",
    "db_key",
    "embedded_count",
    "ensure_index",
    "exact_docs",
    "extension_available",
    "extension_installed",
    "halfvec_text",
    "index_name",
    "index_outdated",
    "index_ready",
    "install",
    "mean_vector",
    "prewarm",
    "rank",
    "reset",
    "sql_literal",
    "store",
    "use_pgvector",
]
