"""``make serve`` as production runs it: ``scripts/serve.sh`` started as a subprocess on a
throwaway SQLite database (gunicorn with two processes, DEBUG off, WhiteNoise, JSON logs,
multi-process metrics, memory_worker beside it), driven over HTTP, then stopped by SIGTERM.

It brings its own database, so it runs once, in the SQLite pass of the suite.
"""

import json
import os
import re
import subprocess
import time

import pytest

from tests.serving import PYTHON, ROOT, call, manage, seed, serve_env, start

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("DATABASE_URL")), reason="brings its own SQLite database: runs in the SQLite pass"
)

DECISION = "We decided to use PostgreSQL 16 for the billing service."


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("serve")
    # The worker's sweeping round runs once at its start and then not for an hour: the on-demand
    # round (a background job, polled every second) is then the one that takes the test's run.
    # With a sweep every second, a loaded machine let the sweep take it first.
    server = start(serve_env(folder, WORKER_INTERVAL="3600"), folder)
    try:
        server.wait_ready()
        server.keys = seed(server)
        yield server
    finally:
        server.stop()


def test_health_and_readiness_with_the_worker_beside(server):
    status, headers, body = call("GET", f"{server.base}/healthz")
    assert (status, body) == (200, {"status": "ok"}) and headers["X-Request-ID"]
    status, _, body = call("GET", f"{server.base}/readyz")
    assert status == 200
    assert body == {"status": "ok", "checks": {"database": "ok", "migrations": "ok", "workspace": "ok", "worker": "ok"}}


