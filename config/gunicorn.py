"""Gunicorn settings of ``make serve`` (``scripts/serve.sh``; docs/deploy.md), read from the
environment: ``HOST``/``PORT``, ``WEB_CONCURRENCY`` processes of ``GUNICORN_THREADS`` threads,
``GUNICORN_TIMEOUT``, ``FORWARDED_ALLOW_IPS``. No Django settings are loaded here: this runs in
the master process, which serves nothing.
"""

import os

# One BLAS thread per process: the request path's numpy work is matrix-vector products (the
# vector ranking, docs/search.md), which OpenBLAS splits over every core above ~10,000 rows and
# then leaves its helper thread spinning for the next call, a core's worth of CPU after each
# search, while the other requests of these threads and processes wait for a core. Set before
# any worker imports numpy; a value from the environment wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

bind = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"
worker_class = "gthread"
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
# Nothing slow runs inside a request (extraction and dreaming are background jobs), so a
# request this old is stuck.
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
graceful_timeout = 30
keepalive = 5
# Restart each process now and then, so slow growth of memory cannot add up.
max_requests = 5000
max_requests_jitter = 500
# Only the proxy in front may set X-Forwarded-* (and so the scheme Django sees).
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
if os.path.isdir("/dev/shm"):
    worker_tmp_dir = "/dev/shm"  # heartbeat files off the disk
# No control socket: one per user account by default, so a second server on the host would
# take the first one's; signals (TERM, HUP, TTIN/TTOU) do the same work.
control_socket_disable = True
accesslog = None  # the app writes one line per request, with its request id (config/logs.py)
errorlog = "-"
loglevel = os.environ.get("LOG_LEVEL", "info").lower()

if os.environ.get("LOG_FORMAT") == "json":
    # Gunicorn's own lines (start, worker boots and exits) as JSON objects too.
    logconfig_dict = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "config.logs.JsonFormatter"}},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}},
        "loggers": {"gunicorn.error": {"handlers": ["console"], "level": loglevel.upper(), "propagate": False}},
    }


def post_worker_init(worker):
    """Django is set up in this process now: load what its first request would otherwise wait
    for (``SERVER_WARMUPS``: the search's tables and model). A failure is logged, never fatal:
    the first request then loads it, as without the warm-up."""
    from django.conf import settings  # noqa: PLC0415 - the master process loads no Django code
    from django.utils.module_loading import import_string  # noqa: PLC0415

    for path in getattr(settings, "SERVER_WARMUPS", []):
        try:
            import_string(path)()
        except Exception:  # a warm-up is an optimisation: the worker serves without it
            worker.log.exception("warm-up %s failed", path)


def child_exit(server, worker):
    """Prometheus multi-process mode: a finished process's live gauges go with it."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess  # noqa: PLC0415 - only in multi-process mode

        multiprocess.mark_process_dead(worker.pid)
