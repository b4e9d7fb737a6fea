"""API rate limits: fixed-window counters in Django's cache, one per scope and client.

Scopes (rates in ``settings.API_THROTTLE_RATES``, read on every request so they can change):

- ``anon``: requests without valid credentials, per client address. Requests that end in 401
  (no credentials, a forged, expired or revoked token) count here too: DRF authenticates before
  it runs throttles, so the exception handler charges them (``unauthenticated_throttled``).
- ``user``: every authenticated request, per user (API token, session or run token alike).
- ``run``: the run-token endpoints that read or write memory (context and agent tools).
- ``search``: searches: ``/api/memory/search``, the history search tool, and any GET with a
  non-empty ``q``, ``search`` or ``query`` parameter.

A view joins ``run`` or ``search`` with ``throttle_scopes = (...)`` or, when that depends on
the request, ``get_throttle_scopes(request)``. ``API_THROTTLE=off`` turns every scope off.
Counters live in the ``default`` cache: with several processes or nodes that cache must be
shared (``REDIS_URL``, or ``CACHE_BACKEND=database``), or each process counts on its own.

Fail safe, not open (``SharedCounters``): while the shared cache cannot answer (Redis down, or
accepting and never answering past its socket timeout, ``REDIS_TIMEOUT_MS``), every limit counts
in a per-process fallback instead, so nothing becomes unlimited: each process then allows the
full rate, as with ``locmem``. A breaker keeps a dead or hanging Redis out of the requests'
path: after a failure the shared counters are left alone for ``THROTTLE_BREAKER_SECONDS``, then
one request at a time tries them again, and the first answer brings them back. The switch is
logged once each way and shown in ``/metrics`` (``memsvc_throttle_fallback``,
``memsvc_throttle_fallback_charges_total``).
"""

import ipaddress
import logging
import math
import os
import re
import threading
import time

from django.conf import settings
from django.core.cache import cache
from django.core.cache.backends.locmem import LocMemCache
from django.http import HttpRequest
from prometheus_client import Counter, Gauge
from redis.exceptions import RedisError
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

logger = logging.getLogger(__name__)

PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
RATE_RE = re.compile(r"\s*([1-9]\d*)\s*/\s*(s|sec|second|m|min|minute|h|hour|d|day)\s*")
SEARCH_PARAMS = ("q", "search", "query")


def parse_rate(rate: str) -> tuple[int, int]:
    """``"60/minute"`` → ``(60, 60)``: allowed requests and the window in seconds."""
    match = RATE_RE.fullmatch(rate)
    if not match:
        raise ValueError(f"a rate is N/second, N/minute, N/hour or N/day with N >= 1, got {rate!r}")
    return int(match.group(1)), PERIODS[match.group(2)[0]]


def client_address(request: HttpRequest) -> str:
    """The client's address: ``REMOTE_ADDR``, or, behind ``TRUSTED_PROXY_COUNT`` proxies, the
    address the outermost trusted proxy saw in ``X-Forwarded-For``. Without trusted proxies
    the header is ignored, so a client cannot pick a fresh identity per request."""
    meta = request.META
    remote = meta.get("REMOTE_ADDR") or ""
    proxies = api_settings.NUM_PROXIES or 0
    forwarded = meta.get("HTTP_X_FORWARDED_FOR")
    if proxies and forwarded:
        hops = [hop.strip() for hop in forwarded.split(",")]
        remote = hops[-min(proxies, len(hops))]
    return remote


def address_key(request: HttpRequest) -> str:
    """The address as a throttle identity. IPv6 clients are counted per /64, the block one
    subscriber usually holds, so rotating addresses inside it does not reset the counter."""
    address = client_address(request)
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address or "unknown"
    if parsed.version == 6:
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False))
    return str(parsed)


# Defined here rather than in config/metrics.py, which imports the error handler that imports
# this module. A metric of a process under `make serve` writes its samples to a file in
# PROMETHEUS_MULTIPROC_DIR from the moment it is defined, so the folder must exist first (as
# config/metrics.py makes sure for its own): this module may be imported before that one.
if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    os.makedirs(os.environ["PROMETHEUS_MULTIPROC_DIR"], exist_ok=True)
# One sample per live process: 1 while that process counts on its own.
FALLBACK = Gauge(
    "memsvc_throttle_fallback",
    "1 while this process counts rate limits on its own because the shared cache (Redis) does not answer.",
    multiprocess_mode="liveall",
)
FALLBACK_CHARGES = Counter(
    "memsvc_throttle_fallback_charges_total",
    "Rate-limit charges counted per process because the shared cache (Redis) did not answer.",
)
# What a shared cache that cannot answer raises: redis-py's errors (refused, reset, timed out)
# and the socket's own.
CACHE_ERRORS = (RedisError, OSError)


