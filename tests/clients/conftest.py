"""One live server for the client's tests: ``scripts/serve.sh`` (what ``make serve`` runs) on
a database of its own — a PostgreSQL database in the PostgreSQL pass, SQLite in the SQLite
pass — with the rate limits on and the ``search`` scope lowered to a few requests a second, so
that a 429 with ``Retry-After`` can be met and waited out in a test."""

import atexit
import json
import os
import shutil
import tempfile

import psycopg
import pytest
from psycopg import sql

from tests.serving import seed, serve_env, start

# mem0's client (tests/clients/test_mem0_*.py) writes a config file where MEM0_DIR says when it is
# imported (else in the home folder), and reports usage to its makers unless told not to.
os.environ.setdefault("MEM0_TELEMETRY", "False")
if "MEM0_DIR" not in os.environ:
    os.environ["MEM0_DIR"] = tempfile.mkdtemp(prefix="memsvc-mem0-")
    atexit.register(shutil.rmtree, os.environ["MEM0_DIR"], ignore_errors=True)

SEARCH_RATE = 5  # per second and user: GETs with q/query, POST /api/memory/search, history search

SEED = """
import json
from django.contrib.auth import get_user_model
from identity_app.services import project_create, token_issue, user_grant_service

User = get_user_model()
keys = {}
for name in ("bob", "carol", "dana", "throttled"):
    keys[name] = token_issue(user=User.objects.create_user(name))[1]
print(json.dumps(keys))
"""


def _admin_url() -> str:
    return os.environ["DATABASE_URL"]


def _database_url(name: str) -> str:
    parts = psycopg.conninfo.conninfo_to_dict(_admin_url())
    auth = parts.get("user", "postgres") + (f":{parts['password']}" if parts.get("password") else "")
    return f"postgresql://{auth}@{parts.get('host', '127.0.0.1')}:{parts.get('port', 5432)}/{name}"


def _server_database(server: str) -> str:
    """The PostgreSQL database of one of these servers: of this run (``DATABASE_TEST_NAME``) and
    of this pytest-xdist worker (each worker that runs a test of the server starts its own)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return f"{os.environ.get('DATABASE_TEST_NAME') or 'test_memsvc'}_{server}{'_' + worker if worker else ''}"


def _drop(name: str) -> None:
    with psycopg.connect(_admin_url(), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture(scope="session")
def live(tmp_path_factory):
    """The running server, with ``keys``: API keys of alice (a project owner), svc (a service
    principal), bob, carol, dana and throttled (plain users); ``keys["project"]`` is alice's project."""
    folder = tmp_path_factory.mktemp("client-server")
    overrides = {
        "API_THROTTLE": "on",
        "API_THROTTLE_SEARCH": f"{SEARCH_RATE}/second",
        "WEB_CONCURRENCY": "1",  # one process: the rate counters live in its memory
        "GUNICORN_THREADS": "8",
        "SERVE_WORKER": "0",  # no background embedding: searches rank by words
        "WORKER_EXPECTED": "0",
    }
    name = None
    if os.environ.get("DATABASE_URL"):
        name = _server_database("client")
        _drop(name)
        with psycopg.connect(_admin_url(), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        overrides["DATABASE_URL"] = _database_url(name)
    server = start(serve_env(folder, **overrides), folder)
    try:
        server.wait_ready()
        keys = seed(server)
        keys.update(json.loads(server.manage("shell", "-c", SEED).strip().splitlines()[-1]))
        server.keys = keys
        yield server
    finally:
        server.stop()
        if name:
            _drop(name)


INTEGRATIONS_SEED = """
import json
from django.contrib.auth import get_user_model
from identity_app.chat_bindings import chat_binding_create
from identity_app.models import Membership, Role
from identity_app.services import project_create, token_issue, user_grant_service

User = get_user_model()
users = {name: User.objects.create_user(name) for name in ("alice", "bob", "carol", "erin")}
svc = User.objects.create_user("svc")
user_grant_service(user=svc)
svc = User.objects.get(pk=svc.pk)
project = project_create(actor=users["alice"], name="Apollo")
Membership.objects.create(project=project, user=users["bob"], role=Role.MEMBER)
chat_binding_create(actor=svc, chat_key="milky:private:10001", username="alice")
keys = {name: token_issue(user=user)[1] for name, user in users.items()}
keys["svc"] = token_issue(user=svc)[1]
keys["lsvc"] = token_issue(user=svc, only_users=["bob"])[1]
keys["project"] = project.pk
print(json.dumps(keys))
"""


@pytest.fixture(scope="session")
def integrations(tmp_path_factory):
    """A server for the integration tests (mem0, LangGraph, the Agents SDK, LangChain), whose
    rate limits are off so that a library's quick run of calls is never throttled: keys of
    alice (a project owner), bob, carol, erin (the Connect page's snippets' own), svc (a
    service principal) and lsvc (svc limited to bob); ``keys["project"]`` is alice's project."""
    folder = tmp_path_factory.mktemp("integrations-server")
    overrides = {"WEB_CONCURRENCY": "1", "GUNICORN_THREADS": "8", "SERVE_WORKER": "0", "WORKER_EXPECTED": "0"}
    name = None
    if os.environ.get("DATABASE_URL"):
        name = _server_database("integrations")
        _drop(name)
        with psycopg.connect(_admin_url(), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        overrides["DATABASE_URL"] = _database_url(name)
    server = start(serve_env(folder, **overrides), folder)
    try:
        server.wait_ready()
        server.keys = json.loads(server.manage("shell", "-c", INTEGRATIONS_SEED).strip().splitlines()[-1])
        yield server
    finally:
        server.stop()
        if name:
            _drop(name)
