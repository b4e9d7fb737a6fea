"""``/healthz`` (the process answers; touches nothing) and ``/readyz`` (it can serve: database
reachable, migrations applied, workspace root writable, and a worker's heartbeat recent when
``WORKER_EXPECTED``). Unauthenticated JSON that names each check and says ``ok`` or ``failed``,
nothing more: the reason of a failure goes to the log, not to whoever asks.

The checks of ``/readyz`` run at most once per ``READYZ_CHECK_SECONDS`` per process; probes in
between get that answer (a failure as much as a success, so neither outlives the interval).
Probes that arrive while the checks run wait for their result instead of running them again.
"""

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from typing import TypeGuard

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from memory_app.ops.selectors import worker_alive

logger = logging.getLogger(__name__)

# Once a process has seen every migration applied it stops asking (building the migration
# graph costs tens of milliseconds; a deploy with new migrations starts new processes).
_seen = {"migrated": False}
# The last answer of /readyz: (time.monotonic() when its checks ran, body, status).
_last: dict[str, tuple[float, dict, int] | None] = {"answer": None}
_checking = threading.Lock()


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _database() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        row = cursor.fetchone()
        assert row is not None  # SELECT 1 returns its row
        ok: bool = row[0] == 1
        return ok


def _migrations() -> bool:
    if not _seen["migrated"]:
        executor = MigrationExecutor(connection)
        _seen["migrated"] = not executor.migration_plan(executor.loader.graph.leaf_nodes())
    return _seen["migrated"]


def _workspace() -> bool:
    """Create, sync and remove a file in the workspace root, as a publish would."""
    root = os.fspath(settings.WORKSPACE_ROOT)
    os.makedirs(root, mode=0o700, exist_ok=True)
    path = os.path.join(root, f".readyz-{uuid.uuid4().hex}.tmp")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, b"ok")
        os.fsync(fd)
    finally:
        os.close(fd)
        os.unlink(path)
    return True


def _worker() -> bool:
    return worker_alive(max_age_seconds=settings.WORKER_HEARTBEAT_MAX_AGE)


def _run(name: str, check: Callable[[], bool]) -> str:
    try:
        return "ok" if check() else "failed"
    except (DatabaseError, OSError) as exc:
        logger.warning("readiness check failed", extra={"check": name, "error_class": type(exc).__name__})
        return "failed"


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    _ran, body, status = _readiness()
    return JsonResponse(body, status=status)


def _fresh(answer: tuple[float, dict, int] | None) -> TypeGuard[tuple[float, dict, int]]:
    return answer is not None and time.monotonic() - answer[0] < settings.READYZ_CHECK_SECONDS


def _readiness() -> tuple[float, dict, int]:
    answer = _last["answer"]
    if _fresh(answer):
        return answer
    with _checking:
        answer = _last["answer"]
        if not _fresh(answer):  # another probe may have run the checks while this one waited
            answer = (time.monotonic(), *_check_all())
            _last["answer"] = answer
    return answer


def _check_all() -> tuple[dict, int]:
    checks = {"database": _run("database", _database)}
    if checks["database"] == "ok":
        checks["migrations"] = _run("migrations", _migrations)
    else:
        checks["migrations"] = "failed"
    checks["workspace"] = _run("workspace", _workspace)
    if settings.WORKER_EXPECTED:
        checks["worker"] = _run("worker", _worker) if checks["migrations"] == "ok" else "failed"
    ready = all(value == "ok" for value in checks.values())
    return {"status": "ok" if ready else "unavailable", "checks": checks}, 200 if ready else 503