class SharedCounters:
    """Fixed-window counters in the shared cache, with a per-process fallback and a breaker.

    ``incr`` never raises for a cache that cannot answer and never returns "unlimited": it counts
    in ``local`` (a bounded in-process cache) while the shared one is out. ``clock`` is monotonic
    time, for the breaker only (windows follow the throttle's own timer)."""

    def __init__(self, *, clock=time.monotonic):
        self.clock = clock
        self.local = LocMemCache("throttle-fallback", {"OPTIONS": {"MAX_ENTRIES": 20000}})
        self._lock = threading.Lock()
        self._open_until: float | None = None  # None: the shared cache is in use
        self._probing = False

    def _use_shared(self) -> tuple[bool, bool]:
        """(use the shared cache for this charge, this charge is the breaker's probe)."""
        with self._lock:
            if self._open_until is None:
                return True, False
            if self._probing or self.clock() < self._open_until:
                return False, False
            self._probing = True  # one request tries the shared cache; the others count locally
            return True, True

    def incr(self, key: str, *, timeout: int) -> int:
        use_shared, probe = self._use_shared()
        if use_shared:
            try:
                count = _incr(cache, key, timeout)
            except CACHE_ERRORS as exc:
                self._failed(exc, probe=probe)
            else:
                if probe:
                    self._recovered()
                return count
        FALLBACK_CHARGES.inc()
        return _incr(self.local, key, timeout)

    def _failed(self, exc: Exception, *, probe: bool) -> None:
        seconds = float(getattr(settings, "THROTTLE_BREAKER_SECONDS", 5))
        with self._lock:
            first = self._open_until is None
            self._open_until = self.clock() + seconds
            if probe:
                self._probing = False
        if first:
            FALLBACK.set(1)
            logger.warning(
                "throttle cache unavailable; rate limits count per process until it answers",
                extra={"error_class": type(exc).__name__, "retry_seconds": seconds},
            )
        else:
            logger.debug("throttle cache still unavailable", extra={"error_class": type(exc).__name__})

    def _recovered(self) -> None:
        with self._lock:
            self._open_until = None
            self._probing = False
        FALLBACK.set(0)
        logger.warning("throttle cache answers again; rate limits are shared again")

    def reset(self) -> None:
        """Back to the shared cache with empty local counters (tests)."""
        with self._lock:
            self._open_until = None
            self._probing = False
        self.local.clear()
        FALLBACK.set(0)


def _incr(store, key: str, timeout: int) -> int:
    try:
        return store.incr(key)
    except ValueError:  # the first request of this window (or its entry was evicted)
        return 1 if store.add(key, 1, timeout=timeout) else store.incr(key)


COUNTERS = SharedCounters()


def _view_scopes(request: Request, view) -> tuple[str, ...]:
    get_scopes = getattr(view, "get_throttle_scopes", None)
    scopes = tuple(get_scopes(request)) if get_scopes else tuple(getattr(view, "throttle_scopes", ()))
    if request.method == "GET" and any(request.query_params.get(name) for name in SEARCH_PARAMS):
        scopes += ("search",)
    return scopes


class ScopeThrottle(BaseThrottle):
    """One scope's fixed-window counter. Denied requests count too, so hammering a closed
    window does not buy anything; the window still ends on time."""

    scope = ""
    timer = staticmethod(time.time)
    _wait: int | None = None

    def applies(self, request: Request, view) -> bool:
        return self.scope in _view_scopes(request, view)

    def ident(self, request: Request) -> str:
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            return f"user:{user.pk}"
        return f"addr:{address_key(request)}"

    def allow_request(self, request: Request, view) -> bool:
        self._wait = None
        if not settings.API_THROTTLE or not self.applies(request, view):
            return True
        return self.charge(self.ident(request))

    def charge(self, ident: str) -> bool:
        """Count one request for ``ident``; False (and ``wait()`` set) past the rate."""
        limit, window = parse_rate(settings.API_THROTTLE_RATES[self.scope])
        now = self.timer()
        start = math.floor(now / window) * window
        key = f"throttle:{self.scope}:{ident}:{window}:{start}"
        count = COUNTERS.incr(key, timeout=window + 1)
        if count <= limit:
            return True
        self._wait = max(1, math.ceil(start + window - now))
        return False

    def wait(self):
        return getattr(self, "_wait", None)


class AnonThrottle(ScopeThrottle):
    scope = "anon"

    def applies(self, request: Request, view) -> bool:
        return not request.user.is_authenticated


class UserThrottle(ScopeThrottle):
    scope = "user"

    def applies(self, request: Request, view) -> bool:
        return request.user.is_authenticated


class RunThrottle(ScopeThrottle):
    scope = "run"


class SearchThrottle(ScopeThrottle):
    scope = "search"


def unauthenticated_throttled(request: HttpRequest) -> exceptions.Throttled | None:
    """Charge a request that failed authentication to its address; past the ``anon`` rate the
    answer is 429 instead of 401, so guessing tokens is as limited as anonymous calls."""
    if not settings.API_THROTTLE:
        return None
    throttle = AnonThrottle()
    if throttle.charge(f"addr:{address_key(request)}"):
        return None
    return exceptions.Throttled(wait=throttle.wait())
