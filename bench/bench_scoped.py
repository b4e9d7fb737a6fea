"""Benchmark of the chat/global cascade search on PostgreSQL (not part of the test suite).

    .venv/bin/python bench/bench_scoped.py [--items 1000000] [--chats 10000] [--global-items 20000]
                                           [--queries 200] [--database-url postgresql://…] [--keep]

Creates a scratch database (``bench_scoped_<pid>``) next to the one in ``--database-url``,
migrates it, bulk-loads ``--items`` chat items spread over ``--chats`` chat scopes plus
``--global-items`` global items (English/Chinese sentences, with their vectors) with COPY,
then times the cascade search (chat first, global fills the budget) per mode through the
product code, and the same candidate queries issued as raw SQL, and prints p50/p95 and the
ratio. The scratch database is dropped at the end unless ``--keep``.
"""

import argparse
import os
import random
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EN_SUBJECTS = [
    "coffee",
    "tea",
    "billing",
    "database",
    "deploy",
    "invoice",
    "backup",
    "holiday",
    "meeting",
    "python",
    "rust",
    "kubernetes",
    "garden",
    "bicycle",
    "music",
    "jazz",
    "reading",
    "running",
    "weather",
    "dinner",
    "flight",
    "hotel",
    "budget",
    "report",
    "dashboard",
    "alerting",
    "cache",
    "queue",
    "search",
    "migration",
    "laptop",
    "keyboard",
    "editor",
    "window",
    "seat",
    "movie",
]
EN_TEMPLATES = [
    "I prefer {a} over {b} in the morning",
    "My favourite {a} is the {b} one",
    "We decided to use {a} for {b}",
    "Remember to check the {a} before the {b}",
    "The {a} team owns the {b} service",
    "Always review {a} changes with {b}",
    "I usually do {a} after {b}",
    "Our {a} runs on {b} since last year",
]
ZH_SUBJECTS = [
    "咖啡",
    "绿茶",
    "计费",
    "数据库",
    "部署",
    "发票",
    "备份",
    "假期",
    "会议",
    "跑步",
    "音乐",
    "天气",
    "晚饭",
    "航班",
    "酒店",
    "预算",
    "报表",
    "缓存",
    "队列",
    "搜索",
    "迁移",
    "键盘",
    "电影",
    "自行车",
]
ZH_TEMPLATES = ["我喜欢{a}，不太喜欢{b}", "我们决定用{a}来做{b}", "每周五检查{a}和{b}", "{a}服务由{b}团队负责"]
CHAT_KINDS = ["preference", "fact", "task"]
GLOBAL_KINDS = ["decision", "procedure", "warning", "summary"]


def sentence(rng: random.Random) -> str:
    if rng.random() < 0.3:
        a, b = rng.sample(ZH_SUBJECTS, 2)
        return rng.choice(ZH_TEMPLATES).format(a=a, b=b)
    a, b = rng.sample(EN_SUBJECTS, 2)
    return rng.choice(EN_TEMPLATES).format(a=a, b=b) + f" ({rng.randint(1, 9999)})"


