"""Personas: alice (owner of a project), bob (shares it, as member), mallory (no access),
svc (service principal), admin (staff). ``api(user)`` returns a client with that user's token.

Runs: every test gets its own workspace root (``workspace_root``); ``make_run(user)`` creates a
run through the real service and ``run_api(token)`` is a client that authenticates with its token."""

import pytest
from django.core.cache import cache
from django.db import connection
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from rest_framework.test import APIClient

from config import throttling
from identity_app.models import Role
from identity_app.services import token_issue, user_grant_service
from memory_app.reads import recorder as reads_recorder
from memory_app.runs import services as run_services
from memory_app.threads import services as thread_services
from memory_app.threads.models import Conversation
from tests import logcheck
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.memory_app.runs.helpers import RunHandle, memory_path

logcheck.install()

# Timings never decide whether a test passes (benchmarks print them, bench/): no deadline per
# example, and no health check that fails a test for generating its data slowly. A loaded machine
# (the two passes at once, CI) made a first example that compiles the redaction rules "too slow".
hypothesis_settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile("suite")

# Modules whose module-scoped fixtures start servers: with pytest-xdist (``--dist loadgroup``,
# scripts/test.sh) each runs whole on one worker, so its servers start once, not once per worker.
ONE_WORKER_MODULES = ("tests/test_serve.py", "tests/test_two_nodes.py")
# Folders whose modules share one session-scoped server (tests/clients/conftest.py): one group.
ONE_WORKER_FOLDERS = ("tests/clients/",)
# ... except the integrations' tests, which share a server of their own (``integrations``): a
# group of their own, so both groups run at once on two workers.
INTEGRATION_MODULES = tuple(
    f"tests/clients/test_{name}_live.py"
    for name in (
        "mem0",
        "mem0_older",
        "mem0_js",
        "langgraph",
        "langmem",
        "openai_agents",
        "langchain",
        "langchain_history",
        "langchain_agent",
        "connect_snippets",
    )
)


# Fixtures through which a test reaches the test database (pytest-django refuses it to others).
DATABASE_FIXTURES = {
    "db",
    "transactional_db",
    "django_db_reset_sequences",
    "django_db_serialized_rollback",
    "live_server",
}
# The servers of tests/clients/conftest.py: their database is the run's (PostgreSQL in its pass),
# so a test of them is one of each database.
SERVER_FIXTURES = {"live", "integrations"}


