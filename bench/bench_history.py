"""Benchmark of history search (``search_thread_messages``) on PostgreSQL.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/bench_history.py

Creates a throwaway database (dropped at the end), one user with ``--threads`` threads of
``--messages`` messages in all (English and Chinese sentences drawn from a fixed vocabulary,
seeded), and times the selector behind the tool (visibility, prefilter, ranking, budgets) for
``--queries`` natural-language questions. Prints p50/p95 and how many questions found a hit.
"""

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
os.environ.setdefault("DATABASE_TEST_NAME", f"bench_history_{os.getpid()}")

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
ZH = ["我们决定用{x}", "我喜欢{x}", "预算是{x}", "下周五之前完成{x}"]
ZH_VALUES = ["咖啡", "数据库迁移", "婚礼场地", "京都的酒店"]


def percentile(values, pct):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))]


def sentence(rng: random.Random) -> str:
    if rng.random() < 0.15:
        return rng.choice(ZH).format(x=rng.choice(ZH_VALUES)) + "。"
    subject, fact = rng.choice(SUBJECTS), rng.choice(FACTS).format(x=rng.choice(VALUES))
    filler = " ".join(rng.choice(["so", "anyway", "well", "also", "then", "ok"]) for _ in range(rng.randint(0, 30)))
    return f"About {subject}, {fact}. {filler}".strip()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=600)
    parser.add_argument("--threads", type=int, default=30)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL"):
        sys.exit("Set DATABASE_URL to a PostgreSQL server (the benchmark targets PostgreSQL).")

    import django

    django.setup()
    from django.db import connection, connections
    from django.test.utils import setup_test_environment

    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        run(args)
    finally:
        connections.close_all()
        connection.creation.destroy_test_db(old_name, verbosity=0)


def run(args):
    from identity_app.services import user_grant_service
    from memory_app.agent import services
    from memory_app.agent.history import history_search
    from tests.factories import UserFactory

    rng = random.Random(7)
    svc, user = UserFactory(username="svc"), UserFactory(username="alice")
    user_grant_service(user=svc)
    threads = [services.conversation_create(actor=svc, username="alice", title=f"t{i}") for i in range(args.threads)]
    t0 = time.perf_counter()
    for i in range(args.messages):
        role = "user" if i % 2 == 0 else "assistant"
        services.message_create(
            actor=svc, conversation_id=threads[i % len(threads)].pk, role=role, content=sentence(rng)
        )
    print(f"PostgreSQL, {args.messages} messages in {args.threads} threads ({time.perf_counter() - t0:.1f}s to write)")

    questions = [
        *(f"what did we decide about {s}?" for s in SUBJECTS),
        *(f"when is the deadline for {s}" for s in SUBJECTS),
        *(f"which {v.split()[0]} did I pick" for v in VALUES),
        "我们用什么数据库",
        "婚礼场地",
        "咖啡",
    ]
    latencies, found = [], 0
    for i in range(args.queries):
        query = questions[i % len(questions)]
        start = time.perf_counter()
        result = history_search(user_id=user.pk, query=query)
        latencies.append((time.perf_counter() - start) * 1000)
        found += bool(result["results"])
    print(
        f"history search: n={len(latencies)} p50={percentile(latencies, 50):.2f} ms "
        f"p95={percentile(latencies, 95):.2f} ms mean={statistics.fmean(latencies):.2f} ms; "
        f"{found}/{len(latencies)} questions with a hit"
    )


if __name__ == "__main__":
    main()
