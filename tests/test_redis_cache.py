"""``REDIS_URL``: Django's cache in Redis, shared by every node, so two nodes enforce one rate
limit between them. A Redis that is down, or accepts and never answers, neither fails requests
nor lets them through unlimited: the limits count per process meanwhile, a breaker keeps it
out of the requests' path, and the shared counters come back by themselves.

The tests that need a Redis server use ``REDIS_URL`` or ``redis://127.0.0.1:6379/0`` and are
skipped, saying so, where none answers. Keys carry a prefix of their own per run. A Redis that
is down is a port nothing listens on; one that hangs is a TCP server that accepts and never
replies (``Unanswering``), which can later start passing bytes to the real Redis.
"""

import logging
import os
import secrets
import socket
import subprocess
import sys
import threading

import pytest
import redis
from django.core.cache import cache
from django.test import Client, override_settings
from prometheus_client import REGISTRY

from config import throttling
from tests.factories import UserFactory
from tests.serving import ROOT, call, free_port, serve_env, start, stop_all
from tests.test_config import PRODUCTION_ENV

REDIS_URL = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"


def _redis_answers() -> bool:
    try:
        return bool(redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1, socket_timeout=1).ping())
    except redis.RedisError:
        return False


needs_redis = pytest.mark.skipif(not _redis_answers(), reason=f"no Redis server answers at {REDIS_URL}")