def admin_url(url: str, dbname: str) -> str:
    parts = urlparse(url)
    return urlunparse(parts._replace(path=f"/{dbname}"))


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=1_000_000, help="chat items in total")
    parser.add_argument("--chats", type=int, default=10_000)
    parser.add_argument("--global-items", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--pool", type=int, default=50_000, help="distinct sentences (vectors computed once each)")
    parser.add_argument(
        "--database-url", default=os.environ.get("DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
    )
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    import psycopg

    dbname = f"bench_scoped_{os.getpid()}"
    maintenance = psycopg.connect(args.database_url, autocommit=True)
    maintenance.execute(f"CREATE DATABASE {dbname}")
    bench_url = admin_url(args.database_url, dbname)
    print(f"database {dbname}: {args.items:,} chat items over {args.chats:,} chats + {args.global_items:,} global")
    try:
        run(args, bench_url)
    finally:
        if not args.keep:
            from django.db import connections

            connections.close_all()
            maintenance.execute(f"DROP DATABASE IF EXISTS {dbname} WITH (FORCE)")
            print(f"dropped {dbname}")
        maintenance.close()


def run(args, bench_url):
    os.environ["DATABASE_URL"] = bench_url
    os.environ.setdefault("SECRET_KEY", "bench-only-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from memory_app.scoped import search
    from memory_app.search.analysis import query_terms
    from memory_app.search.embeddings import get_provider, to_bytes

    t0 = time.perf_counter()
    call_command("migrate", verbosity=0)
    print(f"migrate: {time.perf_counter() - t0:.1f}s")

    rng = random.Random(42)
    provider = get_provider()
    pool = [sentence(rng) for _ in range(args.pool)]
    t0 = time.perf_counter()
    vectors = [to_bytes(v) for v in provider.embed(pool)]
    print(
        f"embedded {len(pool):,} distinct sentences ({provider.name}/{provider.model}): {time.perf_counter() - t0:.1f}s"
    )

    now = datetime.now(UTC)
    t0 = time.perf_counter()
    with connection.cursor() as cursor:
        raw = cursor.connection
        cursor.execute("DROP INDEX IF EXISTS memory_content_trgm_idx")
        picks = []
        with raw.cursor().copy(
            "COPY memory_app_memory (id, scope_type, scope_id, kind, content, status, source_thread_id, origin, "
            "metadata, evidence, created_at, updated_at) FROM STDIN"
        ) as copy:
            n = 0
            per_chat = max(1, args.items // args.chats)
            for chat in range(args.chats):
                scope_id = f"bench:private:{chat}"
                for _ in range(per_chat):
                    p = rng.randrange(len(pool))
                    picks.append(p)
                    copy.write_row(
                        (
                            f"mem_b{n:012d}",
                            "chat",
                            scope_id,
                            rng.choice(CHAT_KINDS),
                            pool[p],
                            "active",
                            "",
                            "api",
                            "{}",
                            "{}",
                            now,
                            now,
                        )
                    )
                    n += 1
            for _ in range(args.global_items):
                p = rng.randrange(len(pool))
                picks.append(p)
                copy.write_row(
                    (
                        f"mem_b{n:012d}",
                        "global",
                        "__global__",
                        rng.choice(GLOBAL_KINDS),
                        pool[p],
                        "active",
                        "",
                        "api",
                        "{}",
                        "{}",
                        now,
                        now,
                    )
                )
                n += 1
        print(f"COPY {n:,} items: {time.perf_counter() - t0:.1f}s")
        t0 = time.perf_counter()
        with raw.cursor().copy(
            "COPY memory_app_memoryembedding (memory_id, scope_type, scope_id, active, provider, model, dim, vector, "
            "created_at) FROM STDIN"
        ) as copy:
            per_chat = max(1, args.items // args.chats)
            for i, p in enumerate(picks):
                chat = i // per_chat
                scope = ("chat", f"bench:private:{chat}") if chat < args.chats else ("global", "__global__")
                copy.write_row(
                    (f"mem_b{i:012d}", *scope, True, provider.name, provider.model, provider.dim, vectors[p], now)
                )
        print(f"COPY {len(picks):,} vectors: {time.perf_counter() - t0:.1f}s")
        t0 = time.perf_counter()
        cursor.execute("SET maintenance_work_mem = '512MB'")
        cursor.execute("CREATE INDEX memory_content_trgm_idx ON memory_app_memory USING gin (content gin_trgm_ops)")
        # Django runs in autocommit mode here, so VACUUM (visibility map for index-only scans) works.
        cursor.execute("VACUUM ANALYZE memory_app_memory")
        cursor.execute("VACUUM ANALYZE memory_app_memoryembedding")
        print(f"trigram index + vacuum analyze: {time.perf_counter() - t0:.1f}s")

    # Queries: two words (or one Chinese word) of a random item of a random chat.
    qrng = random.Random(7)
    cases = []
    for _ in range(args.queries):
        chat = qrng.randrange(args.chats)
        words = [w for w in qrng.choice(pool).replace("(", " ").replace(")", " ").split() if w.isalpha()]
        query = " ".join(qrng.sample(words, min(2, len(words)))) if words else qrng.choice(ZH_SUBJECTS)
        cases.append((f"bench:private:{chat}:cron:x", query))

    def timed(fn):
        fn(*cases[0])  # warm-up (connection, caches)
        out = []
        for session, query in cases:
            start = time.perf_counter()
            fn(session, query)
            out.append((time.perf_counter() - start) * 1000)
        return out

    # The raw variants issue the same scope-filtered SELECTs in the same cascade order (global
    # only when the chat scope left budget), without ranking, fusion, caching or row mapping.
    def raw_keyword(session, query):
        chat = ":".join(session.split(":")[:3])
        terms = query_terms(query)
        if not terms:
            return 0
        found = len(search._keyword_candidates(("chat", chat), terms, search.CANDIDATE_CAP))
        if found < args.limit:
            found += len(search._keyword_candidates(("global", "__global__"), terms, search.CANDIDATE_CAP))
        return found

    qvec_cache = {}

    def raw_vector(session, query):
        import numpy as np

        chat = ":".join(session.split(":")[:3])
        qvec = qvec_cache.setdefault(query, provider.embed([query])[0])
        found = 0
        with connection.cursor() as cursor:
            for scope in (("chat", chat), ("global", "__global__")):
                if found >= args.limit:
                    break
                cursor.execute(
                    "SELECT e.memory_id, e.vector FROM memory_app_memoryembedding e "
                    "WHERE e.scope_type = %s AND e.scope_id = %s AND e.active "
                    "AND e.provider = %s AND e.model = %s",
                    [scope[0], scope[1], provider.name, provider.model],
                )
                rows = cursor.fetchall()
                if rows:
                    matrix = np.frombuffer(b"".join(bytes(r[1]) for r in rows), dtype="<f4").reshape(len(rows), -1)
                    found += min(args.limit - found, int(((matrix @ qvec) > provider.min_score).sum()))
        return found

    raw_fns = {"fts": raw_keyword, "vector": raw_vector, "hybrid": lambda s, q: (raw_keyword(s, q), raw_vector(s, q))}
    print(f"\n{args.queries} queries, limit {args.limit}; milliseconds")
    print(f"{'mode':8} {'p50':>8} {'p95':>8} {'raw p50':>8} {'raw p95':>8} {'ratio p50':>9}")
    for mode in search.MODES:
        full = timed(lambda s, q, mode=mode: search.session_search(session_id=s, query=q, limit=args.limit, mode=mode))
        rawt = timed(raw_fns[mode])
        ratio = statistics.median(full) / max(statistics.median(rawt), 1e-9)
        print(
            f"{mode:8} {percentile(full, 0.5):8.2f} {percentile(full, 0.95):8.2f} "
            f"{percentile(rawt, 0.5):8.2f} {percentile(rawt, 0.95):8.2f} {ratio:9.2f}"
        )
    print(
        "\nraw = the same scope-filtered SELECTs in cascade order, without ranking, fusion, vector cache or row mapping"
    )


if __name__ == "__main__":
    main()
