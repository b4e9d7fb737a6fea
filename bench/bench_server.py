"""Benchmark of the production server over real HTTP on PostgreSQL (issue targets for writes,
context assembly and list endpoints).

    .venv/bin/python bench/bench_server.py [--quick] [--scoped-items 1000000] [--provider e5|hashed]
                                           [--database-url postgresql://…] [--keep] [--with-worker]

Creates a throwaway database (``bench_server_<pid>``) next to the one in ``--database-url`` and
a throwaway workspace root, migrates, and creates the fixtures with the product's services:
a service principal, users and an API token, conversations and runs with leases, a 24 KiB
``MEMORY.md`` and ``--identity-memories`` user-tier memories for the context user (inserted in
batches, indexed by the memories' own derived-data hook) and ``--scoped-items`` chat/global
items bulk-loaded with COPY as ``bench_scoped`` loads them (items, scopes, documents with
vectors, postings). The context run's conversation is bound to one of the loaded chats, so its
context searches the scoped items.

Then it starts the server as ``make serve`` does (``scripts/serve.sh``: ``prepare_node``, then
gunicorn with DEBUG off; ``API_THROTTLE=off``; no ``memory_worker`` unless ``--with-worker``),
waits until ``/readyz`` answers, drives it with keep-alive HTTP clients in threads, and stops it
with everything it started. Per scenario it prints p50/p95/p99, throughput and errors:

  * remember_memory (``POST /api/runs/{id}/tools/remember_memory``): 1 writer, N writers on
    one user, N writers on N users; afterwards each unique marker must occur exactly once in
    the user's ``MEMORY.md`` and in its change history (0 lost, 0 duplicated);
  * context assembly (``GET /api/runs/{id}/context?query=…``), one client, sequential: with
    queries the server has seen (an agent's later rounds repeat their query; each process keeps
    the query vectors it computed), then with a new query on every call (its vector computed
    by the embedding model in the request);
  * list endpoints (``/api/users/me/memories``, ``/api/conversations``, ``/api/runs``) and
    ``/healthz`` (the trivial JSON view: no database, no authentication, the full middleware
    stack), same clients, same run; the ratio of each list to ``/healthz``;
  * the raw cost of one durable publish (write a temporary file, fsync, rename, fsync the
    directory) on the workspace disk, before and after the scenarios: the physical floor of an
    acknowledged write.

Each scenario also prints the CPU the server's processes and PostgreSQL used per request
(from ``/proc``), and each remember_memory scenario the group commits it took (from the
server's ``/metrics``): where the cores went, and how many calls one publish carried.

It ends with the issue's targets next to the measured figures. The client threads share the
machine with the server: on a busy or small machine the figures are upper bounds.
"""

import argparse
import json
import os
import random
import shutil
import signal
import sys
import tempfile
from array import array
from pathlib import Path
from types import SimpleNamespace

from search_common import (
    DEFAULT_DATABASE_URL,
    Phases,
    distinct_pool,
    django_setup,
    embed_pool,
    load_banner,
    migrate,
    store_pool_vectors,
    throwaway_database,
    vacuum_analyze,
)
from server_common import Client, Server, drive, durable_publish_floor, measured, server_env

