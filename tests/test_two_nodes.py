"""Two production nodes (``scripts/serve.sh`` twice, on two ports, each with its own worker)
sharing one PostgreSQL database and one workspace root, as two hosts with a shared volume
would. Concurrent ``remember_memory`` calls, memory writes and supersedes go through both;
nothing may be lost or duplicated and every lock must hold. Then a backup of the pair is
restored into a new database and an empty workspace root, and answers the same.
"""

import json
import os
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from tests.serving import call, manage, seed, serve_env, start, stop_all

pytestmark = pytest.mark.postgres_only

NOTES_PER_RUN = 10
RUNS = 4
MEMORIES = 30
RACERS = 8


def _database_url(name: str) -> str:
    parts = psycopg.conninfo.conninfo_to_dict(os.environ["DATABASE_URL"])
    auth = parts.get("user", "postgres") + (f":{parts['password']}" if parts.get("password") else "")
    return f"postgresql://{auth}@{parts.get('host', '127.0.0.1')}:{parts.get('port', 5432)}/{name}"


def _recreate(name: str) -> str:
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return _database_url(name)


def _drop(name: str) -> None:
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture(scope="module")
def names():
    base = os.environ.get("DATABASE_TEST_NAME") or "test_memsvc"
    names = {"shared": f"{base}_nodes", "restored": f"{base}_restored"}
    yield names
    for name in names.values():
        _drop(name)


@pytest.fixture(scope="module")
def nodes(tmp_path_factory, names):
    folder = tmp_path_factory.mktemp("nodes")
    shared = {
        "DATABASE_URL": _recreate(names["shared"]),
        "WORKSPACE_ROOT": str(folder / "shared-volume"),
        "DB_CONN_MAX_AGE": "60",
        # One process of eight threads per node: two nodes are the several processes here.
        "WEB_CONCURRENCY": "1",
        "GUNICORN_THREADS": "8",
    }
    # Started together: prepare_node lets one apply the migrations while the other waits.
    servers = [start(serve_env(folder / name, **shared), folder / name) for name in ("a", "b")]
    try:
        for server in servers:
            server.wait_ready()
        servers[0].keys = seed(servers[0])
        yield servers
    finally:
        stop_all(servers)


def _both(nodes, i: int) -> str:
    return f"{nodes[i % 2].base}/api"


def test_both_nodes_are_ready_with_their_workers(nodes):
    for server in nodes:
        status, _, body = call("GET", f"{server.base}/readyz")
        assert status == 200 and body["checks"]["worker"] == "ok", body


def test_concurrent_remember_memory_through_two_nodes_loses_and_duplicates_nothing(nodes):
    keys = nodes[0].keys
    svc = f"Token {keys['svc']}"
    status, _, conversation = call("POST", f"{_both(nodes, 0)}/conversations", {"user": "alice"}, token=svc)
    assert status == 201, conversation
    runs = []
    for i in range(RUNS):
        body = {
            "user": "alice",
            "conversation_id": conversation["id"],
            "request_id": f"req-{i}",
            "worker_id": f"rt-{i}",
        }
        status, _, run = call("POST", f"{_both(nodes, i)}/runs", body, token=svc)
        assert status == 201, run
        runs.append(run)

    # Every note twice, once through each node, all at once: one append and one "unchanged".
    calls = [
        (run, f"Note {r}-{n}: the deploy window of service {r * 100 + n} is Tuesday", node)
        for r, run in enumerate(runs)
        for n in range(NOTES_PER_RUN)
        for node in (0, 1)
    ]

    def remember(item):
        run, content, node = item
        url = f"{nodes[node].base}/api/runs/{run['id']}/tools/remember_memory"
        status, _, body = call("POST", url, {"content": content}, token=f"Run {run['run_token']}")
        assert status == 200, body
        return content, body["result"]

    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(remember, calls))
    per_note = Counter(content for content, result in results if result == "appended")
    assert len(per_note) == RUNS * NOTES_PER_RUN and set(per_note.values()) == {1}
    assert Counter(result for _, result in results) == {
        "appended": RUNS * NOTES_PER_RUN,
        "unchanged": RUNS * NOTES_PER_RUN,
    }

    notes = Path(nodes[0].env["WORKSPACE_ROOT"]) / str(keys["alice_id"]) / "agents" / "MEMORY.md"
    lines = notes.read_text().splitlines()
    assert sorted(lines) == sorted(per_note)  # every note once, none lost, nothing torn

    # Racing corrections of one line through both nodes: exactly one replaces it.
    old = lines[0]
    racers = [(runs[i % RUNS], f"Corrected by racer {i}", i % 2) for i in range(RACERS)]

    def replace(item):
        run, content, node = item
        url = f"{nodes[node].base}/api/runs/{run['id']}/tools/remember_memory"
        return call("POST", url, {"content": content, "replaces": old}, token=f"Run {run['run_token']}")

    with ThreadPoolExecutor(max_workers=RACERS) as pool:
        answers = list(pool.map(replace, racers))
    assert sorted(status for status, _, _ in answers) == [200] + [409] * (RACERS - 1)
    [winner] = [content for (status, _, _), (_, content, _) in zip(answers, racers, strict=True) if status == 200]
    after = notes.read_text().splitlines()
    assert old not in after and after.count(winner) == 1 and len(after) == len(lines)
    assert not [p for p in notes.parent.iterdir() if p.name.endswith(".tmp")]  # no temp file left behind