def same_on_every_database(item) -> bool:
    """A test whose outcome does not depend on the test database: it never reaches it (pure
    functions, subprocesses that bring their own database; not the clients' live servers, which
    run on the run's), or it drives the browser (the pages' data rules are checked on both
    databases by the API, web and service tests).
    ``scripts/test.sh`` runs these in the SQLite pass only (``TEST_DB_AGNOSTIC=0`` leaves them
    out of the PostgreSQL pass); a PostgreSQL-only test is never one of them."""
    if item.get_closest_marker("postgres_only"):
        return False
    if item.get_closest_marker("browser"):
        return True
    return item.get_closest_marker("django_db") is None and not (DATABASE_FIXTURES | SERVER_FIXTURES) & set(
        item.fixturenames
    )


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    """PostgreSQL-only tests are deselected (not skipped) when the suite runs on SQLite; with
    ``TEST_DB_AGNOSTIC=0`` the tests that are the same on every database are deselected too."""
    import os

    if os.environ.get("TEST_DB_AGNOSTIC", "1") == "0":
        keep, drop = [], []
        for item in items:
            (drop if same_on_every_database(item) else keep).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep

    if config.pluginmanager.hasplugin("xdist"):
        for item in items:
            module = item.nodeid.split("::", 1)[0]
            if module in ONE_WORKER_MODULES:
                item.add_marker(pytest.mark.xdist_group(module))
            if module in INTEGRATION_MODULES:
                item.add_marker(pytest.mark.xdist_group("integrations"))
                continue
            for folder in ONE_WORKER_FOLDERS:
                if module.startswith(folder):
                    item.add_marker(pytest.mark.xdist_group(folder))
    if os.environ.get("DATABASE_URL"):
        return
    keep, drop = [], []
    for item in items:
        (drop if item.get_closest_marker("postgres_only") else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(autouse=True)
def log_records_are_well_formed():
    """Every record a test writes could be built and formatted (tests/logcheck.py)."""
    logcheck.take()
    yield
    problems = logcheck.take()
    assert not problems, "log records that cannot be built or formatted:\n" + "\n".join(problems)


@pytest.fixture
def is_postgres():
    return connection.vendor == "postgresql"


@pytest.fixture
def alice(db):
    return UserFactory(username="alice")


@pytest.fixture
def bob(db):
    return UserFactory(username="bob")


@pytest.fixture
def mallory(db):
    return UserFactory(username="mallory")


@pytest.fixture
def svc(db):
    user = UserFactory(username="svc")
    user_grant_service(user=user)
    return user


@pytest.fixture
def admin(db):
    return UserFactory(username="admin", is_staff=True, is_superuser=True)


@pytest.fixture
def project(alice, bob):
    project = ProjectFactory(name="Apollo")
    MembershipFactory(project=project, user=alice, role=Role.OWNER)
    MembershipFactory(project=project, user=bob, role=Role.MEMBER)
    return project


class TokenClient(APIClient):
    def __init__(self, user, key):
        super().__init__()
        self.user = user
        self.key = key
        self.credentials(HTTP_AUTHORIZATION=f"Token {key}")


@pytest.fixture
def api(db):
    def make(user=None):
        if user is None:
            return APIClient()
        _, key = token_issue(user=user)
        return TokenClient(user, key)

    return make


class Clock:
    """A clock the throttles read, so a test never straddles the end of a window."""

    def __init__(self, now=1_000_000.0):
        self.now = now

    def __call__(self):
        return self.now


@pytest.fixture
def throttle_clock(monkeypatch):
    """The throttles' windows follow this clock, moved by hand (``throttle_clock.now += 60``)."""
    clock = Clock()
    monkeypatch.setattr(throttling.ScopeThrottle, "timer", staticmethod(clock))
    return clock


@pytest.fixture(autouse=True)
def fresh_cache():
    """Throttle counters live in the cache: every test starts from zero."""
    cache.clear()


@pytest.fixture(autouse=True)
def reads_buffer_empty():
    """Reads a test buffered without a request to write them (a service called directly) never
    reach the next test's database: every test starts and ends with an empty buffer."""
    reads_recorder.discard()
    yield
    reads_recorder.discard()


@pytest.fixture(autouse=True)
def workspace_root(tmp_path, settings):
    """Every test gets its own workspace root, so no test sees another's files."""
    root = tmp_path / "workspaces"
    root.mkdir()
    settings.WORKSPACE_ROOT = root
    return root


@pytest.fixture
def make_run(svc):
    """``make_run(user, kind="chat", conversation=None, ...)`` → RunHandle, created by the
    service principal through the real service."""

    def make(
        user,
        *,
        kind="chat",
        conversation: Conversation | None = None,
        parent=None,
        worker_id="w1",
        lease_seconds=60,
        prompt="Hello",
        goal=None,
        request_id="req-1",
        **conv,
    ):
        if conversation is None:
            conversation = thread_services.conversation_create(actor=svc, username=user.username, title="t", **conv)
        if kind == "subagent" and parent is None:
            parent = make(user, conversation=conversation, worker_id=worker_id).run
        issued = run_services.run_create(
            actor=svc,
            username=user.username,
            conversation_id=conversation.pk,
            request_id=request_id,
            kind=kind,
            worker_id=worker_id,
            lease_seconds=lease_seconds,
            prompt=prompt,
            goal=goal,
            parent_run_id=parent.pk if parent else None,
        )
        return RunHandle(issued.run, issued.run_token)

    return make


@pytest.fixture
def run_api(db):
    """``run_api(token)`` → an API client that authenticates with a run token."""

    def make(token: str | None):
        client = APIClient()
        if token is not None:
            client.credentials(HTTP_AUTHORIZATION=f"Run {token}")
        return client

    return make


@pytest.fixture
def web(client):
    """``web(user)``: the test client, signed in as ``user`` (the pages)."""

    def login(user):
        client.force_login(user)
        return client

    return login


@pytest.fixture
def world(alice, svc, project, make_run, run_api, api, workspace_root):
    """Alice with a run and a notes file: API clients of alice, svc and the run, and the ids the
    routes take (the request-limit and bad-text tests walk every route with it)."""
    handle = make_run(alice)
    response = api(alice).put("/api/users/me/workspace/MEMORY.md", {"content": "- likes tea\n"}, format="json")
    assert response.status_code == 200, response.content
    return {
        "alice": api(alice),
        "svc": api(svc),
        "run": run_api(handle.token),
        "run_id": handle.id,
        "conversation_id": handle.run.conversation_id,
        "project_id": project.pk,
        "memory_file": memory_path(workspace_root, alice),
    }
