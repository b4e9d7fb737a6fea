"""Benchmark of identity memory search on PostgreSQL: ``GET /api/users/me/memories?q=…``.

    .venv/bin/python bench/bench_memory_search.py [--memories 10000] [--queries 200]
                                                  [--provider e5|hashed] [--vectors pool|pending]
                                                  [--pool 2000] [--embedding-threads N]
                                                  [--database-url postgresql://…] [--keep]
                                                  [--server] [--calls 150] [--timeline]

Creates a throwaway database (dropped at the end) and one user with ``--memories`` active
user-tier memories (English and Chinese statements drawn from ``--pool`` distinct sentences,
seeded), indexed by the engine as ``memory_create`` does (``derived.on_memories_written``,
here in batches of 500 after a ``bulk_create``). Then, per engine mode (``MEMORY_SEARCH_MODE``
overridden), it times

  * the API list endpoint through the in-process test client with an API token (authentication,
    visibility, the engine, the ranked page of 50 and its count, serialization), and
  * ``engine.search`` alone with the parameters the list filter uses (limit and depth 100),

for ``--queries`` questions, and prints p50/p95. A last row times hybrid API searches each made
right after a new memory of the user (``memory_create``, untimed): the scope changed, so the
engine's per-process vector cache of the scope is rebuilt.

``--server`` measures instead through the production server, as ``make serve`` starts it
(gunicorn, DEBUG off, throttling off, ``MEMORY_SEARCH_MODE`` = each mode): one keep-alive
client calls ``GET /api/users/me/memories?q=`` ``--calls`` times per mode, each time with a
question never asked before (two or three words of the pool's sentences, so with e5 the model
embeds it in the request), after 10 warm-up calls with other questions, and prints p50/p95
beside the target (p95 ≤ 30 ms at 1,000 memories, hybrid), then the model's time alone on the
texts it embedded for the hybrid calls (how fast this machine is, and how much of a call is the
model's).

``--timeline`` instead times, in this process (the test client, production settings), where a
hybrid list search with a new question spends its time: when the question goes to the model and
when the model's call begins and ends, how long the request waits for the vector, and what comes
after the meaning ranking (the page's rows, their serialization, the JSON), p50 and p95 over
``--calls`` calls.

Vectors exist before timing: the hashed provider embeds while indexing; for e5,
``--vectors pool`` (default) embeds the pool once (kept in a file in the temporary directory
for the next run) and gives each memory the vector of its sentence, ``--vectors pending`` runs ``embedder.embed_pending`` over every memory as the
worker would. Dense and hybrid searches are timed with the question's vector cached by the
provider and cold (cache cleared before each search, so the model runs); ``embed_query`` alone
is printed too.
"""

import argparse
import json
import os
import random
import shutil
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

from search_common import (
    Phases,
    add_common_arguments,
    describe_provider,
    distinct_pool,
    django_setup,
    embed_pool,
    has_query_vector_cache,
    load_banner,
    migrate,
    percentile,
    print_timing_header,
    print_timing_row,
    questions,
    store_pool_vectors,
    summary,
    throwaway_database,
    time_query_embedding,
    timed,
    vacuum_analyze,
)
from server_common import Client, Server, server_env

