"""What a Redis that is down or hangs adds to a request's rate-limit check (config/throttling.py).

    .venv/bin/python bench/throttle_redis_outage.py [--seconds 12] [--redis redis://127.0.0.1:6379/0]

Each "request" charges two scopes as an API search does (``user`` and ``search``) through the
real throttles and Django's Redis cache with the production socket timeout (``REDIS_TIMEOUT_MS``,
50 ms) and breaker (``THROTTLE_BREAKER_SECONDS``, 5 s), one request every 20 ms for
``--seconds``, against:

- ``healthy``: the Redis at ``--redis`` (skipped when none answers);
- ``down``: a port nothing listens on (connections refused at once);
- ``hanging``: a TCP server that accepts and never replies (every read waits for the timeout);
- ``recovering``: the hanging server for the first half, then passing the bytes to ``--redis``.

Printed per case: requests, how many were counted per process (fallback), p50 / p99 / max of
the time the two charges took, in milliseconds. Target: max <= ~50 ms (one socket timeout per
breaker period, none in between); before the breaker, a hanging Redis cost 1 000 ms per request
and limited nothing.
"""

import argparse
import os
import socket
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

import redis  # noqa: E402
from django.conf import settings  # noqa: E402
from django.test import override_settings  # noqa: E402

from config import throttling  # noqa: E402


class Server:
    """Accepts and never replies, until ``forward`` is set: then new connections reach upstream."""

    def __init__(self, upstream):
        self.upstream, self.forward, self.sockets = upstream, False, []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.sockets.append(client)
            if self.forward:
                upstream = socket.create_connection(self.upstream)
                self.sockets.append(upstream)
                for a, b in ((client, upstream), (upstream, client)):
                    threading.Thread(target=self.pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def pipe(source, target):
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            return

    def close(self):
        for sock in [self.listener, *self.sockets]:
            sock.close()


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def measure(name: str, url: str, seconds: float, on_half=None) -> None:
    caches = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
            "KEY_PREFIX": f"bench-throttle-{os.getpid()}",
            "OPTIONS": {
                "socket_connect_timeout": settings.REDIS_TIMEOUT_MS / 1000,
                "socket_timeout": settings.REDIS_TIMEOUT_MS / 1000,
            },
        }
    }
    rates = {"anon": "100000/minute", "user": "100000/minute", "run": "100000/minute", "search": "100000/minute"}
    throttling.COUNTERS.reset()
    with override_settings(CACHES=caches, API_THROTTLE_RATES=rates):
        user, search = throttling.UserThrottle(), throttling.SearchThrottle()
        before = throttling.FALLBACK_CHARGES._value.get()
        times, start, half_done, n = [], time.monotonic(), on_half is None, 0
        while time.monotonic() - start < seconds:
            if not half_done and time.monotonic() - start >= seconds / 2:
                on_half()
                half_done = True
            began = time.perf_counter()
            user.charge("user:1")
            search.charge("user:1")
            times.append((time.perf_counter() - began) * 1000)
            n += 1
            time.sleep(0.02)
        local = (throttling.FALLBACK_CHARGES._value.get() - before) / 2
    throttling.COUNTERS.reset()
    print(
        f"{name:>10}: {n:4d} requests, {int(local):4d} counted per process, "
        f"p50 {pct(times, 0.5):6.2f}  p99 {pct(times, 0.99):6.2f}  max {max(times):7.2f} ms  (target max <= ~50)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=12.0)
    parser.add_argument("--redis", default=os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0")
    args = parser.parse_args()
    host, port = args.redis.split("//")[1].split("/")[0].rsplit(":", 1)
    print(
        f"REDIS_TIMEOUT_MS {settings.REDIS_TIMEOUT_MS}, THROTTLE_BREAKER_SECONDS {settings.THROTTLE_BREAKER_SECONDS}, "
        f"one request (two charges) every 20 ms for {args.seconds:g} s"
    )
    try:
        healthy = redis.Redis.from_url(args.redis, socket_timeout=1).ping()
    except redis.RedisError:
        healthy = False
    if healthy:
        measure("healthy", args.redis, args.seconds)
    else:
        print(f"   healthy: skipped, no Redis answers at {args.redis}")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    measure("down", f"redis://127.0.0.1:{free}/0", args.seconds)
    server = Server((host, int(port)))
    try:
        measure("hanging", f"redis://127.0.0.1:{server.port}/0", args.seconds)
    finally:
        server.close()
    if healthy:
        server = Server((host, int(port)))
        try:
            measure(
                "recovering",
                f"redis://127.0.0.1:{server.port}/0",
                args.seconds,
                on_half=lambda: setattr(server, "forward", True),
            )
        finally:
            server.close()


if __name__ == "__main__":
    main()
