"""Pieces of ``bench_server``: the production server started as ``make serve`` starts it
(``scripts/serve.sh``: gunicorn, DEBUG off) and stopped with everything it started, keep-alive
HTTP clients in threads, latency figures, and the raw cost of one durable publish.

Not a benchmark itself (``scripts/bench.sh`` runs ``bench/bench_*.py`` only).
"""

import contextlib
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from search_common import percentile

ROOT = Path(__file__).resolve().parent.parent


def server_env(
    url: str,
    temp: Path,
    workspace: Path,
    provider: str,
    *,
    worker: bool = False,
    metrics_dir: str = "prometheus",
    **extra: str,
) -> dict:
    """The environment a benchmark starts the production server with: its throwaway database,
    DEBUG off, no rate limits, no HTTPS redirect, its own folders under ``temp``, the embedding
    provider, and the background worker only with ``worker``; ``extra`` adds or overrides."""
    return {
        "DATABASE_URL": url,
        "DEBUG": "0",
        "API_THROTTLE": "off",
        "WORKSPACE_ROOT": str(workspace),
        "STATIC_ROOT": str(temp / "static"),
        "PROMETHEUS_MULTIPROC_DIR": str(temp / metrics_dir),
        "SECURE_SSL_REDIRECT": "0",
        "SERVE_WORKER": "1" if worker else "0",
        "WORKER_EXPECTED": "1" if worker else "0",
        "MEMORY_EMBEDDING_PROVIDER": provider,
        **extra,
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """``scripts/serve.sh HOST PORT`` in its own process group, its output in ``log_path``.

    ``env`` is added to this process's environment. ``stop()`` sends SIGTERM to serve.sh (which
    stops gunicorn and lets it finish the requests in flight), then removes whatever of its
    process group is still there."""

    def __init__(self, *, env: dict[str, str], log_path: Path, host: str = "127.0.0.1", port: int | None = None):
        self.host, self.port = host, port or free_port()
        self.env = {**os.environ, **env, "HOST": self.host, "PORT": str(self.port)}
        self.env.pop("DJANGO_SETTINGS_MODULE", None)  # manage.py and config.wsgi choose the production settings
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    def start(self, *, timeout: float = 180.0) -> None:
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child keeps writing to it
        try:
            self.proc = subprocess.Popen(
                [str(ROOT / "scripts" / "serve.sh"), self.host, str(self.port)],
                cwd=ROOT,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        finally:
            log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server stopped (status {self.proc.returncode}); see {self.log_path}")
            try:
                if self.get_once("/readyz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.25)
        raise RuntimeError(f"the server was not ready within {timeout:.0f} s; see {self.log_path}")

    def cpu_seconds(self) -> tuple[float, float]:
        """CPU time used so far (user + system) by the server's processes (serve.sh, gunicorn
        and its workers) and by every PostgreSQL process on the machine: to tell, per request,
        where the cores went."""
        if self.proc is None:
            return 0.0, 0.0
        return process_cpu(lambda comm, pgrp: pgrp == self.proc.pid), process_cpu(lambda comm, pgrp: comm == "postgres")

    def get_once(self, path: str) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=5)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def stop(self) -> bool:
        """Stop the server; True if nothing of its process group was left to kill."""
        if self.proc is None:
            return True
        pgid = self.proc.pid  # the leader of its own session and group
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=50)
        clean = True
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                break
            clean = False
            os.killpg(pgid, sig)
            time.sleep(2)
        if self.proc.poll() is None:
            self.proc.wait(timeout=10)
        self.proc = None
        return clean


def process_cpu(wanted) -> float:
    """Summed user + system CPU seconds of the processes for which ``wanted(comm, pgrp)`` and of
    their ended children (Linux ``/proc``; 0 elsewhere)."""
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    total = 0
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = entry.read_text()
        except OSError:
            continue
        comm = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        # After the name: state(0) ppid(1) pgrp(2) ... utime(11) stime(12) cutime(13) cstime(14);
        # the children's part keeps the CPU of processes that ended (a gunicorn worker
        # restarted after max_requests, a PostgreSQL backend that closed).
        if wanted(comm, int(fields[2])):
            total += sum(int(value) for value in fields[11:15])
    return total / ticks


class Client:
    """One keep-alive connection; a failed request counts as an error and reconnects."""

    def __init__(self, host: str, port: int, headers: dict[str, str] | None = None):
        self.host, self.port = host, port
        self.headers = {"Accept": "application/json", **(headers or {})}
        self.conn: http.client.HTTPConnection | None = None

    def request(self, method: str, path: str, body=None) -> tuple[int, bytes]:
        headers = dict(self.headers)
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            self.conn.request(method, path, body=data, headers=headers)
            response = self.conn.getresponse()
            payload = response.read()
            if response.getheader("Connection", "").lower() == "close":
                self.close()
            return response.status, payload
        except (OSError, http.client.HTTPException):
            self.close()
            return 0, b""

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


@dataclass
class Result:
    label: str
    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0
    wall_s: float = 0.0
    error_samples: list[str] = field(default_factory=list)
    # CPU of the server's processes and of PostgreSQL during the run, in seconds (see ``measured``).
    server_cpu_s: float | None = None
    database_cpu_s: float | None = None

    @property
    def count(self) -> int:
        return len(self.latencies_ms) + self.errors

    @property
    def throughput(self) -> float:
        return len(self.latencies_ms) / self.wall_s if self.wall_s else float("nan")

    def p(self, pct: float) -> float:
        return percentile(self.latencies_ms, pct)

    def line(self) -> str:
        if not self.latencies_ms:
            return f"{self.label:<44} n={self.count:<5} errors={self.errors}"
        line = (
            f"{self.label:<44} n={self.count:<5} p50 {self.p(50):7.2f}  p95 {self.p(95):7.2f}  p99 {self.p(99):7.2f} ms  "
            f"mean {statistics.fmean(self.latencies_ms):7.2f}  {self.throughput:8.1f}/s  errors {self.errors}"
        )
        if self.server_cpu_s is not None and self.count:
            line += (
                f"\n{'':<44} CPU per request: server {self.server_cpu_s * 1000 / self.count:.2f} ms, "
                f"PostgreSQL {self.database_cpu_s * 1000 / self.count:.2f} ms"
            )
        return line


def measured(server: "Server", run) -> Result:
    """``run()`` (a ``drive``) with the CPU the server and PostgreSQL used meanwhile."""
    server_before, database_before = server.cpu_seconds()
    result = run()
    server_after, database_after = server.cpu_seconds()
    result.server_cpu_s, result.database_cpu_s = server_after - server_before, database_after - database_before
    return result


def drive(label: str, clients: list[Client], work, *, per_client: int, expect=(200,)) -> Result:
    """Each client runs ``work(client_index, i)`` -> ``(method, path, body)`` ``per_client``
    times in its own thread, all starting together; 2xx-and-expected answers are timed, the
    rest are errors. Returns the latencies, the errors and the wall time of the whole batch;
    ``result.answers[client]`` keeps each client's parsed answers in order."""
    result = Result(label)
    result.answers = [[] for _ in clients]
    lock = threading.Lock()
    barrier = threading.Barrier(len(clients) + 1)

    def one(index: int, client: Client):
        latencies, errors, samples, answers = [], 0, [], result.answers[index]
        barrier.wait()
        for i in range(per_client):
            method, path, body = work(index, i)
            t0 = time.perf_counter()
            status, payload = client.request(method, path, body)
            elapsed = (time.perf_counter() - t0) * 1000
            if status in expect:
                latencies.append(elapsed)
                answers.append(payload)
            else:
                errors += 1
                answers.append(None)
                if len(samples) < 3:
                    samples.append(f"{status} {payload[:200]!r}")
        with lock:
            result.latencies_ms.extend(latencies)
            result.errors += errors
            result.error_samples.extend(samples)

    threads = [threading.Thread(target=one, args=(n, c), daemon=True) for n, c in enumerate(clients)]
    for thread in threads:
        thread.start()
    barrier.wait()
    t0 = time.perf_counter()
    for thread in threads:
        thread.join()
    result.wall_s = time.perf_counter() - t0
    return result


def durable_publish_floor(directory: Path, *, size: int, count: int) -> Result:
    """The physical floor of one acknowledged write: write a temporary file of ``size`` bytes,
    fsync it, rename it over the target, fsync the directory — nothing else."""
    directory.mkdir(parents=True, exist_ok=True)
    data = os.urandom(size // 2).hex().encode()[:size]
    target, temp = directory / "MEMORY.md", directory / ".MEMORY.md.tmp"
    result = Result("durable publish (write, fsync, rename, fsync dir)")
    start = time.perf_counter()
    for _ in range(count):
        t0 = time.perf_counter()
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, target)
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        result.latencies_ms.append((time.perf_counter() - t0) * 1000)
    result.wall_s = time.perf_counter() - start
    return result