def _settings_of(env_overrides: dict) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL"}}
    env.update({**PRODUCTION_ENV, "DJANGO_SETTINGS_MODULE": "config.settings", **env_overrides})
    code = "from django.conf import settings; c = settings.CACHES['default']; print(c['BACKEND'], c['LOCATION'])"
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_redis_url_makes_the_cache_redis_and_a_redis_cache_needs_a_url():
    done = _settings_of({"REDIS_URL": "redis://cache.internal:6379/2"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["django.core.cache.backends.redis.RedisCache", "redis://cache.internal:6379/2"]
    done = _settings_of({"REDIS_URL": "redis://cache.internal:6379/2", "CACHE_BACKEND": "database"})
    assert done.stdout.split()[0] == "django.core.cache.backends.db.DatabaseCache"  # an explicit choice wins
    done = _settings_of({"CACHE_BACKEND": "redis"})
    assert done.returncode != 0 and "CACHE_BACKEND=redis needs REDIS_URL" in done.stderr
    done = _settings_of({"REDIS_URL": "http://cache.internal:6379"})
    assert done.returncode != 0 and "REDIS_URL" in done.stderr
    done = _settings_of({})
    assert done.stdout.split()[0] == "django.core.cache.backends.locmem.LocMemCache"


def _redis_cache(url: str, prefix: str) -> dict:
    return {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
            "KEY_PREFIX": prefix,
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }


@needs_redis
def test_throttle_counts_in_redis(throttle_clock):
    prefix = f"memsvc-test-{secrets.token_hex(6)}"
    with override_settings(CACHES=_redis_cache(REDIS_URL, prefix), API_THROTTLE_RATES={"anon": "3/hour"}):
        throttle = throttling.AnonThrottle()
        assert [throttle.charge("198.51.100.7") for _ in range(4)] == [True, True, True, False]
        assert throttle.wait() >= 1
        found = list(redis.Redis.from_url(REDIS_URL).scan_iter(f"{prefix}:*"))
        assert len(found) == 1 and b"throttle:anon:198.51.100.7" in found[0]
        cache.clear()


# --- Redis down, hanging, recovering ---------------------------------------------------------
class Breaker:
    """The breaker's clock, moved by hand."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def breaker(monkeypatch):
    throttling.COUNTERS.reset()
    clock = Breaker()
    monkeypatch.setattr(throttling.COUNTERS, "clock", clock)
    yield clock
    throttling.COUNTERS.reset()


class Unanswering:
    """A TCP server on 127.0.0.1 that accepts connections and never replies (``hang``), or
    passes the bytes on to ``upstream`` (``forward``): a Redis that hangs, then comes back.
    Counts connections and the bytes it was sent, so a test sees what reached it."""

    def __init__(self, upstream: tuple[str, int] | None = None):
        self.upstream = upstream
        self.forward = False
        self.connections = 0
        self.received = 0
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._open: list[socket.socket] = []
        self._closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _accept(self):
        while not self._closed.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            self.connections += 1
            self._open.append(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket):
        upstream = None
        if self.forward:
            upstream = socket.create_connection(self.upstream, timeout=5)
            self._open.append(upstream)
            threading.Thread(target=self._pipe, args=(upstream, client), daemon=True).start()
        self._pipe(client, upstream, count=True)

    def _pipe(self, source: socket.socket, target: socket.socket | None, count=False):
        while not self._closed.is_set():
            try:
                data = source.recv(65536)
            except OSError:
                return
            if not data:
                return
            if count:
                self.received += len(data)
            if target is not None:
                target.sendall(data)

    def close(self):
        self._closed.set()
        for sock in [self._server, *self._open]:
            sock.close()


@pytest.fixture
def unanswering():
    server = Unanswering(upstream=("127.0.0.1", int(REDIS_URL.split(":")[2].split("/")[0])))
    yield server
    server.close()


def _fallback_logs(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "config.throttling" and r.levelno >= logging.WARNING]


def test_with_redis_down_the_limits_count_per_process_and_say_so_once(breaker, throttle_clock, caplog):
    with override_settings(
        CACHES=_redis_cache(f"redis://127.0.0.1:{free_port()}/0", "memsvc-down"), API_THROTTLE_RATES={"anon": "3/hour"}
    ):
        throttle = throttling.AnonThrottle()
        with caplog.at_level(logging.DEBUG, logger="config.throttling"):
            assert [throttle.charge("198.51.100.8") for _ in range(5)] == [True, True, True, False, False]
            assert throttle.wait() >= 1
            breaker.now += 60  # the breaker lets a probe through: still down, still limited
            assert throttle.charge("198.51.100.8") is False
    assert _fallback_logs(caplog) == ["throttle cache unavailable; rate limits count per process until it answers"]
    assert REGISTRY.get_sample_value("memsvc_throttle_fallback") == 1.0


@pytest.mark.django_db
def test_with_redis_down_forged_tokens_search_and_run_calls_still_end_in_429(
    api, svc, alice, make_run, run_api, breaker, throttle_clock, settings
):
    settings.API_THROTTLE = True
    settings.API_THROTTLE_RATES = {
        "anon": "60/minute",
        "user": "100000/minute",
        "run": "3/minute",
        "search": "2/minute",
    }
    with override_settings(CACHES=_redis_cache(f"redis://127.0.0.1:{free_port()}/0", "memsvc-down")):
        forged = api()
        statuses = []
        for i in range(120):
            forged.credentials(HTTP_AUTHORIZATION=f"Token forged-{i:04d}-0123456789abcdef")
            statuses.append(forged.get("/api/users/me/memories").status_code)
        assert statuses == [401] * 60 + [429] * 60
        search = {"query": "tea", "session_id": "milky:private:10001"}
        service = api(svc)
        assert [service.post("/api/memory/search", search, format="json").status_code for _ in range(3)] == [
            200,
            200,
            429,
        ]
        run = make_run(alice)
        tools = run_api(run.token)
        tool = f"/api/runs/{run.id}/tools/read_thread_messages"
        assert [tools.post(tool, {}, format="json").status_code for _ in range(4)][-1] == 429


def test_a_hanging_redis_is_asked_once_then_left_alone_until_the_breaker_lets_a_probe_through(
    breaker, unanswering, throttle_clock, caplog
):
    """One request waits for the socket timeout; the others within the breaker's time never
    reach Redis at all, so a hanging Redis costs one timeout per breaker period, not one per call."""
    with override_settings(CACHES=_redis_cache(unanswering.url, "memsvc-hang"), API_THROTTLE_RATES={"anon": "2/hour"}):
        throttle = throttling.AnonThrottle()
        with caplog.at_level(logging.DEBUG, logger="config.throttling"):
            assert [throttle.charge("198.51.100.9") for _ in range(50)] == [True, True] + [False] * 48
            assert unanswering.connections == 1
            sent = unanswering.received
            assert sent > 0  # the one INCR that timed out
            breaker.now += 4.9
            throttle.charge("198.51.100.9")
            assert (unanswering.connections, unanswering.received) == (1, sent)
            breaker.now += 0.2  # past THROTTLE_BREAKER_SECONDS: one probe
            throttle.charge("198.51.100.9")
            throttle.charge("198.51.100.9")
            assert unanswering.received > sent
    assert len(_fallback_logs(caplog)) == 1


def test_the_production_settings_wait_at_most_50_ms_for_redis():
    code = (
        "from django.conf import settings; o = settings.CACHES['default']['OPTIONS']; "
        "print(o['socket_timeout'], o['socket_connect_timeout'], settings.THROTTLE_BREAKER_SECONDS)"
    )
    env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_SETTINGS_MODULE", "DATABASE_URL"}}
    env.update({**PRODUCTION_ENV, "DJANGO_SETTINGS_MODULE": "config.settings", "REDIS_URL": "redis://cache:6379/0"})
    done = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.split() == ["0.05", "0.05", "5"], done.stderr
    env["REDIS_TIMEOUT_MS"] = "0"
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0 and "REDIS_TIMEOUT_MS" in done.stderr


@needs_redis
def test_the_shared_counters_come_back_by_themselves(breaker, unanswering, caplog):
    prefix = f"memsvc-test-{secrets.token_hex(6)}"
    with override_settings(CACHES=_redis_cache(unanswering.url, prefix), API_THROTTLE_RATES={"anon": "3/hour"}):
        throttle = throttling.AnonThrottle()
        with caplog.at_level(logging.DEBUG, logger="config.throttling"):
            assert [throttle.charge("198.51.100.10") for _ in range(2)] == [True, True]  # counted locally
            assert REGISTRY.get_sample_value("memsvc_throttle_fallback") == 1.0
            unanswering.forward = True  # Redis answers again (new connections reach it)
            breaker.now += 5.1
            assert [throttle.charge("198.51.100.10") for _ in range(4)] == [True, True, True, False]
            found = list(redis.Redis.from_url(REDIS_URL).scan_iter(f"{prefix}:*"))
            assert len(found) == 1 and b"throttle:anon:198.51.100.10" in found[0]
            assert redis.Redis.from_url(REDIS_URL).get(found[0]) == b"4"  # shared again, from zero
            cache.clear()
    assert _fallback_logs(caplog) == [
        "throttle cache unavailable; rate limits count per process until it answers",
        "throttle cache answers again; rate limits are shared again",
    ]
    assert REGISTRY.get_sample_value("memsvc_throttle_fallback") == 0.0


@pytest.mark.django_db
def test_with_redis_down_the_login_lockout_still_holds(breaker):
    """Login lockouts are rows in the database (django-axes), whatever the cache does."""
    UserFactory(username="carol", password="pw-for-tests-123")
    with override_settings(CACHES=_redis_cache(f"redis://127.0.0.1:{free_port()}/0", "memsvc-down")):
        client = Client()
        for i in range(5):
            client.post("/accounts/login/", {"username": "carol", "password": f"wrong-{i}"})
        response = client.post("/accounts/login/", {"username": "carol", "password": "pw-for-tests-123"})
        assert response.status_code == 429
        assert "_auth_user_id" not in client.session


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory):
    """Two production servers (``scripts/serve.sh``) on one database and one Redis, each of
    one gunicorn process: the limit must hold across them."""
    if not _redis_answers():
        pytest.skip(f"no Redis server answers at {REDIS_URL}")
    folder = tmp_path_factory.mktemp("redis-nodes")
    shared = {
        "SQLITE_PATH": str(folder / "db.sqlite3"),
        "WORKSPACE_ROOT": str(folder / "volume"),
        "REDIS_URL": REDIS_URL,
        "CACHE_KEY_PREFIX": f"memsvc-test-{secrets.token_hex(6)}",
        "API_THROTTLE": "on",
        "API_THROTTLE_ANON": "6/hour",
        "WEB_CONCURRENCY": "1",
        "GUNICORN_THREADS": "2",
        "SERVE_WORKER": "0",
        "WORKER_EXPECTED": "0",
    }
    first = start(serve_env(folder / "a", **shared), folder / "a")
    servers = [first]
    try:
        first.wait_ready()
        # The second node finds the database prepared by the first (SQLite takes no lock).
        servers.append(start(serve_env(folder / "b", **shared, SERVE_SETUP="0"), folder / "b"))
        servers[1].wait_ready()
        yield servers
    finally:
        stop_all(servers)
        client = redis.Redis.from_url(REDIS_URL)
        for key in client.scan_iter(f"{shared['CACHE_KEY_PREFIX']}:*"):
            client.delete(key)


def test_two_nodes_enforce_one_limit_with_redis(two_nodes):
    statuses = []
    for i in range(10):  # alternately to each node, as a load balancer would send them
        status, headers, _ = call("GET", f"{two_nodes[i % 2].base}/api/users/me/memories")
        statuses.append(status)
    # Six requests in the hour between both nodes (answered 401: no credentials), then 429 on
    # both; with counters per process each node would have let six through.
    assert statuses == [401] * 6 + [429] * 4, statuses
    status, headers, _body = call("GET", f"{two_nodes[0].base}/api/users/me/memories")
    assert status == 429 and int(headers["Retry-After"]) >= 1