TECH = ["PostgreSQL 17", "Redis", "Kafka", "SQLite", "Django", "FastAPI", "Kubernetes", "Terraform", "Rust", "Go"]
AREAS = ["all new services", "the billing system", "the search backend", "internal tools", "the mobile app"]
AREAS += ["data pipelines", "the analytics dashboard", "background jobs", "the public API", "logging"]
PREFS = ["short answers", "code examples", "bullet points", "a formal tone", "metric units", "dark mode"]
PREFS += ["window seats", "vegetarian food", "morning meetings", "written summaries"]
CONTEXTS = ["code reviews", "long flights", "weekly reports", "team meetings", "travel plans", "emails"]
CITIES = ["Berlin", "Kyoto", "Lisbon", "Toronto", "Shanghai", "Nairobi", "Oslo", "Austin", "Seoul", "Lyon"]
PEOPLE = ["my sister", "my manager", "Dr. Lee", "my landlord", "grandma", "the accountant", "my coach"]
MONTHS = ["January", "March", "May", "July", "September", "November"]
FOODS = ["peanuts", "shellfish", "gluten", "lactose", "kiwi", "sesame"]
DRINKS = ["black coffee", "green tea", "oat milk lattes", "sparkling water", "jasmine tea"]
TOOLS = ["Neovim", "VS Code", "Emacs", "PyCharm", "Helix"]
LANGS = ["Python", "TypeScript", "Rust", "Go", "SQL"]
EN = [
    "Decided to use {tech} for {area}",
    "Prefers {pref} in {context}",
    "Lives in {city} and works remotely",
    "Allergic to {food}; avoid it when suggesting restaurants",
    "The birthday of {person} is on {month} {day}",
    "Meets {person} every {month} to review {area}",
    "Uses {tool} as the main editor for {lang} projects",
    "Planning a trip to {city} in {month}",
    "Drinks {drink} every morning",
    "Asked to be reminded about {area} before {context}",
    "Moved {area} from {tech} to {tech2} last {month}",
]
ZH_DRINKS = ["咖啡", "绿茶", "乌龙茶", "豆浆", "热巧克力"]
ZH_CITIES = ["上海", "北京", "杭州", "成都", "深圳", "京都"]
ZH_AREAS = ["计费系统", "搜索服务", "数据库迁移", "移动应用", "报表"]
ZH = [
    "我喜欢喝{drink}",
    "决定在{area}上使用{tech}",
    "住在{city}，周末喜欢爬山",
    "{month}要去{city}旅行",
    "每周五检查{area}",
    "对{food}过敏",
]
QUESTIONS = [
    "which database did I pick",
    "database",
    "what did I decide about the billing system",
    "where do I live",
    "when is my sister's birthday",
    "what editor do I use for Python",
    "food allergies",
    "what do I drink in the morning",
    "trip to Kyoto",
    "how should answers be formatted in code reviews",
    "what runs the background jobs",
    "Kafka",
    "我喜欢喝什么",
    "我住在哪里",
    "数据库迁移用什么",
    "去哪里旅行",
]
MODES = ("lexical", "dense", "hybrid")
TARGET_P95_MS = 30.0  # list search through the server, 1,000 memories, a new query per call


def sentence(rng: random.Random) -> str:
    if rng.random() < 0.2:
        return rng.choice(ZH).format(
            drink=rng.choice(ZH_DRINKS),
            area=rng.choice(ZH_AREAS),
            tech=rng.choice(TECH),
            city=rng.choice(ZH_CITIES),
            month=f"{rng.randint(1, 12)}月",
            food=rng.choice(["花生", "海鲜", "牛奶"]),
        )
    tech, tech2 = rng.sample(TECH, 2)
    return rng.choice(EN).format(
        tech=tech,
        tech2=tech2,
        area=rng.choice(AREAS),
        pref=rng.choice(PREFS),
        context=rng.choice(CONTEXTS),
        city=rng.choice(CITIES),
        person=rng.choice(PEOPLE),
        month=rng.choice(MONTHS),
        day=rng.randint(1, 28),
        food=rng.choice(FOODS),
        drink=rng.choice(DRINKS),
        tool=rng.choice(TOOLS),
        lang=rng.choice(LANGS),
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=10_000, help="active memories of the one user")
    parser.add_argument("--pool", type=int, default=2_000, help="distinct sentences (embedded once)")
    parser.add_argument("--vectors", choices=("pool", "pending"), default="pool")
    parser.add_argument("--server", action="store_true", help="through gunicorn, a new question per call")
    parser.add_argument("--calls", type=int, default=150, help="calls per mode with --server or --timeline")
    parser.add_argument("--timeline", action="store_true", help="in process: where a hybrid search's time goes")
    add_common_arguments(parser)
    args = parser.parse_args()

    phases = Phases()
    print(load_banner(args.provider))
    with throwaway_database(args.database_url, "bench_memory_search", keep=args.keep) as url:
        django_setup(url, provider=args.provider, embedding_threads=args.embedding_threads)
        if args.server:
            through_server(args, phases, url)
        elif args.timeline:
            timeline(args, phases)
        else:
            run(args, phases)
    phases.total()


