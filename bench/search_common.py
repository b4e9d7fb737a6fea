"""Shared pieces of the search benchmarks (``bench_scoped``, ``bench_history``,
``bench_memory_search``): the throwaway PostgreSQL database, Django set-up with the chosen
embedding provider, a pool of sentences embedded once, and percentiles.

Not a benchmark itself (``scripts/bench.sh`` runs ``bench/bench_*.py`` only).
"""

import atexit
import contextlib
import hashlib
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
PROVIDERS = ("e5", "hashed")


def add_common_arguments(parser, *, queries: int = 200) -> None:
    parser.add_argument("--queries", type=int, default=queries, help="timed searches per mode")
    parser.add_argument(
        "--provider", choices=PROVIDERS, default="e5", help="embedding provider (default e5, the product default)"
    )
    parser.add_argument(
        "--embedding-threads",
        type=int,
        default=None,
        help="MEMORY_EMBEDDING_THREADS for e5 (default: the setting's own; 0 = all cores)",
    )
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", DEFAULT_DATABASE_URL))
    parser.add_argument("--keep", action="store_true", help="keep the throwaway database")


def percentile(values, pct: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))]


def summary(values) -> str:
    """``p50 / p95 / mean`` of milliseconds."""
    if not values:
        return "n=0"
    return f"p50 {percentile(values, 50):7.2f}  p95 {percentile(values, 95):7.2f}  mean {statistics.fmean(values):7.2f}"


class Phases:
    """Prints how long each phase of a run took, and the total at the end."""

    def __init__(self):
        self.start = time.perf_counter()

    @contextlib.contextmanager
    def __call__(self, label: str):
        t0 = time.perf_counter()
        yield
        print(f"  [{time.perf_counter() - t0:6.1f} s] {label}", flush=True)

    def total(self) -> None:
        print(f"total run time {time.perf_counter() - self.start:.1f} s")


def database_url_for(url: str, dbname: str) -> str:
    return urlunparse(urlparse(url)._replace(path=f"/{dbname}"))


@contextlib.contextmanager
def throwaway_database(url: str, prefix: str, *, keep: bool = False):
    """A new database next to the one of ``url``; yields its URL; dropped at the end."""
    import psycopg

    dbname = f"{prefix}_{os.getpid()}"
    maintenance = psycopg.connect(url, autocommit=True)
    maintenance.execute(f"CREATE DATABASE {dbname}")
    print(f"database {dbname} on {urlparse(url).hostname}:{urlparse(url).port or 5432}", flush=True)
    try:
        yield database_url_for(url, dbname)
    finally:
        try:
            from django.db import connections

            connections.close_all()
        except Exception:  # Django never got set up
            pass
        if keep:
            print(f"kept {dbname}")
        else:
            maintenance.execute(f"DROP DATABASE IF EXISTS {dbname} WITH (FORCE)")
            print(f"dropped {dbname}")
        maintenance.close()


def django_setup(database_url: str, *, provider: str, embedding_threads: int | None = None) -> None:
    """Production settings against ``database_url`` with ``provider``; throttling off, no
    background embedding (vectors are computed before timing), plain HTTP for the test client."""
    os.environ["DATABASE_URL"] = database_url
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.environ["API_THROTTLE"] = "off"
    os.environ["MEMORY_EMBEDDING_PROVIDER"] = provider
    os.environ["MEMORY_EMBED_IN_BACKGROUND"] = "0"
    if embedding_threads is not None:
        os.environ["MEMORY_EMBEDDING_THREADS"] = str(embedding_threads)
    os.environ.setdefault("SECRET_KEY", "bench-only-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz")
    os.environ.setdefault("DEBUG", "0")
    os.environ.setdefault("ALLOWED_HOSTS", "testserver")
    os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    if "WORKSPACE_ROOT" not in os.environ:
        workspace = tempfile.mkdtemp(prefix="memsvc-bench-ws-")
        atexit.register(shutil.rmtree, workspace, ignore_errors=True)
        os.environ["WORKSPACE_ROOT"] = workspace
    import django

    # The static files root does not exist outside a deployment; the API does not need it.
    warnings.filterwarnings("ignore", message="No directory at", category=UserWarning)
    django.setup()


def migrate() -> None:
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def describe_provider(provider) -> str:
    from django.conf import settings

    threads = ""
    if provider.name == "e5":
        threads = f", MEMORY_EMBEDDING_THREADS={getattr(settings, 'MEMORY_EMBEDDING_THREADS', None) or 'all cores'}"
    return f"{provider.name} ({provider.model}, {provider.dim}-d{threads})"


def clear_query_vector_cache() -> bool:
    """Forget the per-process cache of query vectors (the e5 provider has one); False if none."""
    from memory_app.search import embeddings

    cached = getattr(embeddings, "_cached_query_vector", None)
    if cached is None or not hasattr(cached, "cache_clear"):
        return False
    cached.cache_clear()
    return True


def has_query_vector_cache(provider) -> bool:
    """Whether ``provider.embed_query`` answers a repeated text from a cache."""
    from memory_app.search import embeddings

    return provider.name == "e5" and hasattr(getattr(embeddings, "_cached_query_vector", None), "cache_clear")


