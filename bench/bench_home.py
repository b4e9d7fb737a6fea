"""Benchmark of the memory home on PostgreSQL (docs/home.md), through the API as a client sees it.

    .venv/bin/python bench/bench_home.py [--memories 2000] [--projects 20] [--per-project 500]
                                         [--chats 20] [--per-chat 200] [--queries 50]
                                         [--provider hashed|e5] [--database-url postgresql://…] [--keep]

Creates a throwaway database (dropped at the end) and one user with ``--memories`` memories of
their own, ``--projects`` projects of ``--per-project`` memories each (a third written by the
user, a third auto-extracted from their runs, the rest by another member), ``--chats`` private
chats bound to them with ``--per-chat`` items each, and a 100-line notes file; rows are bulk
inserted and indexed as the services do (``derived.on_memories_written``, batches of 500). Then
it times, with an API token through the in-process test client:

  * the overview (``GET /api/users/me/memory-home``), and its SQL query count;
  * one search across every source (``GET …/memory-home/search?q=``), ``--queries`` questions;
  * a page of 50 items with provenance, of a chat and of a project, and its query count;
  * the JSON export (whole home, bounded at 5,000 memories) and its size;
  * forgetting a whole chat (``POST …/forget-all``, one call per chat), then all the user's own
    memories in one call;

and prints p50/p95/mean in milliseconds.
"""

import argparse
import contextlib
import json
import os
import random
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEFAULT_DATABASE_URL = os.environ.get("DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


@contextlib.contextmanager
def throwaway_database(url: str, *, keep: bool):
    """A new database next to the one of ``url``; yields its URL; dropped at the end."""
    import psycopg

    name = f"bench_home_{os.getpid()}"
    admin = psycopg.connect(url, autocommit=True)
    admin.execute(f"CREATE DATABASE {name}")
    try:
        yield urlunparse(urlparse(url)._replace(path=f"/{name}"))
    finally:
        with contextlib.suppress(Exception):
            from django.db import connections

            connections.close_all()
        if not keep:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.close()


def django_setup(database_url: str, *, provider: str) -> None:
    """Production settings against ``database_url``; throttling off, embedding in-process."""
    os.environ.update(
        DATABASE_URL=database_url,
        DJANGO_SETTINGS_MODULE="config.settings",
        API_THROTTLE="off",
        MEMORY_EMBEDDING_PROVIDER=provider,
        MEMORY_EMBED_IN_BACKGROUND="0",
    )
    os.environ.setdefault("SECRET_KEY", "bench-only-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz")
    os.environ.setdefault("DEBUG", "0")
    os.environ.setdefault("ALLOWED_HOSTS", "testserver")
    os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("WORKSPACE_ROOT", tempfile.mkdtemp(prefix="memsvc-bench-ws-"))
    import django

    warnings.filterwarnings("ignore", message="No directory at", category=UserWarning)
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def summary(values: list[float]) -> str:
    ordered = sorted(values)

    def pct(p):
        return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]

    return f"p50 {pct(50):8.1f}  p95 {pct(95):8.1f}  mean {statistics.fmean(ordered):8.1f}"


@contextlib.contextmanager
def phase(label: str):
    t0 = time.perf_counter()
    yield
    print(f"  [{time.perf_counter() - t0:6.1f} s] {label}", flush=True)


WORDS = (
    "billing search deploy postgres redis kafka python rust travel passport tea coffee lyon kyoto "
    "review meeting budget invoice release backup monitor alert design api token schema cache"
).split()


def sentence(rng: random.Random, n: int) -> str:
    return f"{' '.join(rng.choice(WORDS) for _ in range(8)).capitalize()} (note {n})."


def timed_ms(call) -> tuple[float, object]:
    t0 = time.perf_counter()
    result = call()
    return (time.perf_counter() - t0) * 1000, result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--projects", type=int, default=20)
    parser.add_argument("--per-project", type=int, default=500)
    parser.add_argument("--chats", type=int, default=20)
    parser.add_argument("--per-chat", type=int, default=200)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--provider", choices=("hashed", "e5"), default="hashed")
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL)
    parser.add_argument("--keep", action="store_true")
    args, _unknown = parser.parse_known_args()  # make bench passes the same arguments to every bench

    with throwaway_database(args.database_url, keep=args.keep) as url:
        with phase("set up and migrate"):
            django_setup(url, provider=args.provider)
        run(args)