def test_concurrent_memory_writes_and_supersedes_through_two_nodes(nodes):
    alice = f"Token {nodes[0].keys['alice']}"

    def create(i):
        body = {"kind": "fact", "content": f"Fact number {i} about the billing service"}
        status, _, memory = call("POST", f"{_both(nodes, i)}/users/me/memories", body, token=alice)
        assert status == 201, memory
        return memory["id"]

    with ThreadPoolExecutor(max_workers=16) as pool:
        ids = list(pool.map(create, range(MEMORIES)))
    assert len(set(ids)) == MEMORIES

    target = ids[0]

    def supersede(i):
        body = {"content": f"Fact number 0, corrected by racer {i}"}
        return call("POST", f"{_both(nodes, i)}/users/me/memories/{target}/supersede", body, token=alice)

    barrier = threading.Barrier(RACERS)

    def racer(i):
        barrier.wait(timeout=30)
        return supersede(i)

    with ThreadPoolExecutor(max_workers=RACERS) as pool:
        answers = list(pool.map(racer, range(RACERS)))
    statuses = sorted(status for status, _, _ in answers)
    assert statuses == [201] + [409] * (RACERS - 1), statuses
    assert {body["error"]["code"] for status, _, body in answers if status == 409} == {"not_active"}
    [winner] = [body["id"] for status, _, body in answers if status == 201]

    listed = call("GET", f"{_both(nodes, 1)}/users/me/memories?page_size=200", token=alice)[2]
    active = {m["id"] for m in listed["results"]}
    assert listed["count"] == MEMORIES and active == (set(ids) - {target}) | {winner}
    chain = call("GET", f"{_both(nodes, 0)}/users/me/memories/{winner}/chain", token=alice)[2]
    assert [m["id"] for m in chain["results"]] == [target, winner]
    assert [m["status"] for m in chain["results"]] == ["superseded", "active"]


def test_backup_of_the_pair_restores_into_a_new_database_and_volume(nodes, names, tmp_path):
    alice = f"Token {nodes[0].keys['alice']}"
    backup = tmp_path / "backup"
    nodes[0].manage("backup", str(backup))
    assert sorted(p.name for p in backup.iterdir()) == ["database.pgdump", "manifest.json", "workspaces.tar.gz"]

    restored_env = serve_env(
        tmp_path / "c", DATABASE_URL=_recreate(names["restored"]), WORKSPACE_ROOT=str(tmp_path / "restored-volume")
    )
    manage(restored_env, "restore", str(backup))
    # What a node on the restored pair would answer: the same requests through the whole app
    # (middleware, token authentication, selectors, the workspace on the new volume).
    answers = manage(restored_env, "shell", "-c", ANSWERS.replace("KEY", nodes[0].keys["alice"]))
    copy = json.loads(answers.strip().splitlines()[-1])
    original = {
        "memories": call("GET", f"{nodes[0].base}/api/users/me/memories?page_size=200", token=alice)[2],
        "notes": call("GET", f"{nodes[1].base}/api/users/me/workspace/MEMORY.md", token=alice)[2],
    }
    assert copy["memories"]["count"] == original["memories"]["count"] == MEMORIES
    assert [m["id"] for m in copy["memories"]["results"]] == [m["id"] for m in original["memories"]["results"]]
    assert copy["notes"]["content"] == original["notes"]["content"] and copy["notes"]["content"]
    assert copy["notes"]["sha256"] == original["notes"]["sha256"]
    assert copy["ready"] == {"database": "ok", "migrations": "ok", "workspace": "ok"}


ANSWERS = """
import json
from django.test import Client
client = Client(SERVER_NAME="127.0.0.1", HTTP_AUTHORIZATION="Token KEY")
print(json.dumps({
    "memories": client.get("/api/users/me/memories?page_size=200").json(),
    "notes": client.get("/api/users/me/workspace/MEMORY.md").json(),
    "ready": client.get("/readyz").json()["checks"],
}))
"""
