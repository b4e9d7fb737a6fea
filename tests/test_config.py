import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_manage(*args, env_overrides):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DJANGO_SETTINGS_MODULE", "DEBUG", "SECRET_KEY", "DATABASE_URL", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    }
    env.update(env_overrides)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


PRODUCTION_ENV = {
    "DEBUG": "0",
    "SECRET_KEY": "a-long-random-production-secret-key-with-enough-entropy-0123456789abcdef",
    "ALLOWED_HOSTS": "memory.example.com",
}


def test_check_deploy_has_no_warnings_with_production_env(tmp_path):
    result = run_manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        env_overrides={**PRODUCTION_ENV, "SQLITE_PATH": str(tmp_path / "db.sqlite3")},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def _serve(*args, env_overrides):
    env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_SETTINGS_MODULE", "DATABASE_URL", "SECRET_KEY"}}
    env.update(env_overrides)
    return subprocess.run(
        ["scripts/serve.sh", *args], check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_make_serve_settings_pass_check_deploy(tmp_path):
    """``scripts/serve.sh --check`` runs ``check --deploy`` with the environment ``make serve``
    runs gunicorn and the worker with (DEBUG forced off, a worker expected, multi-process
    metrics), plus what an operator adds: JSON logs, a metrics token, the shared cache."""
    result = _serve(
        "--check",
        env_overrides={
            **PRODUCTION_ENV,
            "DEBUG": "1",  # make serve turns it off whatever the environment says
            "SQLITE_PATH": str(tmp_path / "db.sqlite3"),
            "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "prometheus"),
            "LOG_FORMAT": "json",
            "METRICS_TOKEN": "a-metrics-token-of-enough-length",
            "CACHE_BACKEND": "database",
        },
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_make_serve_refuses_to_start_without_a_secret_key(tmp_path):
    result = _serve("127.0.0.1", "1", env_overrides={"ALLOWED_HOSTS": "memory.example.com"})
    assert result.returncode == 2 and "needs SECRET_KEY" in result.stderr


def test_secret_key_is_required_without_debug(tmp_path):
    result = run_manage("check", env_overrides={"DEBUG": "0", "SQLITE_PATH": str(tmp_path / "db.sqlite3")})
    assert result.returncode != 0
    assert "SECRET_KEY is required" in result.stderr


def test_bad_boolean_env_fails_loudly(tmp_path):
    result = run_manage("check", env_overrides={**PRODUCTION_ENV, "DEBUG": "maybe"})
    assert result.returncode != 0 and "DEBUG must be a boolean" in result.stderr


def test_sqlite_default_uses_wal_and_immediate(tmp_path):
    code = (
        "from django.db import connection; c = connection.cursor(); "
        "c.execute('PRAGMA journal_mode'); print(c.fetchone()[0]); "
        "print(connection.settings_dict['OPTIONS']['transaction_mode'])"
    )
    result = run_manage(
        "shell", "-c", code, env_overrides={**PRODUCTION_ENV, "SQLITE_PATH": str(tmp_path / "db.sqlite3")}
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-2:] == ["wal", "IMMEDIATE"]


@pytest.mark.django_db
def test_schema_and_docs_work_offline(client, alice):
    schema = client.get("/api/schema/")
    assert schema.status_code == 200
    text = schema.content.decode()
    for path in (
        "/api/users/me/memories",
        "/api/projects/{project_id}/identity-memories",
        "/api/users/me/identity-context",
    ):
        assert path in text
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    html = docs.content.decode()
    external = re.findall(r'(?:src|href)=["\'](https?://[^"\']+)', html)
    assert external == []
    assert "swagger-ui" in html


@pytest.mark.postgres_only
def test_db_pool_size_gives_each_process_a_checked_pool():
    """DB_POOL_SIZE > 0: a psycopg pool shared by the threads of a process, no persistent
    per-thread connections; the pool's connections work."""
    code = (
        "import threading; from django.db import connection, connections; "
        "opts = connection.settings_dict; "
        "print(opts['OPTIONS']['pool']['max_size'], opts['CONN_MAX_AGE']); "
        "c = connection.cursor(); c.execute('select 1'); print(c.fetchone()[0]); "
        "print(type(connection.pool).__name__, connection.pool.max_size)"
    )
    url = os.environ["DATABASE_URL"]
    result = run_manage("shell", "-c", code, env_overrides={**PRODUCTION_ENV, "DATABASE_URL": url, "DB_POOL_SIZE": "3"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-5:] == ["3", "0", "1", "ConnectionPool", "3"]
    result = run_manage(
        "shell", "-c", code.split("; c =", maxsplit=1)[0], env_overrides={**PRODUCTION_ENV, "DATABASE_URL": url}
    )
    assert result.returncode != 0 and "KeyError: 'pool'" in result.stderr  # off by default


def test_gunicorn_workers_run_one_blas_thread_unless_told(monkeypatch):
    """A worker's OpenBLAS reads this when numpy loads (after the fork): one thread, so a vector
    ranking leaves no helper thread spinning on a core after each search."""
    import runpy

    path = Path(__file__).resolve().parent.parent / "config" / "gunicorn.py"
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    runpy.run_path(str(path))
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    runpy.run_path(str(path))
    assert os.environ["OPENBLAS_NUM_THREADS"] == "2"
