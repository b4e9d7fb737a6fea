"""Migration 0009 indexes the memories and history messages of a database that predates the
retrieval engine, with the rows of its own schema (the code it runs is frozen in it).

The database is one of the test's own, migrated from empty to 0008 and on to the latest by a
process of its own (``migration_0009_run.py``), as ``manage.py migrate`` would: not the test
database taken back to 0008 and forward again, which cost 40 s on SQLite and 80 s on PostgreSQL
in a full run, most of it rendering the models of every state on the way back."""

import os
from pathlib import Path

import pytest

from tests.databases import own_postgres_database
from tests.processes import json_of_run

ROOT = Path(__file__).resolve().parents[2]
# Settings of the test process that must not reach the subprocess.
_NOT_INHERITED = {"DJANGO_SETTINGS_MODULE", "DATABASE_URL", "DATABASE_TEST_NAME", "SQLITE_PATH", "WORKSPACE_ROOT"}


def migrated_from_before_the_engine(tmp_path: Path, **database) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DEBUG="1",
        WORKSPACE_ROOT=str(tmp_path / "workspaces"),
        MEMORY_EMBEDDING_PROVIDER="hashed",
        **database,
    )
    return json_of_run(
        [str(ROOT / ".venv" / "bin" / "python"), "-m", "tests.memory_app.migration_0009_run"],
        cwd=ROOT,
        env=env,
        timeout=600,
    )


def assert_indexed_as_the_engine_would(result: dict) -> None:
    user = result["user"]
    assert result["indexed"] == sorted(
        [["memory", "mem_active", f"user:{user}"], ["message", str(result["said"]), f"history:{user}"]]
    )


def test_0009_indexes_the_rows_written_before_the_engine_on_sqlite(tmp_path):
    assert_indexed_as_the_engine_would(
        migrated_from_before_the_engine(tmp_path, SQLITE_PATH=str(tmp_path / "db.sqlite3"))
    )


@pytest.mark.postgres_only
def test_0009_indexes_the_rows_written_before_the_engine_on_postgresql(tmp_path):
    with own_postgres_database("_0009") as (_, url):
        assert_indexed_as_the_engine_would(migrated_from_before_the_engine(tmp_path, DATABASE_URL=url))