def embed_pool(provider, texts: list[str], *, batch: int = 64) -> list[bytes]:
    """Vectors (float32 bytes) of ``texts``, in batches, with a progress line.

    A slow provider's vectors are kept in a file in the temporary directory, named by the model
    and the texts, so a second run with the same pool does not embed it again."""
    from memory_app.search.embeddings import to_bytes

    digest = hashlib.blake2b("\0".join(texts).encode("utf-8"), digest_size=8).hexdigest()
    path = Path(tempfile.gettempdir()) / f"memsvc-bench-{provider.model}-{digest}.bin"
    size = provider.dim * 4
    if not provider.in_process and path.exists() and path.stat().st_size == size * len(texts):
        raw = path.read_bytes()
        print(f"    vectors of the pool read from {path}")
        return [raw[i * size : (i + 1) * size] for i in range(len(texts))]
    out: list[bytes] = []
    t0 = time.perf_counter()
    for start in range(0, len(texts), batch):
        out.extend(to_bytes(v) for v in provider.embed(texts[start : start + batch]))
        if len(texts) > batch * 4 and (start // batch) % 8 == 7:
            rate = len(out) / (time.perf_counter() - t0)
            print(f"    embedded {len(out):,}/{len(texts):,} ({rate:.1f}/s)", flush=True)
    if not provider.in_process:
        partial = path.with_suffix(".part")
        partial.write_bytes(b"".join(out))
        partial.replace(path)
    return out


def time_query_embedding(provider, queries: list[str]) -> list[float]:
    """Milliseconds of ``provider.embed_query`` per distinct query, with no cached vector."""
    out = []
    for query in dict.fromkeys(queries):
        clear_query_vector_cache()
        t0 = time.perf_counter()
        provider.embed_query(query)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def store_pool_vectors(source: str, pool_of_ref: dict[str, int], pool_texts: list[str], pool_vectors: list[bytes]):
    """Give each document of ``source`` the vector of its pool sentence, through the engine's
    ``vectors_store`` (which checks the text hash); returns how many were stored."""
    from memory_app.search.embeddings import get_provider
    from memory_app.search.index import text_hash, vectors_store
    from memory_app.search.models import SearchDocument

    model = get_provider().model
    hashes = [text_hash(text) for text in pool_texts]
    rows = list(SearchDocument.objects.filter(source=source).exclude(model=model).values_list("id", "ref"))
    stored = 0
    for start in range(0, len(rows), 1000):
        chunk = [
            (doc_id, hashes[pool_of_ref[ref]], pool_vectors[pool_of_ref[ref]])
            for doc_id, ref in rows[start : start + 1000]
            if ref in pool_of_ref
        ]
        stored += vectors_store(chunk, model=model)
    return stored


def timed(fn, questions: list[str], *, cold: bool = False, before=None) -> tuple[list[float], int, int, float]:
    """Milliseconds of ``fn(question)`` per question, how many returned something, the SQL
    statements of one call, and the mean milliseconds spent waiting for SQL per call. Every
    distinct question runs once before timing (connection, caches, query vectors); with
    ``cold`` the query-vector cache is cleared before each call; ``before()`` runs before each
    call, untimed."""
    from django.db import connection

    for question in dict.fromkeys(questions):
        fn(question)
    statements = []
    sql_seconds = [0.0]

    def count(execute, sql, params, many, context):
        statements.append(sql)
        return execute(sql, params, many, context)

    def clock(execute, sql, params, many, context):
        t0 = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            sql_seconds[0] += time.perf_counter() - t0

    if before is not None:
        before()
    with connection.execute_wrapper(count):
        fn(questions[0])
    latencies, hits = [], 0
    for question in questions:
        if cold:
            clear_query_vector_cache()
        if before is not None:
            before()
        with connection.execute_wrapper(clock):
            t0 = time.perf_counter()
            found = fn(question)
            latencies.append((time.perf_counter() - t0) * 1000)
        hits += bool(found)
    return latencies, hits, len(statements), sql_seconds[0] * 1000 / max(len(questions), 1)


def print_timing_header() -> None:
    print(f"{'mode':8} {'path':52} {'milliseconds':^40} {'SQL':>4} {'SQL ms':>7} {'with hits':>10}")


def print_timing_row(mode: str, label: str, result: tuple[list[float], int, int, float]) -> None:
    latencies, hits, sql, sql_ms = result
    print(
        f"{mode:8} {label:52} {summary(latencies):>40} {sql:>4} {sql_ms:>7.2f} {hits:>5}/{len(latencies)}",
        flush=True,
    )


def vacuum_analyze(tables: list[str] | None = None) -> None:
    """Statistics and the visibility map (index-only scans), as autovacuum would leave them;
    every table of the database without ``tables``."""
    from django.db import connection

    with connection.cursor() as cursor:
        for table in tables or [""]:
            cursor.execute(f"VACUUM ANALYZE {table}")


def distinct_pool(make, size: int, rng) -> list[str]:
    """``size`` distinct sentences from ``make(rng)`` (fewer if the generator runs dry)."""
    seen: dict[str, None] = {}
    attempts = 0
    while len(seen) < size and attempts < size * 50:
        seen.setdefault(make(rng), None)
        attempts += 1
    return list(seen)


def load_banner(provider_name: str) -> str:
    load = os.getloadavg()
    return f"provider {provider_name}; {os.cpu_count()} CPUs, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}"


def questions(pool: list[str], rng: random.Random, count: int) -> list[str]:
    """Distinct questions made of two or three words of the pool's sentences (a new text for
    the model each time)."""
    out: dict[str, None] = {}
    while len(out) < count:
        words = [w.strip(".,") for w in rng.choice(pool).split() if len(w.strip(".,")) > 3]
        if len(words) >= 2:
            out.setdefault(" ".join(rng.sample(words, min(len(words), rng.randint(2, 3)))) + f" {len(out)}", None)
    return list(out)


@contextlib.contextmanager
def test_database():
    """A test database made by Django's test runner machinery for the settings in use (SQLite in
    memory unless ``DATABASE_URL`` is set), dropped afterwards: what the evaluations ask against."""
    from django.db import connection, connections
    from django.test.utils import setup_test_environment

    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        yield connection
    finally:
        connections.close_all()
        connection.creation.destroy_test_db(old_name, verbosity=0)