def load(args, phases):
    """Migrate; one user with ``--memories`` indexed memories whose vectors are stored; returns
    the user, an API token of theirs and the pool of sentences."""

    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from identity_app.services import token_issue
    from memory_app.memories import derived
    from memory_app.memories.models import IDENTITY_KINDS, Memory, Tier
    from memory_app.search import embedder
    from memory_app.search.embeddings import get_provider

    with phases("migrate"):
        migrate()
    provider = get_provider()
    print(f"embedding provider {describe_provider(provider)}")
    kinds = sorted(IDENTITY_KINDS)

    rng = random.Random(11)
    user = get_user_model().objects.create_user(username="alice")
    _, key = token_issue(user=user, name="bench")
    pool = distinct_pool(sentence, args.pool, rng)
    picks = [rng.randrange(len(pool)) for _ in range(args.memories)]
    pool_of_ref: dict[str, int] = {}
    with connection.cursor() as cursor:  # a scratch database: commits need not wait for the disk
        cursor.execute("SET synchronous_commit TO off")
    with phases(f"create and index {args.memories:,} memories ({len(pool):,} distinct texts)"):
        for start in range(0, len(picks), 500):
            with transaction.atomic():
                created = Memory.objects.bulk_create(
                    Memory(
                        scope_type=Tier.USER,
                        scope_id=str(user.pk),
                        owner=user,
                        kind=rng.choice(kinds),
                        content=pool[p],
                        created_by=user,
                    )
                    for p in picks[start : start + 500]
                )
                derived.on_memories_written(created=created)
            pool_of_ref.update({m.pk: p for m, p in zip(created, picks[start : start + 500], strict=True)})

    pending = embedder.pending_count(provider=provider)
    if pending and args.vectors == "pending":
        with phases(f"embed_pending: {pending:,} documents"):
            embedder.embed_pending(provider=provider, batch_size=64)
    elif pending:
        with phases(f"embed {len(pool):,} pool sentences once"):
            vectors = embed_pool(provider, pool)
        with phases("store each memory's vector (vectors_store)"):
            stored = store_pool_vectors(derived.SOURCE, pool_of_ref, pool, vectors)
        print(f"    {stored:,} vectors stored")
    print(f"documents without a vector of {provider.model}: {embedder.pending_count(provider=provider)}")
    with phases("VACUUM ANALYZE"):
        vacuum_analyze()
    return user, key, pool