def run(args):
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from identity_app.models import ChatBinding, Membership, Project, Role
    from identity_app.services import token_issue, user_grant_service
    from memory_app.memories import derived
    from memory_app.memories.models import Memory, Origin, Tier
    from memory_app.notes import services as notes_services
    from tests.factories import UserFactory

    rng = random.Random(7)
    alice, bob, bot = UserFactory(username="alice"), UserFactory(username="bob"), UserFactory(username="bot")
    user_grant_service(user=bot)
    rows, counter = [], iter(range(10**9))

    def add(**fields):
        rows.append(Memory(content=sentence(rng, next(counter)), **fields))

    with phase(
        f"create {args.memories} own memories, {args.projects}×{args.per_project} project memories, "
        f"{args.chats}×{args.per_chat} chat items"
    ):
        for _ in range(args.memories):
            add(scope_type=Tier.USER, scope_id=str(alice.pk), owner=alice, kind="fact", created_by=alice)
        projects = Project.objects.bulk_create([Project(name=f"Project {n:02d}") for n in range(args.projects)])
        Membership.objects.bulk_create(
            [Membership(project=p, user=alice, role=Role.OWNER) for p in projects]
            + [Membership(project=p, user=bob, role=Role.MEMBER) for p in projects]
        )
        for project in projects:
            for n in range(args.per_project):
                author, origin = [(alice, Origin.API), (alice, Origin.AUTO), (bob, Origin.MANUAL)][n % 3]
                add(
                    scope_type=Tier.PROJECT,
                    scope_id=project.pk,
                    project=project,
                    kind="decision",
                    origin=origin,
                    created_by=author,
                )
        chat_keys = [f"milky:private:{50000 + n}" for n in range(args.chats)]
        ChatBinding.objects.bulk_create([ChatBinding(chat_key=key, user=alice) for key in chat_keys])
        for key in chat_keys:
            for _ in range(args.per_chat):
                add(
                    scope_type=Tier.CHAT,
                    scope_id=key,
                    kind="preference",
                    created_by=bot,
                    evidence={"source_session_id": key},
                )
        Memory.objects.bulk_create(rows, batch_size=2000)
    with phase(f"index {len(rows)} memories"):
        for start in range(0, len(rows), 500):
            derived.on_memories_written(created=rows[start : start + 500])
        notes_services.workspace_file_write(
            user=alice, name="MEMORY.md", content="".join(f"- {sentence(rng, n)}\n" for n in range(100))
        )
    with phase("vacuum analyze"), connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")

    _, key = token_issue(user=alice, name="bench")
    client = Client(HTTP_AUTHORIZATION=f"Token {key}")
    client.get("/api/users/me/memory-home")  # warm up: first use of the token, caches

    def measure(label, calls):
        times = []
        for call in calls:
            elapsed, response = timed_ms(call)
            assert response.status_code in (200, 204), (label, response.status_code, response.content[:200])
            times.append(elapsed)
        print(f"  {label:44} n={len(times):4}  {summary(times)}", flush=True)

    def queries(label, call):
        with CaptureQueriesContext(connection) as captured:
            call()
        print(f"  {label:44} {len(captured)} SQL queries")

    print("milliseconds:")
    measure("overview", [lambda: client.get("/api/users/me/memory-home")] * 30)
    queries("overview", lambda: client.get("/api/users/me/memory-home"))
    questions = [" ".join(rng.sample(WORDS, 3)) for _ in range(args.queries)]
    measure(
        "search across every source",
        [lambda q=q: client.get("/api/users/me/memory-home/search", {"q": q}) for q in questions],
    )
    chat_page = {"source": f"chat:{chat_keys[0]}"}
    project_page = {"source": f"project:{projects[0].pk}"}
    measure(
        "a chat's items (50, with provenance)", [lambda: client.get("/api/users/me/memory-home/items", chat_page)] * 20
    )
    measure(
        "a project's items (50, with provenance)",
        [lambda: client.get("/api/users/me/memory-home/items", project_page)] * 20,
    )
    queries("a project's items", lambda: client.get("/api/users/me/memory-home/items", project_page))
    size = len(client.get("/api/users/me/export").content)
    measure(f"export ({size / 1e6:.1f} MB, capped at 5,000 memories)", [lambda: client.get("/api/users/me/export")] * 3)

    def forget(source):
        return client.post(
            "/api/users/me/memory-home/forget-all",
            json.dumps({"source": source, "confirm": "FORGET"}),
            content_type="application/json",
        )

    measure(f"forget a whole chat ({args.per_chat} items)", [lambda k=k: forget(f"chat:{k}") for k in chat_keys])
    measure(f"forget all own memories ({args.memories})", [lambda: forget("user")])
    left = Memory.objects.filter(scope_type__in=[Tier.USER, Tier.CHAT]).count()
    print(f"  user and chat memories left: {left}")


if __name__ == "__main__":
    main()
