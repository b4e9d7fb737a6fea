"""Benchmark of context assembly and remember_memory on PostgreSQL.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/bench_runs.py

Creates a throwaway database (dropped at the end) and a throwaway workspace root, then drives
the real HTTP endpoints in-process (authentication, lock, run-row lock, fsync'd publish):

  * GET /api/runs/{id}/context              sequential
  * remember_memory, 1 writer               sequential appends
  * remember_memory, 16 writers, 1 user     all serialized by the per-user lock
  * remember_memory, 16 writers, 16 users   independent locks

and prints p50/p95 latency and writes per second.
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from search_common import percentile  # noqa: E402 (bench/ is on the path when run as a script)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
os.environ["WORKSPACE_ROOT"] = tempfile.mkdtemp(prefix="memsvc-bench-ws-")
os.environ.setdefault("DATABASE_TEST_NAME", f"bench_memsvc_{os.getpid()}")


def report(label, latencies, wall):
    ms = [v * 1000 for v in latencies]
    print(
        f"{label:<42} n={len(ms):<5} p50={percentile(ms, 50):7.2f} ms  p95={percentile(ms, 95):7.2f} ms  "
        f"mean={statistics.fmean(ms):7.2f} ms  {len(ms) / wall:8.1f} ops/s"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--context-calls", type=int, default=300)
    parser.add_argument("--single-writes", type=int, default=300)
    parser.add_argument("--writes-per-writer", type=int, default=25)
    parser.add_argument("--writers", type=int, default=16)
    args = parser.parse_args()

    if not os.environ.get("DATABASE_URL"):
        sys.exit("Set DATABASE_URL to a PostgreSQL server (the benchmark targets PostgreSQL).")

    import django

    django.setup()
    from django.db import connection, connections
    from django.test import Client
    from django.test.utils import setup_test_environment

    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        run_benchmarks(args, Client, connections)
    finally:
        connections.close_all()
        connection.creation.destroy_test_db(old_name, verbosity=0)
        shutil.rmtree(os.environ["WORKSPACE_ROOT"], ignore_errors=True)


def run_benchmarks(args, Client, connections):
    from identity_app.services import user_grant_service
    from memory_app.notes import services as notes_services
    from memory_app.runs import services as run_services
    from memory_app.threads import services as thread_services
    from tests.factories import UserFactory

    svc = UserFactory(username="bench-svc")
    user_grant_service(user=svc)
    users = [UserFactory(username=f"bench-user-{i}") for i in range(args.writers)]
    seed_memory = "# Memory\n" + "".join(f"- seeded fact number {i}: prefers concise answers\n" for i in range(200))
    for user in users:
        notes_services.workspace_file_write(user=user, name="AGENTS.md", content="Be helpful and concise.\n" * 20)
        notes_services.workspace_file_write(user=user, name="USER.md", content="Name: bench user\n")
        notes_services.workspace_file_write(user=user, name="MEMORY.md", content=seed_memory)

    def new_run(user, request_id):
        conv = thread_services.conversation_create(actor=svc, username=user.username, title="bench")
        issued = run_services.run_create(
            actor=svc,
            username=user.username,
            conversation_id=conv.pk,
            request_id=request_id,
            worker_id="bench",
            lease_seconds=3600,
            prompt="hello",
        )
        return issued.run.pk, issued.run_token

    print(
        f"PostgreSQL, workspace on {os.environ['WORKSPACE_ROOT']} (MEMORY.md seeded with {len(seed_memory.encode())} bytes)"
    )

    # Context assembly.
    run_id, token = new_run(users[0], "ctx")
    client = Client(HTTP_AUTHORIZATION=f"Run {token}")
    for _ in range(10):
        client.get(f"/api/runs/{run_id}/context", {"query": "warm up"})
    latencies, start = [], time.perf_counter()
    for i in range(args.context_calls):
        t0 = time.perf_counter()
        response = client.get(f"/api/runs/{run_id}/context", {"query": f"question {i}"})
        latencies.append(time.perf_counter() - t0)
        assert response.status_code == 200, response.content
    report("context assembly (HTTP, sequential)", latencies, time.perf_counter() - start)

    def write_many(run_id, token, prefix, count, barrier=None):
        client = Client(HTTP_AUTHORIZATION=f"Run {token}")
        out = []
        try:
            if barrier:
                barrier.wait(timeout=60)
            for i in range(count):
                t0 = time.perf_counter()
                response = client.post(
                    f"/api/runs/{run_id}/tools/remember_memory",
                    {"content": f"{prefix} remembered fact {i}"},
                    content_type="application/json",
                )
                out.append(time.perf_counter() - t0)
                assert response.status_code == 200 and response.json()["result"] == "appended", response.content
        finally:
            connections.close_all()
        return out

    # Single writer.
    run_id, token = new_run(users[0], "single")
    start = time.perf_counter()
    latencies = write_many(run_id, token, "single", args.single_writes)
    report("remember_memory, 1 writer", latencies, time.perf_counter() - start)

    def concurrent(label, targets):
        barrier = threading.Barrier(len(targets))
        with ThreadPoolExecutor(max_workers=len(targets)) as pool:
            start = time.perf_counter()
            futures = [
                pool.submit(write_many, run_id, token, f"{label}-{n}", args.writes_per_writer, barrier)
                for n, (run_id, token) in enumerate(targets)
            ]
            latencies = [v for f in futures for v in f.result()]
            wall = time.perf_counter() - start
        report(f"remember_memory, {label}", latencies, wall)

    one_user = [new_run(users[0], f"one-{n}") for n in range(args.writers)]
    concurrent(f"{args.writers} writers on 1 user", one_user)
    many_users = [new_run(users[n], f"many-{n}") for n in range(args.writers)]
    concurrent(f"{args.writers} writers on {args.writers} users", many_users)

    # Correctness check: every append landed exactly once.
    text = (Path(os.environ["WORKSPACE_ROOT"]) / str(users[0].pk) / "agents" / "MEMORY.md").read_text()
    expected = args.writers * args.writes_per_writer
    found = sum(1 for line in text.splitlines() if "writers on 1 user" in line)
    print(f"check: {found}/{expected} concurrent appends present for the shared user")


if __name__ == "__main__":
    main()
