"""Benchmark of the chat/global cascade search on PostgreSQL (not part of the test suite).

    .venv/bin/python bench/bench_scoped.py [--items 1000000] [--chats 10000] [--global-items 20000]
                                           [--queries 200] [--pool 2000] [--provider e5|hashed]
                                           [--embedding-threads N] [--database-url postgresql://…] [--keep]

Creates a throwaway database (``bench_scoped_<pid>``) next to the one in ``--database-url``,
migrates it, and bulk-loads with COPY ``--items`` chat items spread evenly over ``--chats``
chat scopes plus ``--global-items`` global items, together with what the retrieval engine
keeps for them: one ``SearchScope`` per scope (document count and total length), one
``SearchDocument`` per item (length, text hash, vector of the configured provider) and the
``SearchPosting`` rows of its terms (``analysis.term_counts``). Item texts are drawn from
``--pool`` distinct English and Chinese sentences, which the provider embeds once (e5 embeds
only the pool; its vectors are kept in a file in the temporary directory for the next run).
Indexes other than primary keys and unique constraints are built after the
load, then VACUUM ANALYZE leaves statistics and the visibility map as autovacuum would.

Then it times ``scoped.search.session_search`` (own chat first, global fills the rest; the
product's ranking, row loading and filters) for ``--queries`` searches per mode, each with a
random chat's session and two words of a random item (or a Chinese word), and prints p50/p95:

  * query embedding: ``provider.embed_query`` alone, no cache (the model's cost);
  * fts, vector, hybrid: with the question's vector already cached by the provider, and
    (e5) "cold", the query-vector cache cleared before each search so the model runs; the
    engine's per-process vector cache is emptied before each row, so each chat's vectors are
    read from the database at its first search (the global scope's are read once, by a warm-up);
  * raw baseline: the engine's postings SQL (per-term index range reads, UNION ALL) in cascade
    order, and for vectors the scope's vectors read with one SELECT and ranked with numpy —
    no scope lookup, scoring, fusion, row loading or caches.
"""

import argparse
import random
import secrets
import time
from array import array
from datetime import UTC, datetime

from search_common import (
    Phases,
    add_common_arguments,
    clear_query_vector_cache,
    describe_provider,
    distinct_pool,
    django_setup,
    embed_pool,
    has_query_vector_cache,
    load_banner,
    migrate,
    percentile,
    summary,
    throwaway_database,
    time_query_embedding,
    vacuum_analyze,
)

EN_SUBJECTS = """coffee tea billing database deploy invoice backup holiday meeting python rust kubernetes
    garden bicycle music jazz reading running weather dinner flight hotel budget report dashboard
    alerting cache queue search migration laptop keyboard editor window seat movie""".split()
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
ZH_SUBJECTS = """咖啡 绿茶 计费 数据库 部署 发票 备份 假期 会议 跑步 音乐 天气 晚饭 航班 酒店 预算 报表 缓存 队列
    搜索 迁移 键盘 电影 自行车""".split()
ZH_TEMPLATES = ["我喜欢{a}，不太喜欢{b}", "我们决定用{a}来做{b}", "每周五检查{a}和{b}", "{a}服务由{b}团队负责"]
CHAT_KINDS = ["preference", "fact", "task"]
GLOBAL_KINDS = ["decision", "procedure", "warning", "summary"]
MEMORY = "memory_app_memory"
SCOPE = "memory_app_searchscope"
DOCUMENT = "memory_app_searchdocument"
POSTING = "memory_app_searchposting"
ROWS_PER_WRITE = 20_000


def sentence(rng: random.Random) -> str:
    if rng.random() < 0.3:
        a, b = rng.sample(ZH_SUBJECTS, 2)
        return rng.choice(ZH_TEMPLATES).format(a=a, b=b)
    a, b = rng.sample(EN_SUBJECTS, 2)
    return rng.choice(EN_TEMPLATES).format(a=a, b=b) + f" ({rng.randint(1, 9999)})"


