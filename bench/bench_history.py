"""Benchmark of history search (``search_thread_messages``) on PostgreSQL.

    .venv/bin/python bench/bench_history.py [--messages 10000] [--threads 100] [--queries 200]
                                            [--provider e5|hashed] [--vectors pool|pending]
                                            [--pool 2000] [--write bulk|service] [--embedding-threads N]
                                            [--database-url postgresql://…] [--keep]

Creates a throwaway database (dropped at the end), one user with ``--messages`` messages in
``--threads`` threads, indexed by the engine (``--write bulk``, default: ``bulk_create`` then
``indexing.reindex_all``, which indexes in batches; ``--write service``: ``message_create``
for each, which indexes it in its transaction, several times slower), and times
``memory_app.threads.history.history_search`` (visibility, engine ranking, snippets, budgets) and
``engine.search`` alone for ``--queries`` questions in each engine mode (``MEMORY_SEARCH_MODE``
overridden per mode).

Message texts are drawn from ``--pool`` distinct sentences (English and Chinese, seeded).
Vectors exist before timing: the hashed provider embeds while writing; for e5,
``--vectors pool`` (default) embeds the pool once and gives each message the vector of its
sentence (the product also prepends the previous turn; the cost of a search does not depend
on what the vectors hold; the pool's vectors are kept in a file in the temporary directory for
the next run), ``--vectors pending`` runs ``embedder.embed_pending`` over every
message as the worker would (e5: tens of ms per message).

The last row times hybrid searches each made right after a new message of the user (written
untimed through ``message_create``): the scope changed, so the engine's per-process vector cache
of the scope is rebuilt (and, with e5, the new message has no vector yet).

Dense and hybrid searches embed the question with the model. The provider keeps query vectors
in a per-process cache, so each mode is timed twice: "cached" (the question was embedded
before) and "cold" (the cache is cleared before each search, so the model runs). The time of
``provider.embed_query`` alone is printed too.
"""

import argparse
import random

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
    print_timing_header,
    print_timing_row,
    store_pool_vectors,
    summary,
    throwaway_database,
    time_query_embedding,
    timed,
    vacuum_analyze,
)

SUBJECTS = [
    "the billing service",
    "our wedding",
    "the trip to Kyoto",
    "my sister's birthday",
    "the new laptop",
    "the garden",
    "the database migration",
    "the marathon",
    "grandma's recipe",
    "the tax return",
]
FACTS = [
    "we decided to use {x}",
    "I booked {x}",
    "the budget is {x}",
    "we moved it to {x}",
    "I prefer {x}",
    "the deadline is {x}",
    "we bought {x}",
    "I talked to {x} about it",
]
VALUES = [
    "PostgreSQL 17",
    "a window seat",
    "3,000 euros",
    "next Friday",
    "short answers",
    "the blue one",
    "Dr. Lee",
    "March 14",
    "a vegetarian menu",
    "the 7:40 train",
]
FILLER = ["so", "anyway", "well", "also", "then", "ok", "right", "sure", "thanks", "great"]
ZH = ["我们决定用{x}", "我喜欢{x}", "预算是{x}", "下周五之前完成{x}", "关于{x}，我们改到下个月"]
ZH_VALUES = ["咖啡", "数据库迁移", "婚礼场地", "京都的酒店", "绿茶", "新的笔记本电脑"]
QUESTIONS = [
    *(f"what did we decide about {s}?" for s in SUBJECTS),
    *(f"when is the deadline for {s}" for s in SUBJECTS),
    "which database did we choose",
    "what seat do I prefer",
    "how much is the budget",
    "who did I talk to about the tax return",
    "what did I book for the trip to Kyoto",
    "what menu did we pick for our wedding",
    "which train do I take",
    "我们用什么数据库",
    "婚礼场地定在哪里",
    "我喜欢喝什么",
    "京都的酒店",
    "咖啡",
]
MODES = ("lexical", "dense", "hybrid")


def sentence(rng: random.Random) -> str:
    if rng.random() < 0.15:
        return rng.choice(ZH).format(x=rng.choice(ZH_VALUES)) + "。"
    subject, fact = rng.choice(SUBJECTS), rng.choice(FACTS).format(x=rng.choice(VALUES))
    filler = " ".join(rng.choice(FILLER) for _ in range(rng.randint(0, 30)))
    return f"About {subject}, {fact}. {filler}".strip()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=10_000, help="messages of the one user")
    parser.add_argument("--threads", type=int, default=100)
    parser.add_argument("--pool", type=int, default=2_000, help="distinct sentences (embedded once)")
    parser.add_argument("--vectors", choices=("pool", "pending"), default="pool")
    parser.add_argument(
        "--write", choices=("bulk", "service"), default="bulk", help="bulk_create + reindex_all, or message_create each"
    )
    add_common_arguments(parser)
    args = parser.parse_args()

    phases = Phases()
    print(load_banner(args.provider))
    with throwaway_database(args.database_url, "bench_history", keep=args.keep) as url:
        django_setup(url, provider=args.provider, embedding_threads=args.embedding_threads)
        run(args, phases)
    phases.total()


