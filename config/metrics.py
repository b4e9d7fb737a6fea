"""Prometheus metrics: the definitions, the request middleware and ``GET /metrics``.

``/metrics`` answers only with ``Authorization: Bearer <METRICS_TOKEN>``; without a token set
it does not exist (404). Request latency is labelled by the resolver's route name, never by
the raw path (which holds ids). The domain counters are recorded where the thing happens:
``remember_memory`` (``memory_app/runs/tools.py``) and the per-user lock
(``memory_app/notes/locks.py``), the rate limits' fallback (``config/throttling.py``, which
defines its own), auto-memory extraction (``memory_app/automemory/worker/rounds.py``),
search (``memory_app/search/engine.py``), scope-migration applies
(``memory_app/scoped/migration.py``) and background jobs (``memory_app/ops``).

Several processes (gunicorn workers, the worker beside them): each writes its samples to files
in ``PROMETHEUS_MULTIPROC_DIR``, which must be set before prometheus_client is first imported
(``make serve`` sets it and empties it at start); ``/metrics`` then adds up every process's
files, so any worker answers for all of them. Without it, a process reports its own counts.
"""

import functools
import hmac
import os
import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

from config.api.errors import error_body
from config.errors import ErrorCode
from config.logs import route_name

P = ParamSpec("P")
R = TypeVar("R")

# A one-off command run with the server's environment (backup, shell…) must not fail for want of
# the folder; its samples then count with the server's, as a process of the same host.
if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    os.makedirs(os.environ["PROMETHEUS_MULTIPROC_DIR"], exist_ok=True)

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

HTTP_REQUEST_SECONDS = Histogram(
    "memsvc_http_request_duration_seconds",
    "Time to answer a request, by route name and method.",
    ["route", "method"],
    buckets=_LATENCY_BUCKETS,
)
HTTP_REQUESTS = Counter(
    "memsvc_http_requests_total", "Requests answered, by route name, method and status.", ["route", "method", "status"]
)
REMEMBER_MEMORY = Counter(
    "memsvc_remember_memory_total",
    "remember_memory calls by result: appended, unchanged, replaced, or the error code of a refusal.",
    ["result"],
)
NOTES_WRITE_BATCH = Histogram(
    "memsvc_notes_write_batch_size",
    "remember_memory calls applied together by one group commit (one lock, one read, one publish).",
    buckets=(1, 2, 4, 8, 16, 32, 64),
)
USER_LOCK_WAIT_SECONDS = Histogram(
    "memsvc_user_lock_wait_seconds",
    "Time to take the per-user lock (PostgreSQL advisory lock; SQLite waits inside BEGIN IMMEDIATE).",
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0),
)
USER_LOCK_FAILURES = Counter("memsvc_user_lock_failures_total", "Per-user lock attempts that failed or timed out.")
AUTOMEMORY_RUNS = Counter(
    "memsvc_automemory_runs_total",
    "Auto-memory extraction outcomes per run, by outcome and the gate that stopped it (none when no gate did).",
    ["outcome", "gate"],
)
SEARCH_SECONDS = Histogram(
    "memsvc_search_duration_seconds",
    "Time of one retrieval-engine search, by mode.",
    ["mode"],
    buckets=_LATENCY_BUCKETS,
)
SCOPE_MIGRATION_ENTRIES = Counter(
    "memsvc_scope_migration_entries_total", "Scope-migration apply results per entry (dry runs excluded).", ["result"]
)
# One sample per live process (label ``pid`` in multi-process mode): what each one holds.
VECTOR_CACHE_BYTES = Gauge(
    "memsvc_vector_cache_bytes",
    "Bytes of vectors (with their ids) held by this process's cache for exact dense ranking.",
    multiprocess_mode="liveall",
)
BACKGROUND_JOBS = Counter(
    "memsvc_background_jobs_total", "Background jobs finished, by kind and final status.", ["kind", "status"]
)


def observe_search(func: Callable[P, R]) -> Callable[P, R]:
    """Times a search function whose result carries its ``mode``."""

    @functools.wraps(func)
    def timed(*args: P.args, **kwargs: P.kwargs) -> R:
        started = time.perf_counter()
        result = func(*args, **kwargs)
        SEARCH_SECONDS.labels(mode=getattr(result, "mode", "unknown")).observe(time.perf_counter() - started)
        return result

    return timed


class MetricsMiddleware:
    """Latency and count of every request, by route name (second in MIDDLEWARE, so it sees
    every response, redirects and refusals of the middleware below included)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        started = time.perf_counter()
        response = self.get_response(request)
        route = route_name(request)
        method = request.method if request.method in _METHODS else "other"
        HTTP_REQUEST_SECONDS.labels(route=route, method=method).observe(time.perf_counter() - started)
        HTTP_REQUESTS.labels(route=route, method=method, status=str(response.status_code)).inc()
        return response


def registry():
    """Every process's samples in multi-process mode; this process's otherwise."""
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    collected = CollectorRegistry()
    multiprocess.MultiProcessCollector(collected)
    return collected


@require_GET
def metrics_view(request: HttpRequest):
    token = settings.METRICS_TOKEN
    if not token:
        return JsonResponse(error_body(ErrorCode.NOT_FOUND, "Not found."), status=404)
    offered = request.headers.get("Authorization", "")
    if not hmac.compare_digest(offered.encode(), f"Bearer {token}".encode()):
        response = JsonResponse(error_body(ErrorCode.NOT_AUTHENTICATED, "A bearer token is required."), status=401)
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)


MEMORY_READS = Counter(
    "memsvc_memory_reads_total",
    "Reads of memory text by agents (docs/home.md, Who read this?): rows written, or dropped because the "
    "buffer was full or the write failed.",
    ["result"],
)
