"""A PostgreSQL database of a test's own, on the suite's server (``DATABASE_URL``), for a
subprocess that brings its settings: created empty, dropped afterwards."""

import contextlib
import os
from collections.abc import Iterator

import psycopg
from psycopg import sql


def with_database(url: str, name: str) -> str:
    conninfo = psycopg.conninfo.conninfo_to_dict(url)
    conninfo["dbname"] = name
    return psycopg.conninfo.make_conninfo(**conninfo)


def postgres_url(conninfo: str) -> str:
    parts = psycopg.conninfo.conninfo_to_dict(conninfo)
    auth = parts.get("user", "postgres") + (f":{parts['password']}" if parts.get("password") else "")
    return f"postgresql://{auth}@{parts.get('host', '127.0.0.1')}:{parts.get('port', 5432)}/{parts['dbname']}"


@contextlib.contextmanager
def own_postgres_database(suffix: str) -> Iterator[tuple[str, str]]:
    """``(name, url)`` of an empty database named after the suite's test database and ``suffix``
    (two checkouts, or two workers given different suffixes, never share one)."""
    admin_url = os.environ["DATABASE_URL"]
    name = (os.environ.get("DATABASE_TEST_NAME") or "test_memsvc") + suffix

    def drop():
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    drop()
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield name, postgres_url(with_database(admin_url, name))
    finally:
        drop()