def copy_text(value: str) -> str:
    """``value`` escaped for COPY's text format."""
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=1_000_000, help="chat items in total")
    parser.add_argument("--chats", type=int, default=10_000)
    parser.add_argument("--global-items", type=int, default=20_000)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--pool", type=int, default=2_000, help="distinct sentences (embedded once each)")
    add_common_arguments(parser)
    args = parser.parse_args()

    phases = Phases()
    print(load_banner(args.provider))
    with throwaway_database(args.database_url, "bench_scoped", keep=args.keep) as url:
        django_setup(url, provider=args.provider, embedding_threads=args.embedding_threads)
        run(args, phases)
    phases.total()


class Layout:
    """Which item is where: item ``n`` is memory ``mem_b<n>``, document ``n + 1``, of scope
    ``scope_of(n)``; chat ``c`` has scope id ``c + 1``, global the last id."""

    def __init__(self, chats: int, per_chat: int, global_items: int):
        self.chats, self.per_chat = chats, per_chat
        self.chat_items = chats * per_chat
        self.total = self.chat_items + global_items
        self.global_scope = chats + 1

    def scope_of(self, n: int) -> int:
        return n // self.per_chat + 1 if n < self.chat_items else self.global_scope

    @staticmethod
    def chat_key(chat: int) -> str:
        return f"bench:private:{chat}"


COPIED_MEMORY_COLUMNS = (
    "id, scope_type, scope_id, kind, content, status, source_thread_id, origin, metadata, evidence, "
    "created_at, updated_at"
)


def memory_defaults() -> tuple[str, str]:
    """The other NOT NULL columns of the memory table, with their model defaults in COPY's text
    format (``(", a, b", "\\tx\\ty")``): a column added later is filled as the ORM would fill it."""
    from memory_app.memories.models import Memory

    copied = {name.strip() for name in COPIED_MEMORY_COLUMNS.split(",")}
    columns, values = [], []
    for field in Memory._meta.concrete_fields:
        if field.column in copied or field.null:
            continue
        default = field.get_default()
        columns.append(field.column)
        values.append(("t" if default else "f") if isinstance(default, bool) else copy_text(str(default)))
    return "".join(f", {c}" for c in columns), "".join(f"\t{v}" for v in values)


