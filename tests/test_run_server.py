"""The development server started as ``make run`` starts it (``scripts/run.sh``) does not pile
up PostgreSQL connections: it serves each request in a new thread, so a connection kept open
for reuse (``DB_CONN_MAX_AGE``) would never be reused and stay open."""

import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import psycopg
import pytest

from tests.databases import own_postgres_database

ROOT = Path(__file__).resolve().parent.parent
REQUESTS = 150

pytestmark = pytest.mark.postgres_only


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def server_database():
    """A database of its own on the PostgreSQL server of the suite, dropped afterwards."""
    with own_postgres_database("_runserver") as database:
        yield database


def connection_count(name: str) -> int:
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [name]).fetchone()[0]


def wait_for(port: int, proc: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stdout.read()
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/schema/", timeout=5).read()
            return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.3)
    raise AssertionError("the development server did not answer")


def get(url: str, key: str) -> int:
    request = urllib.request.Request(url, headers={"Authorization": f"Token {key}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()
        return response.status


def test_make_run_keeps_postgres_connections_bounded(server_database, tmp_path):
    name, url = server_database
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_SETTINGS_MODULE", "DATABASE_TEST_NAME"}}
    env.update(
        DATABASE_URL=url,
        DB_CONN_MAX_AGE="60",  # what a production-like environment would set; make run must cope
        DEBUG="1",
        API_THROTTLE="off",
        WORKSPACE_ROOT=str(tmp_path / "workspaces"),
        SERVER_ADDRESS_FILE=str(tmp_path / "server-address"),
        PYTHONUNBUFFERED="1",
    )
    env.pop("PUBLIC_BASE_URL", None)
    proc = subprocess.Popen(
        ["scripts/run.sh", "127.0.0.1", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        wait_for(port, proc)
        issued = subprocess.run(
            [str(ROOT / ".venv/bin/python"), "manage.py", "issue_token", "conn", "--create-user"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        key = issued.stdout.strip().splitlines()[-1]
        # Without PUBLIC_BASE_URL a printed sign-in link starts where `make run` was started.
        linked = subprocess.run(
            [str(ROOT / ".venv/bin/python"), "manage.py", "issue_token", "newcomer", "--create-user", "--sign-in-link"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        assert f"\nhttp://127.0.0.1:{port}/accounts/sign-in/" in linked.stderr, linked.stderr
        assert "PUBLIC_BASE_URL" in linked.stderr
        url = f"http://127.0.0.1:{port}/api/users/me/profile"
        assert get(url, key) == 200
        before = connection_count(name)
        counts = []
        for i in range(REQUESTS):
            assert get(url, key) == 200
            if i % 10 == 9:
                counts.append(connection_count(name))
        # Every request has finished and closed its connection; allow for one in flight.
        assert max(counts) <= before + 2, (before, counts)
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
