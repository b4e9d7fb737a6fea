"""Start ``scripts/serve.sh`` (what ``make serve`` runs) as a subprocess and talk to it over HTTP.

Used by ``tests/test_serve.py`` and ``tests/test_two_nodes.py``. Every server gets a free port,
its own log file, static and metrics folders; it is stopped with SIGTERM to its process group
(SIGKILL after a timeout), so no process outlives a test.
"""

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parent.parent
PYTHON = str(ROOT / ".venv" / "bin" / "python")
METRICS_TOKEN = "serve-test-metrics-token-0123456789"
READY_SECONDS = 240  # a cold start on a loaded two-core machine: migrations, collectstatic, imports
# Settings of the test process that must not reach the server.
_NOT_INHERITED = {
    "DJANGO_SETTINGS_MODULE",
    "DATABASE_URL",
    "DATABASE_TEST_NAME",
    "DEBUG",
    "SECRET_KEY",
    "SQLITE_PATH",
    "WORKSPACE_ROOT",
    "DJANGO_ALLOW_ASYNC_UNSAFE",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve_env(folder: Path, **overrides) -> dict:
    """Production settings for a server whose files live under ``folder``."""
    env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
    env.update(
        SECRET_KEY="serve-test-secret-key-with-enough-length-and-entropy-0123456789abcdef",
        ALLOWED_HOSTS="127.0.0.1",
        SECURE_SSL_REDIRECT="0",  # plain HTTP on the loopback; check --deploy says so in the log
        SQLITE_PATH=str(folder / "db.sqlite3"),
        WORKSPACE_ROOT=str(folder / "workspaces"),
        STATIC_ROOT=str(folder / "static"),
        SERVER_ADDRESS_FILE=str(folder / "server-address"),
        PROMETHEUS_MULTIPROC_DIR=str(folder / "prometheus"),
        METRICS_TOKEN=METRICS_TOKEN,
        LOG_FORMAT="json",
        WORKER_INTERVAL="1",
        MEMORY_EMBEDDING_PROVIDER="hashed",
        API_THROTTLE="off",
        WEB_CONCURRENCY="2",
        GUNICORN_THREADS="4",
        PYTHONUNBUFFERED="1",
    )
    env.update(overrides)
    return env


@dataclass
class Server:
    port: int
    proc: subprocess.Popen
    log: Path
    env: dict

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_lines(self) -> list[str]:
        return [line for line in self.log.read_text(errors="replace").splitlines() if line.strip()]

    def wait_ready(self, seconds: float = READY_SECONDS) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"serve.sh exited with {self.proc.returncode}:\n" + self.log.read_text()[-4000:])
            try:
                if call("GET", f"{self.base}/readyz", timeout=5)[0] == 200:
                    # Another process may still answer from a failure it checked before this
                    # success (a probe's answer lasts READYZ_CHECK_SECONDS): let that expire.
                    time.sleep(float(self.env.get("READYZ_CHECK_SECONDS", 5)) + 0.5)
                    return
            except OSError:
                pass
            time.sleep(0.25)
        raise AssertionError("the server never became ready:\n" + self.log.read_text()[-4000:])

    def stop(self, seconds: float = 60) -> int:
        """SIGTERM to the whole process group; SIGKILL if it has not stopped in time."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=seconds)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        return self.proc.returncode

    def manage(self, *args: str) -> str:
        return manage(self.env, *args)

    def metrics(self) -> dict[tuple[str, tuple], float]:
        status, _, text = call("GET", f"{self.base}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
        assert status == 200, text
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }


def stop_all(servers: list[Server], seconds: float = 60) -> None:
    """SIGTERM to every server at once, then wait for each (they shut down in parallel)."""
    for server in servers:
        if server.proc.poll() is None:
            os.killpg(server.proc.pid, signal.SIGTERM)
    for server in servers:
        server.stop(seconds)


def manage(env: dict, *args: str, timeout: float = 180) -> str:
    """``manage.py`` with a server's settings; its output (it must succeed)."""
    done = subprocess.run(
        [PYTHON, "manage.py", *args], check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def start(env: dict, folder: Path, port: int | None = None) -> Server:
    folder.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    log = folder / f"serve-{port}.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            ["scripts/serve.sh", "127.0.0.1", str(port)],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: gunicorn, its workers, the worker
        )
    return Server(port=port, proc=proc, log=log, env=env)


def call(method: str, url: str, body=None, *, token: str | None = None, headers: dict | None = None, timeout=30):
    """(status, headers, parsed JSON or text) of one request; HTTP errors are answers too."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", token)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, answer_headers, raw = response.status, response.headers, response.read()
    except urllib.error.HTTPError as exc:
        status, answer_headers, raw = exc.code, exc.headers, exc.read()
    text = raw.decode("utf-8", errors="replace")
    if (answer_headers.get("Content-Type") or "").startswith("application/json"):
        return status, answer_headers, json.loads(text)
    return status, answer_headers, text


SEED = """
import json
from django.contrib.auth import get_user_model
from identity_app.models import Role
from identity_app.services import project_create, token_issue, user_grant_service
from memory_app.automemory.models import AutoMemorySettings

User = get_user_model()
alice = User.objects.create_user("alice")
svc = User.objects.create_user("svc")
user_grant_service(user=svc)
svc = User.objects.get(pk=svc.pk)
project = project_create(actor=alice, name="Apollo")
AutoMemorySettings.objects.create(
    user=alice, generate=True, min_idle_minutes=0, min_duration_seconds=0, min_length_chars=10
)
print(json.dumps({
    "alice": token_issue(user=alice)[1],
    "svc": token_issue(user=svc)[1],
    "alice_id": alice.pk,
    "project": project.pk,
}))
"""


def seed(server: Server) -> dict:
    """alice (auto-memory on, no gates, a project) and a service principal, with API keys."""
    return json.loads(server.manage("shell", "-c", SEED).strip().splitlines()[-1])
