"""Benchmark of two production nodes on one PostgreSQL database and one workspace root.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/bench_nodes.py

Creates a throwaway database (dropped at the end), starts ``scripts/serve.sh`` twice (each
node: gunicorn, WEB_CONCURRENCY processes x GUNICORN_THREADS threads, and its memory_worker),
and sends every request alternately to the two nodes over HTTP from --clients threads:

  * GET /readyz                                  (database, migrations, volume, heartbeat)
  * remember_memory, 1 user                      every write serialized by the per-user lock
  * remember_memory, --clients users             independent locks
  * POST /api/users/me/memories                  memory writes (index upkeep included)

Prints p50/p95 latency and requests per second, the per-user lock waits from /metrics, and
how long the nodes took to start.
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from search_common import percentile  # noqa: E402 (bench/ is on the path when run as a script)

from tests.serving import call, manage, serve_env, start, stop_all  # noqa: E402

SEED = """
import json
from django.contrib.auth import get_user_model
from identity_app.services import token_issue, user_grant_service
User = get_user_model()
svc = User.objects.create_user("svc")
user_grant_service(user=svc)
users = [User.objects.create_user(f"user{i}") for i in range(COUNT)]
print(json.dumps({"svc": token_issue(user=svc)[1], "users": [[u.username, token_issue(user=u)[1]] for u in users]}))
"""


def report(label, latencies, wall):
    ms = [v * 1000 for v in latencies]
    print(
        f"{label:<44} n={len(ms):<5} p50={percentile(ms, 50):7.1f} ms  p95={percentile(ms, 95):7.1f} ms  "
        f"mean={statistics.fmean(ms):7.1f} ms  {len(ms) / wall:7.1f} req/s"
    )


def drive(label, items, send, clients):
    def timed(item):
        started = time.perf_counter()
        status = send(item)
        assert status in (200, 201), (label, status)
        return time.perf_counter() - started

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        latencies = list(pool.map(timed, items))
    report(label, latencies, time.perf_counter() - started)


def database_url(admin_url: str, name: str) -> str:
    parts = psycopg.conninfo.conninfo_to_dict(admin_url)
    auth = parts.get("user", "postgres") + (f":{parts['password']}" if parts.get("password") else "")
    return f"postgresql://{auth}@{parts.get('host', '127.0.0.1')}:{parts.get('port', 5432)}/{name}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--writes", type=int, default=400, help="requests per scenario")
    parser.add_argument("--web-concurrency", default="2")
    parser.add_argument("--threads", default="4")
    args, _ = parser.parse_known_args()
    admin_url = os.environ.get("DATABASE_URL")
    if not admin_url:
        sys.exit("Set DATABASE_URL to a PostgreSQL server (the benchmark targets PostgreSQL).")

    name = f"bench_nodes_{os.getpid()}"
    folder = Path(tempfile.mkdtemp(prefix="memsvc-bench-nodes-"))
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    shared = {
        "DATABASE_URL": database_url(admin_url, name),
        "WORKSPACE_ROOT": str(folder / "volume"),
        "DB_CONN_MAX_AGE": "60",
        "WEB_CONCURRENCY": args.web_concurrency,
        "GUNICORN_THREADS": args.threads,
        "WORKER_INTERVAL": "30",
    }
    nodes = []
    try:
        started = time.perf_counter()
        nodes = [start(serve_env(folder / n, **shared), folder / n) for n in ("a", "b")]
        for node in nodes:
            node.wait_ready()
        print(f"two nodes ready in {time.perf_counter() - started:.1f} s (migrations, static files, imports)")
        keys = json.loads(
            manage(nodes[0].env, "shell", "-c", SEED.replace("COUNT", str(args.clients))).strip().splitlines()[-1]
        )
        svc = f"Token {keys['svc']}"

        def base(i):
            return nodes[i % 2].base

        drive("GET /readyz", range(args.writes), lambda i: call("GET", f"{base(i)}/readyz")[0], args.clients)

        def open_runs(usernames):
            runs = []
            for i, username in enumerate(usernames):
                conversation = call("POST", f"{base(i)}/api/conversations", {"user": username}, token=svc)[2]
                body = {"user": username, "conversation_id": conversation["id"], "request_id": "r", "worker_id": "w"}
                body["lease_seconds"] = 3600
                runs.append(call("POST", f"{base(i)}/api/runs", body, token=svc)[2])
            return runs

        def remember(runs):
            def send(i):
                run = runs[i % len(runs)]
                url = f"{base(i)}/api/runs/{run['id']}/tools/remember_memory"
                return call("POST", url, {"content": f"Note {i} for the bench"}, token=f"Run {run['run_token']}")[0]

            return send

        one_user = open_runs(["user0"] * args.clients)
        before = [node.metrics() for node in nodes]
        drive("remember_memory, 1 user (one lock)", range(args.writes), remember(one_user), args.clients)
        after = [node.metrics() for node in nodes]
        count, total = ("memsvc_user_lock_wait_seconds_count", ()), ("memsvc_user_lock_wait_seconds_sum", ())
        waits = sum(a.get(count, 0) - b.get(count, 0) for a, b in zip(after, before, strict=True))
        seconds = sum(a.get(total, 0) - b.get(total, 0) for a, b in zip(after, before, strict=True))
        print(f"{'':<44} per-user lock: {int(waits)} waits, mean {seconds / max(waits, 1) * 1000:.1f} ms")
        many = open_runs([username for username, _ in keys["users"]])
        drive(f"remember_memory, {len(many)} users", range(args.writes), remember(many), args.clients)

        def create(i):
            username, key = keys["users"][i % len(keys["users"])]
            body = {"kind": "fact", "content": f"Fact {i} of {username}: the bench writes memories"}
            return call("POST", f"{base(i)}/api/users/me/memories", body, token=f"Token {key}")[0]

        drive("POST /api/users/me/memories", range(args.writes), create, args.clients)

    finally:
        stop_all(nodes)
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