FULL = {
    "scoped_items": 1_000_000,
    "identity_memories": 10_000,
    "pool": 2_000,
    "single_writes": 300,
    "writes_per_writer": 40,
    "context_calls": 300,
    "list_requests": 200,
    "publishes": 300,
}
QUICK = {
    "scoped_items": 20_000,
    "identity_memories": 10_000,
    "pool": 300,
    "single_writes": 100,
    "writes_per_writer": 15,
    "context_calls": 100,
    "list_requests": 50,
    "publishes": 100,
}
MEMORY_CONTEXT_SIZE = 24 * 1024
ITEMS_PER_CHAT = 100
PASSWORD_LESS = None


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes (defaults in brackets are the full run's)")
    parser.add_argument("--scoped-items", type=int, help="chat + global items bulk-loaded [1,000,000]")
    parser.add_argument("--identity-memories", type=int, help="user-tier memories of the context user [10,000]")
    parser.add_argument("--pool", type=int, help="distinct sentences for item texts (embedded once) [2,000]")
    parser.add_argument("--single-writes", type=int, help="remember_memory calls of the single writer [300]")
    parser.add_argument("--writers", type=int, default=16, help="concurrent writers [16]")
    parser.add_argument("--writes-per-writer", type=int, help="calls per concurrent writer [40]")
    parser.add_argument("--context-calls", type=int, help="timed context assemblies [300]")
    parser.add_argument("--list-clients", type=int, default=8, help="concurrent clients of the list scenarios [8]")
    parser.add_argument("--list-requests", type=int, help="requests per client per list scenario [200]")
    parser.add_argument("--publishes", type=int, help="timed raw durable publishes [300]")
    parser.add_argument("--provider", choices=("e5", "hashed"), default="e5", help="embedding provider [e5]")
    parser.add_argument("--with-worker", action="store_true", help="start memory_worker beside gunicorn too")
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", DEFAULT_DATABASE_URL))
    parser.add_argument("--keep", action="store_true", help="keep the throwaway database and workspace")
    args = parser.parse_args()
    for key in FULL:
        if getattr(args, key) is None:
            setattr(args, key, (QUICK if args.quick else FULL)[key])
    return args


def main():
    args = parse_args()
    # A TERM (e.g. from a timeout) unwinds like Ctrl-C: the server is stopped, the database dropped.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))
    phases = Phases()
    original_env = {k: os.environ.get(k) for k in ("LOG_LEVEL", "MEMORY_EMBED_IN_BACKGROUND")}
    temp = Path(tempfile.mkdtemp(prefix="memsvc-bench-server-"))
    workspace = temp / "workspaces"
    workspace.mkdir()
    os.environ["WORKSPACE_ROOT"] = str(workspace)
    os.environ["ALLOWED_HOSTS"] = "127.0.0.1,localhost,testserver"
    print(load_banner(args.provider) + f"; workspace on {workspace}", flush=True)
    figures: dict = {}
    try:
        with throwaway_database(args.database_url, "bench_server", keep=args.keep) as url:
            django_setup(url, provider=args.provider)
            with phases("migrate"):
                migrate()
            fixtures = prepare(args, phases)
            server = Server(
                env=server_env(
                    url,
                    temp,
                    workspace,
                    args.provider,
                    worker=args.with_worker,
                    MEMORY_EMBED_IN_BACKGROUND=original_env["MEMORY_EMBED_IN_BACKGROUND"] or "1",
                    LOG_LEVEL=original_env["LOG_LEVEL"] or "INFO",
                    METRICS_TOKEN=METRICS_TOKEN,
                ),
                log_path=temp / "server.log",
            )
            try:
                with phases(f"start the server (scripts/serve.sh on 127.0.0.1:{server.port})"):
                    server.start()
                print(
                    f"gunicorn: WEB_CONCURRENCY={os.environ.get('WEB_CONCURRENCY', '2')} processes x "
                    f"GUNICORN_THREADS={os.environ.get('GUNICORN_THREADS', '4')} threads; "
                    f"worker {'on' if args.with_worker else 'off'}; log {temp / 'server.log'}",
                    flush=True,
                )
                with phases("scenarios"):
                    figures = scenarios(args, server, fixtures, workspace)
            finally:
                clean = server.stop()
                print(f"server stopped{'' if clean else ' (leftover processes of its group were killed)'}")
            summary(args, figures)
    finally:
        if args.keep:
            print(f"kept {temp}")
        else:
            shutil.rmtree(temp, ignore_errors=True)
    phases.total()
    if not figures.get("writes_ok", False):
        sys.exit(1)


# --- fixtures ---------------------------------------------------------------------------------


def query_words(pool, rng) -> str:
    for _ in range(20):
        words = [w for w in rng.choice(pool).split() if w.isascii() and w.isalpha() and len(w) > 3]
        if len(words) >= 2:
            return " ".join(rng.sample(words, 2))
    return "coffee morning"


def prepare(args, phases) -> SimpleNamespace:
    import bench_scoped
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from identity_app.services import token_issue, user_grant_service
    from memory_app.automemory.services import auto_memory_settings_update
    from memory_app.memories import derived
    from memory_app.memories.models import IDENTITY_KINDS, Memory, Origin, Tier
    from memory_app.notes import services as notes_services
    from memory_app.runs import services as run_services
    from memory_app.search.embeddings import get_provider
    from memory_app.threads import services as thread_services

    provider = get_provider()
    rng = random.Random(42)
    pool = distinct_pool(bench_scoped.sentence, args.pool, rng)
    with phases(f"embed {len(pool):,} distinct sentences ({provider.name})"):
        pool_vectors = embed_pool(provider, pool)

    layout = None
    if args.scoped_items > 0:
        global_items = max(1, args.scoped_items // 50)
        chat_items = max(1, args.scoped_items - global_items)
        chats = max(1, chat_items // ITEMS_PER_CHAT)
        layout = bench_scoped.Layout(chats, max(1, chat_items // chats), global_items)
        picks = array("I", (rng.randrange(len(pool)) for _ in range(layout.total)))
        print(f"{layout.chat_items:,} chat items over {chats:,} chats + {global_items:,} global items", flush=True)
        bench_scoped.load(args, phases, provider, pool, pool_vectors, picks, layout)

    User = get_user_model()
    with phases("users, tokens, workspace files, conversations"):
        svc = User.objects.create_user(username="bench-svc", password=PASSWORD_LESS)
        user_grant_service(user=svc)

        def new_user(name: str, memory: str):
            user = User.objects.create_user(username=name, password=PASSWORD_LESS)
            notes_services.workspace_file_write(user=user, name="AGENTS.md", content="Be helpful and concise.\n" * 20)
            notes_services.workspace_file_write(user=user, name="USER.md", content="Name: bench user\nTimezone: UTC\n")
            notes_services.workspace_file_write(user=user, name="MEMORY.md", content=memory)
            return user

        context_memory = "# Memory\n"
        n = 0
        while True:
            line = f"- seeded fact number {n}: prefers concise answers about topic {n % 97}\n"
            if len((context_memory + line).encode()) > MEMORY_CONTEXT_SIZE:
                break
            context_memory, n = context_memory + line, n + 1
        writer_memory = "# Memory\n" + "".join(f"- seeded fact number {i}: prefers tea\n" for i in range(200))
        ctx_user = new_user("bench-context", context_memory)
        # Identity memories go into a new run's first round when the user uses them.
        auto_memory_settings_update(user=ctx_user, changes={"use": True})
        w1 = new_user("bench-w1", writer_memory)
        wshared = new_user("bench-wshared", writer_memory)
        wmany = [new_user(f"bench-w{i:02d}", writer_memory) for i in range(args.writers)]
        _, ctx_key = token_issue(user=ctx_user, name="bench lists")

    with phases(f"{args.identity_memories:,} identity memories for the context user"):
        kinds = sorted(IDENTITY_KINDS)
        pool_of_ref, picked = {}, []
        for start in range(0, args.identity_memories, 1000):
            batch = []
            for i in range(start, min(start + 1000, args.identity_memories)):
                p = rng.randrange(len(pool))
                picked.append(p)
                batch.append(
                    Memory(
                        scope_type=Tier.USER,
                        scope_id=str(ctx_user.pk),
                        owner=ctx_user,
                        kind=kinds[i % len(kinds)],
                        content=pool[p],
                        origin=Origin.API,
                        created_by=ctx_user,
                    )
                )
            with transaction.atomic():
                Memory.objects.bulk_create(batch)
                derived.on_memories_written(created=batch)
            pool_of_ref.update({m.pk: p for m, p in zip(batch, picked[start:], strict=False)})
        # Texts from the pool: its vectors stand in for each (the model runs once per sentence).
        store_pool_vectors("memory", pool_of_ref, pool, pool_vectors)
        vacuum_analyze(["memory_app_memory", "memory_app_searchdocument", "memory_app_searchposting"])

    def new_run(user, request_id, session_key=""):
        conv = thread_services.conversation_create(
            actor=svc, username=user.username, title=f"bench {request_id}", session_key=session_key
        )
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

    with phases("runs with leases"):
        session = f"{bench_scoped.Layout.chat_key(0)}:cron:bench" if layout else ""
        context_run = new_run(ctx_user, "context", session)
        for i in range(30):  # something to list
            new_run(ctx_user, f"list-{i}")
        single = new_run(w1, "single")
        shared = [new_run(wshared, f"shared-{n}") for n in range(args.writers)]
        many = [new_run(user, f"many-{n}") for n, user in enumerate(wmany)]
    queries = [query_words(pool, rng) for _ in range(64)]
    fresh = set()  # every one new to the server (its query vector too), as far as the pool allows
    for _ in range(50 * args.context_calls):
        if len(fresh) >= args.context_calls:
            break
        fresh.add(f"{query_words(pool, rng)} {query_words(pool, rng)}")
    return SimpleNamespace(
        ctx_user=ctx_user,
        ctx_key=ctx_key,
        context_run=context_run,
        queries=queries,
        fresh_queries=sorted(fresh),
        single=(w1, single),
        shared=(wshared, shared),
        many=list(zip(wmany, many, strict=True)),
        scoped=layout.total if layout else 0,
        memory_bytes=len(context_memory.encode()),
    )


# --- scenarios --------------------------------------------------------------------------------


METRICS_TOKEN = "bench-" + os.urandom(16).hex()


def batch_totals(server) -> tuple[float, float]:
    """``(group commits, calls they applied)`` so far, from the server's /metrics."""
    client = Client(server.host, server.port, {"Authorization": f"Bearer {METRICS_TOKEN}"})
    status, payload = client.request("GET", "/metrics")
    client.close()
    values = {"count": 0.0, "sum": 0.0}
    if status == 200:
        for line in payload.decode().splitlines():
            for name in values:
                if line.startswith(f"memsvc_notes_write_batch_size_{name} "):
                    values[name] = float(line.split()[1])
    return values["count"], values["sum"]


def run_client(server, token: str) -> Client:
    return Client(server.host, server.port, {"Authorization": f"Run {token}"})


def remember(label: str, server, targets, per_client: int) -> tuple:
    """``targets``: ``(run_id, token)`` per client. Returns the result and the markers each
    acknowledged answer was for."""
    clients = [run_client(server, token) for _, token in targets]
    tag = f"{label.replace(' ', '_')}-{os.getpid()}"

    def marker(index, i):
        return f"bench marker {tag}-{index}-{i}"

    def work(index, i):
        run_id, _ = targets[index]
        return "POST", f"/api/runs/{run_id}/tools/remember_memory", {"content": marker(index, i)}

    commits_before, calls_before = batch_totals(server)
    result = measured(server, lambda: drive(f"remember_memory, {label}", clients, work, per_client=per_client))
    commits_after, calls_after = batch_totals(server)
    result.batches = (commits_after - commits_before, calls_after - calls_before)
    acked, other = [], 0
    for index, answers in enumerate(result.answers):
        for i, payload in enumerate(answers):
            if payload is None:
                continue
            body = json.loads(payload)
            answer = body.get("result", body)
            if (answer.get("result") if isinstance(answer, dict) else answer) == "appended":
                acked.append(marker(index, i))
            else:
                other += 1
    for client in clients:
        client.close()
    return result, acked, other


def verify(user, markers: list[str]) -> tuple[int, int, int, int, int]:
    """``(lost in MEMORY.md, duplicated in MEMORY.md, lost in the change history, duplicated in
    it, changes the history dropped)``. The history keeps the last ``HISTORY_KEEP`` changes of
    a file: a marker whose change was dropped is not counted as lost, as long as no more are
    missing than were dropped (``seq`` counts every change, kept or not)."""
    from memory_app.notes.models import WorkspaceChange
    from memory_app.notes.workspace import Workspace

    text = Workspace(user.pk).read_file("MEMORY.md", max_bytes=1 << 20).content.decode()
    in_file = [line.strip() for line in text.splitlines() if "bench marker" in line]
    added, seqs = [], []
    for seq, hunks in WorkspaceChange.objects.filter(user=user, name="MEMORY.md").values_list("seq", "hunks"):
        seqs.append(seq)
        for hunk in hunks or []:
            new = hunk.get("new", []) if isinstance(hunk, dict) else []
            lines = new.splitlines() if isinstance(new, str) else [str(x) for x in new]
            added += [line.strip() for line in lines if "bench marker" in line]
    dropped = max(seqs, default=0) - len(seqs)
    wanted = set(markers)
    out = []
    for seen in (in_file, added):
        counts = {}
        for line in seen:
            counts[line] = counts.get(line, 0) + 1
        lost = sum(1 for m in markers if counts.get(m, 0) == 0)
        duplicated = sum(c - 1 for c in counts.values() if c > 1)
        # A marker present but not acknowledged would be a write answered as failed, or not at all.
        stray = sum(1 for line in counts if line not in wanted)
        out += [lost, duplicated + stray]
    out[2] = max(0, out[2] - dropped)
    return (*out, dropped)


def scenarios(args, server, fx, workspace: Path) -> dict:
    figures = {"writes_ok": True}
    floor = workspace / "publish-floor"
    print("\nraw durable publish on the workspace disk (24 KiB, the size of the context MEMORY.md), before", flush=True)
    figures["publish_before"] = durable_publish_floor(floor, size=24 * 1024, count=args.publishes)
    print(figures["publish_before"].line(), flush=True)

    print("\nremember_memory (POST /api/runs/{id}/tools/remember_memory), 1 connection per writer", flush=True)
    w1, single = fx.single
    wshared, shared = fx.shared
    plans = [
        ("1 writer", [w1], [single], args.single_writes, "single"),
        (f"{args.writers} writers on 1 user", [wshared], shared, args.writes_per_writer, "shared"),
        (
            f"{args.writers} writers on {args.writers} users",
            [u for u, _ in fx.many],
            [r for _, r in fx.many],
            args.writes_per_writer,
            "many",
        ),
    ]
    for label, users, targets, per_client, key in plans:
        result, acked, other = remember(label, server, targets, per_client)
        print(result.line(), flush=True)
        commits, calls = result.batches
        if commits:
            print(f"    group commits: {commits:.0f} for {calls:.0f} calls ({calls / commits:.2f} calls per commit)")
        for sample in result.error_samples:
            print(f"    error: {sample}")
        lost = dup = hlost = hdup = dropped = 0
        tag = f"bench marker {label.replace(' ', '_')}"
        for user in users:
            own = [m for m in acked if m.startswith(tag)]
            if len(users) > 1:  # writer n wrote for user n only
                index = users.index(user)
                own = [m for m in own if m.split("-")[-2] == str(index)]
            a, b, c, d, e = verify(user, own)
            lost, dup, hlost, hdup, dropped = lost + a, dup + b, hlost + c, hdup + d, dropped + e
        ok = result.errors == 0 and other == 0 and lost == dup == hlost == hdup == 0
        figures["writes_ok"] &= ok
        print(
            f"    check: {len(acked)}/{result.count} acknowledged as appended; MEMORY.md lost {lost}, "
            f"duplicated {dup}; change history lost {hlost}, duplicated {hdup} "
            f"({dropped} oldest changes dropped by its retention) -> {'ok' if ok else 'FAILED'}",
            flush=True,
        )
        figures[key] = result

    print(
        f"\ncontext assembly (GET /api/runs/{{id}}/context?query=…), 1 client: MEMORY.md {fx.memory_bytes:,} bytes, "
        f"{args.identity_memories:,} identity memories, {fx.scoped:,} scoped items",
        flush=True,
    )
    run_id, token = fx.context_run
    client = run_client(server, token)
    status, payload = client.request("GET", f"/api/runs/{run_id}/context?query=" + fx.queries[0].replace(" ", "+"))
    if status == 200:
        body = json.loads(payload)
        print(
            f"    sections {[s['name'] for s in body['sections']]}, identity_injected {body['identity_injected']}, "
            f"warnings {body['warnings']}, {len(payload):,} bytes"
        )
    for query in fx.queries:  # each server process embeds each query once, then keeps its vector
        for _ in range(2):
            client.request("GET", f"/api/runs/{run_id}/context?query=" + query.replace(" ", "+"))

    def context_work(queries):
        return lambda index, i: (
            "GET",
            f"/api/runs/{run_id}/context?query={queries[i % len(queries)].replace(' ', '+')}",
            None,
        )

    for key, label, queries in (
        ("context", "context assembly, query seen before", fx.queries),
        ("context_new", "context assembly, a new query each call", fx.fresh_queries),
    ):
        figures[key] = measured(
            server,
            lambda label=label, queries=queries: drive(
                label, [client], context_work(queries), per_client=args.context_calls
            ),
        )
        print(figures[key].line(), flush=True)
    client.close()

    print(f"\nlist endpoints vs the trivial JSON view (/healthz), {args.list_clients} keep-alive clients", flush=True)
    headers = {"Authorization": f"Token {fx.ctx_key}"}
    paths = [
        ("healthz", "/healthz"),
        ("memories", "/api/users/me/memories"),
        ("conversations", "/api/conversations"),
        ("runs", "/api/runs"),
        ("healthz (again)", "/healthz"),
    ]
    lists = {}
    for name, path in paths:
        clients = [Client(server.host, server.port, headers) for _ in range(args.list_clients)]
        for c in clients:
            c.request("GET", path)
        result = measured(
            server,
            lambda p=path, c=clients: drive(
                f"GET {p}", c, lambda index, i: ("GET", p, None), per_client=args.list_requests
            ),
        )
        lists[name] = result
        print(result.line(), flush=True)
        for sample in result.error_samples:
            print(f"    error: {sample}")
        for c in clients:
            c.close()
    trivial = (lists["healthz"].throughput + lists["healthz (again)"].throughput) / 2
    figures["trivial"] = trivial
    figures["lists"] = {name: lists[name] for name in ("memories", "conversations", "runs")}
    for name, result in figures["lists"].items():
        print(f"    {name}: {result.throughput / trivial:.0%} of /healthz ({trivial:.0f}/s, mean of both runs)")

    print("\nraw durable publish on the workspace disk, again after the scenarios", flush=True)
    figures["publish"] = durable_publish_floor(floor, size=24 * 1024, count=args.publishes)
    print(figures["publish"].line(), flush=True)
    return figures


def summary(args, figures) -> None:
    if "single" not in figures:
        return
    rows = [
        (
            "remember_memory, 1 writer, p50",
            "<= 3 ms",
            f"{figures['single'].p(50):.2f} ms",
            figures["single"].p(50) <= 3,
        ),
        (
            f"remember_memory, {args.writers} writers on 1 user",
            ">= 400 writes/s",
            f"{figures['shared'].throughput:.0f} writes/s",
            figures["shared"].throughput >= 400,
        ),
        (
            f"remember_memory, {args.writers} writers on {args.writers} users",
            ">= 600 writes/s",
            f"{figures['many'].throughput:.0f} writes/s",
            figures["many"].throughput >= 600,
        ),
        ("remember_memory, lost / duplicated", "0 / 0", "0 / 0" if figures["writes_ok"] else "see above", None),
    ]
    for key, label in (("context", "query seen before"), ("context_new", "new query")):
        rows.append(
            (
                f"context assembly, p95 ({label})",
                "<= 10 ms",
                f"{figures[key].p(95):.2f} ms",
                figures[key].p(95) <= 10 and figures[key].errors == 0,
            )
        )
    for name, result in figures["lists"].items():
        ratio = result.throughput / figures["trivial"]
        rows.append((f"GET list of {name} vs /healthz", ">= 70 %", f"{ratio:.0%}", ratio >= 0.7 and not result.errors))
    for key, when in (("publish_before", "before"), ("publish", "after")):
        publish = figures[key]
        rows.append(
            (f"durable publish (floor, {when}), p50 / p95", "-", f"{publish.p(50):.2f} / {publish.p(95):.2f} ms", None)
        )
    load = os.getloadavg()
    print(
        f"\ntargets of issue 14 (load average now {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} CPUs)"
    )
    print(f"{'figure':44} {'target':>16} {'measured':>20}  verdict")
    for name, target, figure, met in rows:
        verdict = "" if met is None else ("met" if met else "short")
        if name.startswith("remember_memory, lost"):
            verdict = "met" if figures["writes_ok"] else "short"
        print(f"{name:44} {target:>16} {figure:>20}  {verdict}")
    if args.scoped_items < FULL["scoped_items"] or args.quick:
        print(f"(sizes smaller than the issue's: {args.scoped_items:,} scoped items)")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(130)