def load(args, phases, provider, pool, pool_vectors, picks, layout):
    """COPY items, scopes, documents and postings; build the secondary indexes afterwards."""
    from django.db import connection

    from memory_app.search.analysis import term_counts
    from memory_app.search.index import RECIPES, text_hash

    counts = [term_counts(text) for text in pool]
    lengths = [sum(c.values()) for c in counts]
    hashes = [text_hash(text) for text in pool]
    contents = [copy_text(text) for text in pool]
    # Per pool sentence, the middle and the end of each of its posting lines.
    posting_parts = [
        [(f"\t{copy_text(term)}\t", f"\t{min(tf, 32767)}\t{lengths[p]}\n") for term, tf in counts[p].items()]
        for p in range(len(pool))
    ]
    now = datetime.now(UTC)
    stamp = now.isoformat()

    connection.ensure_connection()
    raw = connection.connection
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i "
            "JOIN pg_class t ON t.oid = i.indrelid JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE t.relname = ANY(%s) AND NOT i.indisprimary "
            "AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)",
            [[MEMORY, DOCUMENT, POSTING]],
        )
        secondary = cursor.fetchall()
        for name, _ in secondary:
            cursor.execute(f'DROP INDEX "{name}"')
        cursor.execute("SET synchronous_commit TO off")
        # Rows are consistent by construction: skip the per-row foreign key triggers.
        cursor.execute("SET session_replication_role = replica")
    print(f"    secondary indexes dropped for the load: {', '.join(name for name, _ in secondary)}")

    kind_rng = random.Random(3)

    def kind(n: int) -> str:
        return kind_rng.choice(CHAT_KINDS) if n < layout.chat_items else kind_rng.choice(GLOBAL_KINDS)

    more_columns, more_values = memory_defaults()
    with (
        phases(f"COPY {layout.total:,} items into {MEMORY}"),
        raw.cursor() as cur,
        cur.copy(f"COPY {MEMORY} ({COPIED_MEMORY_COLUMNS}{more_columns}) FROM STDIN") as copy,
    ):
        lines = []
        for n, p in enumerate(picks):
            if n < layout.chat_items:
                scope = f"chat\t{layout.chat_key(n // layout.per_chat)}"
            else:
                scope = "global\t__global__"
            lines.append(
                f"mem_b{n:012d}\t{scope}\t{kind(n)}\t{contents[p]}\tactive\t\tapi\t{{}}\t{{}}\t{stamp}\t{stamp}"
                f"{more_values}\n"
            )
            if len(lines) == ROWS_PER_WRITE:
                copy.write("".join(lines))
                lines = []
        copy.write("".join(lines))

    with phases(f"COPY {layout.chats + 1:,} scopes into {SCOPE}"):
        docs = [0] * (layout.global_scope + 1)
        total_length = [0] * (layout.global_scope + 1)
        for n, p in enumerate(picks):
            scope_id = layout.scope_of(n)
            docs[scope_id] += 1
            total_length[scope_id] += lengths[p]
        with raw.cursor() as cur, cur.copy(f"COPY {SCOPE} (id, key, docs, total_length, version) FROM STDIN") as copy:
            for scope_id in range(1, layout.global_scope + 1):
                key = (
                    "global:__global__" if scope_id == layout.global_scope else f"chat:{layout.chat_key(scope_id - 1)}"
                )
                copy.write_row((scope_id, key, docs[scope_id], total_length[scope_id], secrets.randbits(62)))

    with (
        phases(f"COPY {layout.total:,} documents with {provider.dim}-d vectors into {DOCUMENT}"),
        raw.cursor() as cur,
        cur.copy(
            f"COPY {DOCUMENT} (id, source, ref, scope_id, length, text_hash, model, vector, created_at, recipe) "
            "FROM STDIN (FORMAT BINARY)"
        ) as copy,
    ):
        copy.set_types(
            ["int8", "varchar", "varchar", "int8", "int4", "varchar", "varchar", "bytea", "timestamptz", "int2"]
        )
        recipe = RECIPES.get("memory", 0)  # the vectors are the current recipe's, as index.vectors_store stamps them
        model = provider.model
        for n, p in enumerate(picks):
            copy.write_row(
                (
                    n + 1,
                    "memory",
                    f"mem_b{n:012d}",
                    layout.scope_of(n),
                    lengths[p],
                    hashes[p],
                    model,
                    pool_vectors[p],
                    now,
                    recipe,
                )
            )

    postings = 0
    with (
        phases(f"COPY postings into {POSTING}"),
        raw.cursor() as cur,
        cur.copy(f"COPY {POSTING} (id, scope_id, term, document_id, tf, length) FROM STDIN") as copy,
    ):
        lines = []
        for n, p in enumerate(picks):
            head = f"\t{layout.scope_of(n)}"
            doc = n + 1
            for middle, tail in posting_parts[p]:
                postings += 1
                lines.append(f"{postings}{head}{middle}{doc}{tail}")
            if len(lines) >= ROWS_PER_WRITE:
                copy.write("".join(lines))
                lines = []
        copy.write("".join(lines))
    print(f"    {postings:,} postings ({postings / layout.total:.1f} per item)")

    with phases("sequences, secondary indexes, VACUUM ANALYZE"):
        with connection.cursor() as cursor:
            cursor.execute("SET session_replication_role = origin")
            for table in (SCOPE, DOCUMENT, POSTING):
                cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT MAX(id) FROM {table}))")
            cursor.execute("SET maintenance_work_mem = '512MB'")
            for name, definition in secondary:
                t0 = time.perf_counter()
                cursor.execute(definition)
                print(f"    {name}: {time.perf_counter() - t0:.1f} s", flush=True)
        vacuum_analyze()
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT relname, pg_size_pretty(pg_total_relation_size(oid)) FROM pg_class WHERE relname = ANY(%s)",
                [[MEMORY, DOCUMENT, POSTING]],
            )
            print("    sizes: " + ", ".join(f"{name} {size}" for name, size in cursor.fetchall()))