def through_server(args, phases, url):
    """``--server``: each mode through gunicorn, a new question per call."""
    temp = Path(tempfile.mkdtemp(prefix="memsvc-bench-list-"))
    workspace = temp / "workspaces"
    workspace.mkdir()
    os.environ["WORKSPACE_ROOT"] = str(workspace)
    os.environ["ALLOWED_HOSTS"] = "127.0.0.1,localhost,testserver"
    from memory_app.memories.filters import FLOORED
    from memory_app.search import engine
    from memory_app.search.embeddings import get_provider

    _, key, pool = load(args, phases)
    english = [text for text in pool if text.isascii()]
    asked = questions(english, random.Random(5), (10 + args.calls) * len(MODES))
    provider = get_provider()

    def embedded(query: str) -> str:  # what the model embeds: the question, or with its words in Chinese
        return engine.meaning_text(query, query, FLOORED, provider)[3]

    def translated(query: str) -> bool:
        return embedded(query) != query

    figures, split, hybrid_texts = {}, {}, []
    try:
        for mode in MODES:
            env = server_env(url, temp, workspace, args.provider, metrics_dir=f"prometheus-{mode}")
            env.update(MEMORY_SEARCH_MODE=mode, LOG_LEVEL="WARNING")
            server = Server(env=env, log_path=temp / "server.log")
            try:
                with phases(f"start the server ({mode})"):
                    server.start()
                client = Client(server.host, server.port, {"Authorization": f"Token {key}"})
                latencies, errors, hits = [], 0, 0
                by_kind: dict[bool, list[float]] = {True: [], False: []}
                for i in range(10 + args.calls):
                    query = asked.pop()
                    path = "/api/users/me/memories?" + urlencode({"q": query})
                    started = time.perf_counter()
                    status, payload = client.request("GET", path)
                    if i >= 10:
                        latencies.append((time.perf_counter() - started) * 1000)
                        by_kind[translated(query)].append(latencies[-1])
                        if mode == "hybrid":
                            hybrid_texts.append(embedded(query))
                        errors += status != 200
                        hits += status == 200 and bool(json.loads(payload)["results"])
                client.close()
                figures[mode] = (latencies, errors, hits)
                split[mode] = by_kind
            finally:
                server.stop()
    except RuntimeError:
        print((temp / "server.log").read_text(errors="replace")[-3000:])
        raise
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    print(
        f"\nGET /api/users/me/memories?q= through gunicorn, {args.memories:,} memories, "
        f"a new question per call ({args.calls} calls per mode, one keep-alive client)"
    )
    for mode, (latencies, errors, hits) in figures.items():
        p95 = percentile(latencies, 95)
        target = f"  (target <= {TARGET_P95_MS:.0f} ms: {'met' if p95 <= TARGET_P95_MS else 'SHORT'})"
        print(
            f"  {mode:8} p50 {percentile(latencies, 50):6.1f} ms  p95 {p95:6.1f} ms"
            f"{target if mode == 'hybrid' else ''}  with hits {hits}/{len(latencies)}"
            f"{'  errors ' + str(errors) if errors else ''}"
        )
    if args.provider == "e5":
        print("  by question, hybrid (a short keyword query is embedded with its words in Chinese: more tokens):")
        for kind, label in ((False, "embedded as asked"), (True, "with its translation")):
            part = split["hybrid"][kind]
            if part:
                print(
                    f"    {label:22} {len(part):4} calls  p50 {percentile(part, 50):6.1f} ms"
                    f"  p95 {percentile(part, 95):6.1f} ms"
                )
        # How much of a call is the model's, on this machine: the same texts, embedded here alone.
        from memory_app.search.embeddings import E5Embedding

        model, alone = E5Embedding._model(), []
        for text in hybrid_texts:
            t0 = time.perf_counter()
            model.query(text)
            alone.append((time.perf_counter() - t0) * 1000)
        if alone:
            print(
                f"  the model alone on the hybrid calls' texts (in this process, the servers stopped): "
                f"p50 {percentile(alone, 50):.1f} ms, p95 {percentile(alone, 95):.1f} ms"
            )


def timeline(args, phases):
    """``--timeline``: the stages of a hybrid list search with a new question, in this process."""
    from django.test import Client
    from django.test.utils import override_settings
    from rest_framework.renderers import JSONRenderer

    from config.api import output, pagination
    from memory_app.search import engine
    from memory_app.search.embeddings import E5Embedding, get_provider

    _, key, pool = load(args, phases)
    if get_provider().in_process:
        raise SystemExit("--timeline: the model must embed on its helper thread (--provider e5)")
    stamps: dict[str, float] = {}  # ms from the request's start, or (a "took" entry) ms in all
    started = [0.0]

    def now() -> float:
        return (time.perf_counter() - started[0]) * 1000

    def around(owner, name, before=None, after=None, took=None):
        plain = getattr(owner, name)

        def wrapper(*a, **k):
            t0 = now()
            if before:
                stamps.setdefault(before, t0)
            try:
                return plain(*a, **k)
            finally:
                if after:
                    stamps[after] = now()
                if took:
                    stamps[took] = stamps.get(took, 0.0) + now() - t0

        setattr(owner, name, wrapper)

    around(engine, "embed_query_soon", before="handed to the model")
    around(E5Embedding._model(), "query", before="the model's call begins", after="the model's call ends")
    plain_dense = engine.dense_rank

    def dense_rank(*a, **k):
        stamps["the words done, the meaning ranking starts"] = now()
        if k.get("pending") is not None:
            k["pending"].result()
            stamps["the vector in hand"] = now()
        try:
            return plain_dense(*a, **k)
        finally:
            stamps["the meaning ranking done"] = now()

    engine.dense_rank = dense_rank
    around(pagination.FirstPageCounts, "page", took="the page's rows")
    around(output.PlannedListSerializer, "to_representation", took="their serialization")
    around(JSONRenderer, "render", took="the JSON")
    spans = {
        "the model's call": ("the model's call begins", "the model's call ends"),
        "the request waits for the vector": ("the words done, the meaning ranking starts", "the vector in hand"),
        "after the meaning ranking": ("the meaning ranking done", "the whole request"),
    }
    totals = {"the page's rows", "their serialization", "the JSON", *spans}
    english = [text for text in pool if text.isascii()]
    asked = questions(english, random.Random(5), 20 + args.calls)
    client = Client(HTTP_AUTHORIZATION=f"Token {key}")
    rows = []
    with override_settings(MEMORY_SEARCH_MODE="hybrid"), phases(f"{args.calls} searches"):
        for i, query in enumerate(asked):
            stamps.clear()
            started[0] = time.perf_counter()
            response = client.get("/api/users/me/memories?" + urlencode({"q": query}))
            if response.status_code != 200:
                raise SystemExit(f"{response.status_code} {response.content[:300]!r}")
            stamps["the whole request"] = now()
            # The first 20 warm the process up; a search the model did not run for is left out.
            if i >= 20 and all(stamp in stamps for pair in spans.values() for stamp in pair):
                rows.append(dict(stamps))
    print(f"\nhybrid GET /api/users/me/memories?q=, in process, {len(rows)} new questions; p50 / p95 ms")
    for label in [*rows[0], *spans] if rows else []:
        if label in spans:
            values = [row[spans[label][1]] - row[spans[label][0]] for row in rows]
        else:
            values = [row[label] for row in rows if label in row]
        kind = "took" if label in totals else "at"
        print(f"  {kind:4} {label:44} {percentile(values, 50):6.2f} {percentile(values, 95):6.2f}")