def test_a_printed_sign_in_link_starts_at_the_address_make_serve_was_started_with(server):
    env = {k: v for k, v in server.env.items() if k != "PUBLIC_BASE_URL"}
    done = subprocess.run(
        [PYTHON, "manage.py", "issue_token", "newcomer", "--create-user", "--sign-in-link"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    assert f"\n{server.base}/accounts/sign-in/" in done.stderr, done.stderr
    assert "was last started with" in done.stderr and "PUBLIC_BASE_URL" in done.stderr


def test_debug_is_off_and_errors_carry_the_request_id(server):
    status, _, page = call("GET", f"{server.base}/no/such/page")
    assert status == 404 and "Traceback" not in page and "DEBUG" not in page and "URLconf" not in page
    status, headers, body = call("GET", f"{server.base}/api/no/such/route", headers={"X-Request-ID": "e2e-404"})
    assert status == 404 and headers["X-Request-ID"] == "e2e-404"
    assert body == {"error": {"code": "not_found", "message": "Not found.", "request_id": "e2e-404"}}
    status, headers, body = call("GET", f"{server.base}/api/users/me/profile", token="Token forged")
    assert status == 401 and body["error"]["request_id"] == headers["X-Request-ID"]


def test_static_files_are_served_by_the_app_with_hashed_names(server):
    status, _, page = call("GET", f"{server.base}/accounts/login/")
    assert status == 200
    [stylesheet] = re.findall(r'href="(/static/css/app\.[0-9a-f]{12}\.css)"', page)
    status, headers, css = call("GET", server.base + stylesheet)
    assert status == 200 and headers["Content-Type"].startswith("text/css") and css
    assert "immutable" in headers["Cache-Control"]
    status, headers, _ = call("GET", server.base + stylesheet, headers={"Accept-Encoding": "gzip"})
    assert status == 200 and headers["Content-Encoding"] == "gzip"


def test_on_demand_round_runs_in_the_worker_and_metrics_add_up_every_process(server):
    svc, alice = f"Token {server.keys['svc']}", f"Token {server.keys['alice']}"
    api = f"{server.base}/api"
    body = {"user": "alice", "title": "Billing", "project_id": server.keys["project"]}
    status, _, conversation = call("POST", f"{api}/conversations", body, token=svc)
    assert status == 201, conversation
    # The runtime's order: the user's turn, then the run, then the run's reply.
    message = {"role": "user", "content": DECISION}
    assert call("POST", f"{api}/conversations/{conversation['id']}/messages", message, token=svc)[0] == 201
    body = {
        "user": "alice",
        "conversation_id": conversation["id"],
        "request_id": "req-1",
        "worker_id": "runtime-1",
        "prompt": "Answer the user.",
        "project_id": server.keys["project"],
    }
    status, _, run = call("POST", f"{api}/runs", body, token=svc)
    assert status == 201, run
    finish = {"status": "completed", "usage": {"duration_s": 5}}
    assert call("POST", f"{api}/runs/{run['id']}/finish", finish, token=f"Run {run['run_token']}")[0] == 200

    status, headers, job = call("POST", f"{api}/users/me/auto-memory/run", token=alice)
    assert status == 202 and job["status"] == "queued" and headers["Location"] == job["status_url"]
    deadline = time.monotonic() + 60
    while job["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, job
        time.sleep(0.2)
        job = call("GET", server.base + job["status_url"], token=alice)[2]
    assert job["status"] == "done", job
    [processed] = [p for p in job["result"]["processed"] if p["run_id"] == run["id"]]
    assert processed["outcome"] == "extracted"
    status, _, memories = call("GET", f"{api}/projects/{server.keys['project']}/identity-memories", token=alice)
    assert status == 200 and [m["content"] for m in memories["results"]] == [DECISION]

    before = server.metrics().get(
        ("memsvc_http_requests_total", (("method", "GET"), ("route", "profile"), ("status", "200"))), 0
    )
    for _ in range(20):
        assert call("GET", f"{api}/users/me/profile", token=alice)[0] == 200
    samples = server.metrics()
    # Two gunicorn processes served these; /metrics adds up both (and the worker's samples).
    assert (
        samples[("memsvc_http_requests_total", (("method", "GET"), ("route", "profile"), ("status", "200")))]
        == before + 20
    )
    assert samples[("memsvc_http_request_duration_seconds_count", (("method", "GET"), ("route", "profile")))] >= 20
    assert samples[("memsvc_background_jobs_total", (("kind", "auto_memory_round"), ("status", "done")))] >= 1
    assert samples[("memsvc_automemory_runs_total", (("gate", "none"), ("outcome", "extracted")))] >= 1
    assert call("GET", f"{server.base}/metrics")[0] == 401


def test_log_lines_are_json_objects_that_carry_request_ids(server):
    call("GET", f"{server.base}/api/users/me/profile", headers={"X-Request-ID": "e2e-log-1"}, token="Token forged")
    deadline = time.monotonic() + 10
    while True:
        lines = [json.loads(line) for line in server.log_lines()]  # every line is one JSON object
        mine = [line for line in lines if line.get("request_id") == "e2e-log-1"]
        if mine or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert any(line["logger"] == "config.access" and line["status"] == 401 for line in mine), mine
    assert any(line["logger"] == "gunicorn.error" for line in lines)
    assert any(line.get("check_id") == "security.W008" for line in lines)  # check --deploy at start


def test_each_server_process_warms_up_before_its_first_request(server):
    """``post_worker_init`` runs ``SERVER_WARMUPS`` in each of the two processes."""
    lines = [json.loads(line) for line in server.log_lines() if line.startswith("{")]
    warmed = [line["message"] for line in lines if line["logger"] == "memory_app.search.warmup"]
    assert all(re.fullmatch(r"process \d+ warmed up in \d+ ms \(embeddings: hashed-ngram\)", m) for m in warmed), warmed
    assert len({m.split()[1] for m in warmed}) == 2, warmed


def test_a_backup_taken_while_serving_restores_into_a_new_database_and_volume(server, tmp_path):
    alice = f"Token {server.keys['alice']}"
    notes = {"content": "- Prefers short answers\n- 偏好简短的回答\n"}
    assert call("PUT", f"{server.base}/api/users/me/workspace/MEMORY.md", notes, token=alice)[0] == 200
    backup = tmp_path / "backup"
    server.manage("backup", str(backup))
    restored = {**server.env, "SQLITE_PATH": str(tmp_path / "restored.sqlite3"), "WORKSPACE_ROOT": str(tmp_path / "ws")}
    manage(restored, "restore", str(backup))
    answers = manage(
        restored,
        "shell",
        "-c",
        RESTORED.replace("KEY", server.keys["alice"]).replace("PROJECT", server.keys["project"]),
    )
    copy = json.loads(answers.strip().splitlines()[-1])
    original = call("GET", f"{server.base}/api/projects/{server.keys['project']}/identity-memories", token=alice)[2]
    assert copy["memories"] == [m["id"] for m in original["results"]] and copy["memories"]
    assert copy["notes"] == notes["content"]


RESTORED = """
import json
from django.test import Client
client = Client(SERVER_NAME="127.0.0.1", HTTP_AUTHORIZATION="Token KEY")
print(json.dumps({
    "memories": [m["id"] for m in client.get("/api/projects/PROJECT/identity-memories").json()["results"]],
    "notes": client.get("/api/users/me/workspace/MEMORY.md").json()["content"],
}))
"""


def test_sigterm_stops_the_server_and_the_worker(server):
    assert server.stop() == 143
    lines = [json.loads(line) for line in server.log_lines() if line.startswith("{")]
    assert any(line["message"] == "memory_worker stopped" for line in lines)
    assert any(line["message"] == "Shutting down: Master" for line in lines)