def make_cases(args, pool, layout):
    """``(session id, query)`` pairs: a random chat, two words of a random item (or a Chinese word)."""
    from memory_app.search.analysis import query_terms

    rng = random.Random(7)
    cases = []
    for _ in range(args.queries):
        chat = rng.randrange(layout.chats)
        words = [w for w in rng.choice(pool).replace("(", " ").replace(")", " ").split() if w.isascii() and w.isalpha()]
        words = [w for w in words if query_terms(w)]
        query = " ".join(rng.sample(words, min(2, len(words)))) if words else rng.choice(ZH_SUBJECTS)
        cases.append((f"{layout.chat_key(chat)}:cron:x", query))
    return cases


def run(args, phases):  # noqa: C901 - one measurement script, phase after phase
    import numpy as np
    from django.db import connection

    from memory_app.scoped import search
    from memory_app.search import engine
    from memory_app.search.analysis import query_terms
    from memory_app.search.embeddings import get_provider

    with phases("migrate"):
        migrate()
    provider = get_provider()
    print(f"embedding provider {describe_provider(provider)}")

    rng = random.Random(42)
    pool = distinct_pool(sentence, args.pool, rng)
    with phases(f"embed {len(pool):,} distinct sentences"):
        pool_vectors = embed_pool(provider, pool)
    per_chat = max(1, args.items // args.chats)
    layout = Layout(args.chats, per_chat, args.global_items)
    picks = array("I", (rng.randrange(len(pool)) for _ in range(layout.total)))
    print(
        f"{layout.chat_items:,} chat items over {args.chats:,} chats ({per_chat} each) + "
        f"{args.global_items:,} global items, texts from {len(pool):,} sentences"
    )
    load(args, phases, provider, pool, pool_vectors, picks, layout)

    cases = make_cases(args, pool, layout)
    queries = [q for _, q in cases]
    embed_ms = time_query_embedding(provider, queries)
    print(f"\nquery embedding ({provider.name}.embed_query, {len(embed_ms)} distinct queries, no cache), ms:")
    print(f"  {summary(embed_ms)}")

    warm_session = f"{layout.chat_key(layout.chats - 1)}:cron:warm"

    def timed(fn, *, cold=False):
        """ms per case, cases with a hit, share of hits from global, SQL statements of one call."""
        engine.vector_cache.clear()
        for query in dict.fromkeys(queries):  # the provider's query-vector cache
            fn(warm_session, query)
        statements = []

        def count(execute, sql, params, many, context):
            statements.append(sql)
            return execute(sql, params, many, context)

        with connection.execute_wrapper(count):
            fn(*cases[0])
        engine.vector_cache.clear()
        fn(warm_session, queries[0])  # global vectors in the cache, as in a running process
        latencies, with_hits, hits, from_global, sql_seconds = [], 0, 0, 0, [0.0]

        def clock(execute, sql, params, many, context):
            t0 = time.perf_counter()
            try:
                return execute(sql, params, many, context)
            finally:
                sql_seconds[0] += time.perf_counter() - t0

        with connection.execute_wrapper(clock):
            for session, query in cases:
                if cold:
                    clear_query_vector_cache()
                t0 = time.perf_counter()
                found = fn(session, query)
                latencies.append((time.perf_counter() - t0) * 1000)
                if isinstance(found, list):
                    hits += len(found)
                    from_global += sum(1 for hit in found if hit.scope_type == "global")
                with_hits += bool(max(found) if isinstance(found, tuple) else found)
        share = from_global / hits if hits else 0.0
        return latencies, with_hits, share, len(statements), sql_seconds[0] * 1000 / len(cases)

    scope_ids = {}
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT key, id FROM {SCOPE}")
        scope_ids.update(cursor.fetchall())
    global_id = scope_ids["global:__global__"]
    budget = getattr(engine, "POSTINGS_BUDGET", 6000)
    min_per_term = getattr(engine, "MIN_TERM_POSTINGS", 300)

    def raw_postings(scope_id, terms):
        per_term = max(min_per_term, budget // max(len(terms), 1))
        parts, params = [], []
        for i, term in enumerate(terms):
            parts.append(
                f"SELECT * FROM (SELECT {i} AS t, document_id, tf, length FROM {POSTING} "
                f"WHERE scope_id = %s AND term = %s ORDER BY document_id DESC LIMIT %s) AS p{i}"
            )
            params += [scope_id, term, per_term + 1]
        with connection.cursor() as cursor:
            cursor.execute(" UNION ALL ".join(parts), params)
            return {row[1] for row in cursor.fetchall()}

    def chat_scope(session):
        return scope_ids[f"chat:{':'.join(session.split(':')[:3])}"]

    def raw_fts(session, query):
        terms = query_terms(query)
        if not terms:
            return 0
        found = len(raw_postings(chat_scope(session), terms))
        if found < args.limit:
            found += len(raw_postings(global_id, terms))
        return found

    query_vectors = {q: np.asarray(provider.embed_query(q), dtype=np.float32) for q in dict.fromkeys(queries)}

    def raw_vector(session, query):
        vector, found = query_vectors[query], 0
        with connection.cursor() as cursor:
            for scope_id in (chat_scope(session), global_id):
                if found >= args.limit:
                    break
                cursor.execute(
                    f"SELECT vector FROM {DOCUMENT} WHERE scope_id = %s AND model = %s", [scope_id, provider.model]
                )
                rows = cursor.fetchall()
                if rows:
                    matrix = np.frombuffer(b"".join(bytes(r[0]) for r in rows), dtype="<f4").reshape(len(rows), -1)
                    found += min(args.limit - found, int(((matrix @ vector) > provider.min_score).sum()))
        return found

    raw_fns = {"fts": raw_fts, "vector": raw_vector, "hybrid": lambda s, q: (raw_fts(s, q), raw_vector(s, q))}
    cold_possible = has_query_vector_cache(provider)

    def row(label, result):
        latencies, with_hits, share_global, sql, sql_ms = result
        print(
            f"{label:44} {summary(latencies):>40} {sql:>4} {sql_ms:>7.2f} {with_hits:>5}/{len(latencies)} "
            f"{share_global:>7.0%}",
            flush=True,
        )

    print(f"\nsession_search, {len(cases)} queries per row, limit {args.limit}, ms")
    print(f"{'mode / path':44} {'milliseconds':^40} {'SQL':>4} {'SQL ms':>7} {'with hits':>10} {'global':>7}")
    figures = {}
    with phases("timed searches"):
        for mode in search.MODES:

            def product(session, query, mode=mode):
                return search.session_search(session_id=session, query=query, limit=args.limit, mode=mode)

            cached = ", query vector cached" if cold_possible and mode != "fts" else ""
            figures[mode] = timed(product)
            row(f"{mode}: session_search{cached}", figures[mode])
            if cached:
                row(f"{mode}: session_search, cold (model runs)", timed(product, cold=True))
            row(f"{mode}: raw baseline", timed(raw_fns[mode]))
    print(
        "SQL = statements of one search; SQL ms = mean time waiting for them; "
        "global = share of the results that came from the global scope; "
        "raw = postings SQL / one vector SELECT + numpy per scope in cascade order, nothing else"
    )
    print(
        "summary: "
        + ", ".join(
            f"{mode} p50 {percentile(figures[mode][0], 50):.1f} / p95 {percentile(figures[mode][0], 95):.1f} ms"
            for mode in figures
        )
        + f" (query embedding p50 {percentile(embed_ms, 50):.1f} ms on top for vector/hybrid when not cached)"
    )


if __name__ == "__main__":
    main()
