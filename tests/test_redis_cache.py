"""``REDIS_URL``: Django's cache in Redis, shared by every node, so two nodes enforce one rate
limit between them; a Redis that does not answer lets requests through instead of failing them.

The tests that need a Redis server use ``REDIS_URL`` or ``redis://127.0.0.1:6379/0`` and are
skipped, saying so, where none answers. Keys carry a prefix of their own per run.
"""

import os
import secrets
import subprocess
import sys

import pytest
import redis
from django.core.cache import cache
from django.test import override_settings

from config import throttling
from tests.serving import ROOT, call, serve_env, start, stop_all
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
def test_throttle_counts_in_redis():
    prefix = f"memsvc-test-{secrets.token_hex(6)}"
    with override_settings(CACHES=_redis_cache(REDIS_URL, prefix), API_THROTTLE_RATES={"anon": "3/hour"}):
        throttle = throttling.AnonThrottle()
        assert [throttle.charge("198.51.100.7") for _ in range(4)] == [True, True, True, False]
        assert throttle.wait() >= 1
        found = list(redis.Redis.from_url(REDIS_URL).scan_iter(f"{prefix}:*"))
        assert len(found) == 1 and b"throttle:anon:198.51.100.7" in found[0]
        cache.clear()


def test_a_redis_that_does_not_answer_lets_requests_through(caplog):
    with override_settings(
        CACHES=_redis_cache("redis://127.0.0.1:9/0", "memsvc-down"), API_THROTTLE_RATES={"anon": "1/hour"}
    ):
        throttle = throttling.AnonThrottle()
        assert [throttle.charge("198.51.100.8") for _ in range(3)] == [True, True, True]
    assert any(r.getMessage() == "throttle cache unavailable" for r in caplog.records)


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