def run(args, phases):
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import override_settings

    from identity_app.services import user_grant_service
    from memory_app.search import embedder, engine
    from memory_app.search.embeddings import get_provider
    from memory_app.threads import indexing, services
    from memory_app.threads.history import history_search
    from memory_app.threads.indexing import history_scope
    from memory_app.threads.models import Message

    with phases("migrate"):
        migrate()
    provider = get_provider()
    print(f"embedding provider {describe_provider(provider)}")

    rng = random.Random(7)
    users = get_user_model().objects
    svc, user = users.create_user(username="svc"), users.create_user(username="alice")
    user_grant_service(user=svc)
    pool = distinct_pool(sentence, args.pool, rng)
    threads = [services.conversation_create(actor=svc, username="alice", title=f"t{i}") for i in range(args.threads)]

    pool_of_ref: dict[str, int] = {}
    picks = [rng.randrange(len(pool)) for _ in range(args.messages)]
    with connection.cursor() as cursor:  # a scratch database: commits need not wait for the disk
        cursor.execute("SET synchronous_commit TO off")
    if args.write == "service":
        with phases(f"write {args.messages:,} messages through message_create ({len(pool):,} distinct texts)"):
            for i, p in enumerate(picks):
                message = services.message_create(
                    actor=svc,
                    conversation_id=threads[i % len(threads)].pk,
                    role="user" if i % 2 == 0 else "assistant",
                    content=pool[p],
                )
                pool_of_ref[str(message.pk)] = p
                if (i + 1) % 2500 == 0:
                    print(f"    {i + 1:,} messages", flush=True)
    else:
        with phases(f"bulk_create {args.messages:,} messages ({len(pool):,} distinct texts)"):
            for start in range(0, len(picks), 1000):
                created = Message.objects.bulk_create(
                    Message(
                        conversation=threads[i % len(threads)],
                        role="user" if i % 2 == 0 else "assistant",
                        content=pool[picks[i]],
                    )
                    for i in range(start, min(start + 1000, len(picks)))
                )
                pool_of_ref.update({str(m.pk): picks[start + n] for n, m in enumerate(created)})
        with phases("index them (indexing.reindex_all: documents_sync in batches)"):
            indexing.reindex_all()

    pending = embedder.pending_count(provider=provider)
    if pending and args.vectors == "pending":
        with phases(f"embed_pending: {pending:,} documents"):
            embedder.embed_pending(provider=provider, batch_size=64)
    elif pending:
        with phases(f"embed {len(pool):,} pool sentences once"):
            vectors = embed_pool(provider, pool)
        with phases("store each message's vector (vectors_store)"):
            stored = store_pool_vectors("message", pool_of_ref, pool, vectors)
        print(f"    {stored:,} vectors stored")
    print(f"documents without a vector of {provider.model}: {embedder.pending_count(provider=provider)}")
    with phases("VACUUM ANALYZE"):
        vacuum_analyze()

    questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(args.queries)]
    embed_ms = time_query_embedding(provider, questions)
    print(f"\nquery embedding ({provider.name}.embed_query, {len(embed_ms)} distinct questions, no cache), ms:")
    print(f"  {summary(embed_ms)}")

    scope = history_scope(user.pk)
    cold_possible = has_query_vector_cache(provider)

    print(f"\nhistory search, {args.messages:,} messages of one user, {len(questions)} questions per row")
    print_timing_header()
    with phases("timed searches"):
        for mode in MODES:
            with override_settings(MEMORY_SEARCH_MODE=mode):
                cached = ", query vector cached" if cold_possible and mode != "lexical" else ""
                print_timing_row(
                    mode,
                    "history_search" + cached,
                    timed(lambda q: history_search(user_id=user.pk, query=q)["results"], questions),
                )
                print_timing_row(
                    mode,
                    "engine.search (limit 10, depth 50)" + cached,
                    timed(lambda q: engine.search(scopes=[scope], query=q, limit=10, depth=50).hits, questions),
                )
                if cached:
                    print_timing_row(
                        mode,
                        "history_search, cold (the model embeds the query)",
                        timed(lambda q: history_search(user_id=user.pk, query=q)["results"], questions, cold=True),
                    )
        # Last, as it adds messages: a search right after a new message of the user (the
        # scope's version changed, so the engine's vector cache of the scope is rebuilt).
        writes = iter(range(10**9))

        def write():
            services.message_create(
                actor=svc, conversation_id=threads[0].pk, role="user", content=f"{pool[next(writes) % len(pool)]}"
            )

        with override_settings(MEMORY_SEARCH_MODE="hybrid"):
            print_timing_row(
                "hybrid",
                "history_search right after a new message" + (", cached" if cold_possible else ""),
                timed(lambda q: history_search(user_id=user.pk, query=q)["results"], questions, before=write),
            )
    print(
        "SQL = statements per search; SQL ms = mean time waiting for them; "
        "with hits = searches that returned at least one result"
    )


if __name__ == "__main__":
    main()