def run(args, phases):
    from django.test import Client
    from django.test.utils import override_settings

    from memory_app.memories import derived
    from memory_app.memories.filters import SEARCH_DEPTH
    from memory_app.memories.models import IDENTITY_KINDS, Tier
    from memory_app.memories.services import memory_create
    from memory_app.search import engine
    from memory_app.search.embeddings import get_provider

    user, key, pool = load(args, phases)
    provider = get_provider()
    kinds = sorted(IDENTITY_KINDS)
    asked = [QUESTIONS[i % len(QUESTIONS)] for i in range(args.queries)]
    embed_ms = time_query_embedding(provider, asked)
    print(f"\nquery embedding ({provider.name}.embed_query, {len(embed_ms)} distinct questions, no cache), ms:")
    print(f"  {summary(embed_ms)}")

    client = Client(HTTP_AUTHORIZATION=f"Token {key}")
    scope = derived.scope_key(Tier.USER, str(user.pk))

    def api(question):
        response = client.get("/api/users/me/memories", {"q": question})
        if response.status_code != 200:
            raise SystemExit(
                f"GET /api/users/me/memories?q={question!r}: {response.status_code} {response.content[:300]}"
            )
        return response.json()["results"]

    def direct(question, mode):
        return engine.search(scopes=[scope], query=question, limit=SEARCH_DEPTH, depth=SEARCH_DEPTH, mode=mode).hits

    cold_possible = has_query_vector_cache(provider)
    print(f"\nidentity memory search, {args.memories:,} memories of one user, {len(asked)} questions per row")
    print_timing_header()
    with phases("timed searches"):
        for mode in MODES:
            with override_settings(MEMORY_SEARCH_MODE=mode):
                cached = ", query vector cached" if cold_possible and mode != "lexical" else ""
                print_timing_row(mode, "GET /api/users/me/memories?q=" + cached, timed(api, asked))
                print_timing_row(
                    mode,
                    f"engine.search (limit {SEARCH_DEPTH})" + cached,
                    timed(lambda q, mode=mode: direct(q, mode), asked),
                )
                if cached:
                    print_timing_row(
                        mode, "GET …/memories?q=, cold (the model embeds the query)", timed(api, asked, cold=True)
                    )
        # Last, as it adds memories: a search right after the user saved a memory (the scope
        # changed, so the engine's vector cache of the scope is rebuilt).
        writes = iter(range(10**9))

        def write():
            memory_create(actor=user, tier=Tier.USER, kind=kinds[0], content=pool[next(writes) % len(pool)])

        with override_settings(MEMORY_SEARCH_MODE="hybrid"):
            print_timing_row(
                "hybrid",
                "GET …/memories?q= right after a new memory" + (", cached" if cold_possible else ""),
                timed(api, asked, before=write),
            )
    print(
        "SQL = statements per search; SQL ms = mean time waiting for them; "
        "with hits = searches that returned at least one result"
    )


if __name__ == "__main__":
    main()
