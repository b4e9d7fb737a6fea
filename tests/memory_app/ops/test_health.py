"""/healthz says the process answers and touches nothing; /readyz checks the database, the
migrations, the workspace root and (when one is expected) the worker's heartbeat. Both are
open to anyone and say nothing but which check failed."""

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


def test_readyz_needs_a_recent_worker_heartbeat_when_one_is_expected(client, settings):
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
