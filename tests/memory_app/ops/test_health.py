"""/healthz says the process answers and touches nothing; /readyz checks the database, the
migrations, the workspace root and (when one is expected) the worker's heartbeat. Both are
open to anyone and say nothing but which check failed."""

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder
from django.utils import timezone

from memory_app.ops import health
from memory_app.ops.services import worker_heartbeat

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_migration_check(monkeypatch):
    monkeypatch.setitem(health._seen, "migrated", False)
    monkeypatch.setitem(health._last, "answer", None)


@pytest.fixture
def no_readiness_cache(settings):
    settings.READYZ_CHECK_SECONDS = 0


def test_healthz_answers_without_the_database(client, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"]


def test_readyz_is_ready_and_names_only_its_checks(client):
    response = client.get("/readyz", HTTP_AUTHORIZATION="Token forged")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "checks": {"database": "ok", "migrations": "ok", "workspace": "ok"},
    }


def test_readyz_needs_a_recent_worker_heartbeat_when_one_is_expected(client, settings, no_readiness_cache):
    settings.WORKER_EXPECTED = True
    assert client.get("/readyz").json()["checks"]["worker"] == "failed"
    assert client.get("/readyz").status_code == 503
    worker_heartbeat(worker_id="w1", started_at=timezone.now(), now=timezone.now() - timedelta(minutes=10))
    assert client.get("/readyz").status_code == 503  # too old
    worker_heartbeat(worker_id="w1", started_at=timezone.now())
    response = client.get("/readyz")
    assert response.status_code == 200 and response.json()["checks"]["worker"] == "ok"


def test_readyz_fails_when_the_workspace_root_is_not_writable(client, settings, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    settings.WORKSPACE_ROOT = blocker / "workspaces"
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {
        "status": "unavailable",
        "checks": {"database": "ok", "migrations": "ok", "workspace": "failed"},
    }
    assert str(tmp_path) not in response.content.decode()


def test_readyz_fails_while_a_migration_is_not_applied(client):
    recorder = MigrationRecorder(connection)
    latest = recorder.migration_qs.filter(app="memory_app").order_by("-name").first()
    latest.delete()  # rolled back with the test
    response = client.get("/readyz")
    assert response.status_code == 503 and response.json()["checks"]["migrations"] == "failed"


def test_readyz_leaves_no_file_behind(client, workspace_root):
    client.get("/readyz")
    assert list(workspace_root.iterdir()) == []


def test_probes_are_not_redirected_to_https(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200
    assert client.get("/api/users/me/profile").status_code == 301


def test_probes_within_the_interval_run_the_checks_once(client, settings, monkeypatch, workspace_root):
    settings.READYZ_CHECK_SECONDS = 5
    writes = []
    real = health._workspace
    monkeypatch.setattr(health, "_workspace", lambda: writes.append(1) or real())
    for _ in range(20):
        response = client.get("/readyz")
        assert response.status_code == 200 and response.json()["status"] == "ok"
    assert len(writes) == 1
    assert list(workspace_root.iterdir()) == []


def test_concurrent_probes_run_the_checks_once(settings, monkeypatch):
    settings.READYZ_CHECK_SECONDS = 5
    runs = []
    monkeypatch.setattr(health, "_check_all", lambda: runs.append(1) or (time.sleep(0.2), ({"status": "ok"}, 200))[1])
    threads = [threading.Thread(target=health._readiness) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(runs) == 1


def test_a_failure_is_reported_and_not_kept_past_the_interval(client, settings, monkeypatch, tmp_path):
    settings.READYZ_CHECK_SECONDS = 5
    clock = [1000.0]
    monkeypatch.setattr(health.time, "monotonic", lambda: clock[0])
    assert client.get("/readyz").status_code == 200
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    good_root = settings.WORKSPACE_ROOT
    settings.WORKSPACE_ROOT = blocker / "workspaces"
    assert client.get("/readyz").status_code == 200  # within the interval: the last answer
    clock[0] += 5
    response = client.get("/readyz")
    assert response.status_code == 503 and response.json()["checks"]["workspace"] == "failed"
    settings.WORKSPACE_ROOT = good_root
    clock[0] += 4
    assert client.get("/readyz").status_code == 503  # the failure holds for its interval only
    clock[0] += 1
    assert client.get("/readyz").status_code == 200
