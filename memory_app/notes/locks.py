"""The per-user lock that serializes every read-modify-write of a user's workspace files and
memory switch (docs/runs.md): PostgreSQL ``pg_advisory_xact_lock`` keyed by the uid; on SQLite the
IMMEDIATE transaction (see settings) already holds the database write lock from BEGIN."""

import hashlib
import time

from django.db import DatabaseError, connection

from config.errors import ServiceUnavailable
from config.metrics import USER_LOCK_FAILURES, USER_LOCK_WAIT_SECONDS
from memory_app.notes.errors import ErrorCode

LOCK_TIMEOUT_MS = 15000


class LockFailed(ServiceUnavailable):
    code = ErrorCode.MEMORY_LOCK_FAILED


def user_lock_key(user_id: int) -> int:
    """A signed 64-bit advisory-lock key derived from the uid (namespaced so other advisory
    locks in the database cannot collide with it by accident)."""
    digest = hashlib.sha256(f"memory-service:user-workspace:{int(user_id)}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def user_lock_acquire(*, user_id: int) -> None:
    """Take the per-user lock for the rest of the current transaction. Must run inside
    ``transaction.atomic``; any failure raises ``LockFailed`` (the caller never writes
    without the lock)."""
    if not connection.in_atomic_block:
        USER_LOCK_FAILURES.inc()
        raise LockFailed("The per-user lock needs a transaction.")
    if connection.vendor != "postgresql":
        return  # SQLite: BEGIN IMMEDIATE already took the database write lock.
    try:
        with connection.cursor() as cursor:
            started = time.perf_counter()
            # One round trip: the volatile subquery in FROM sets the timeout before the lock.
            cursor.execute(
                "SELECT pg_advisory_xact_lock(%s) FROM (SELECT set_config('lock_timeout', %s, true)) AS timeout",
                [user_lock_key(user_id), f"{LOCK_TIMEOUT_MS}ms"],
            )
            USER_LOCK_WAIT_SECONDS.observe(time.perf_counter() - started)
    except DatabaseError as exc:
        USER_LOCK_FAILURES.inc()
        raise LockFailed(f"Could not take the per-user lock: {exc.__class__.__name__}.") from exc
