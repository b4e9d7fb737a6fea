#!/usr/bin/env bash
# The production server (docs/deploy.md): gunicorn with DEBUG off and the static files served
# by the app, after the migrations are applied, with memory_worker beside it. Stops both on
# SIGTERM/SIGINT, and both when either one exits.
#
#   scripts/serve.sh [HOST] [PORT]     # make serve
#   scripts/serve.sh --check           # only `manage.py check --deploy` under these settings
#
# Needs SECRET_KEY and ALLOWED_HOSTS. SERVE_WORKER=0 starts no worker here (one runs elsewhere);
# WORKER_INTERVAL (30) and WORKER_DREAM=1 shape it; SERVE_SETUP=0 skips the database setup.
set -euo pipefail
cd "$(dirname "$0")/.."
CHECK_ONLY=0
if [ "${1:-}" = "--check" ]; then
  CHECK_ONLY=1
  shift
fi
export HOST=${1:-${HOST:-127.0.0.1}}
export PORT=${2:-${PORT:-8000}}
export DEBUG=0
export WORKER_EXPECTED=${WORKER_EXPECTED:-1}
export PROMETHEUS_MULTIPROC_DIR=${PROMETHEUS_MULTIPROC_DIR:-$PWD/var/prometheus}
PY=.venv/bin/python

if [ "$CHECK_ONLY" = 1 ]; then
  exec $PY manage.py check --deploy --fail-level WARNING
fi
if [ -z "${SECRET_KEY:-}" ] || [ -z "${ALLOWED_HOSTS:-}" ]; then
  echo "make serve needs SECRET_KEY (50+ random characters) and ALLOWED_HOSTS (see docs/deploy.md)" >&2
  exit 2
fi

# Samples of processes from an earlier start would be added to this one's.
rm -rf "$PROMETHEUS_MULTIPROC_DIR"
mkdir -p "$PROMETHEUS_MULTIPROC_DIR"
# Migrations (once across nodes), the cache table, static files; check --deploy's warnings
# are printed, not fatal (e.g. no HTTPS on a test box).
prepare_flags=(-v 0)
[ "${SERVE_SETUP:-1}" = 1 ] || prepare_flags+=(--skip-database)
$PY manage.py prepare_node "${prepare_flags[@]}"
# Where printed links start when PUBLIC_BASE_URL is not set (behind a TLS proxy, set it).
. scripts/server_address.sh
record_server_address "$HOST" "$PORT"

pids=()
stop_all() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 1 400); do  # up to 40 s: gunicorn finishes the requests in flight
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop_all EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

if [ "${SERVE_WORKER:-1}" = 1 ]; then
  worker_flags=(--interval "${WORKER_INTERVAL:-30}" --embeddings)
  [ "${WORKER_DREAM:-0}" = 1 ] && worker_flags+=(--dream)
  $PY manage.py memory_worker "${worker_flags[@]}" &
  pids+=($!)
fi
.venv/bin/gunicorn -c python:config.gunicorn config.wsgi:application &
pids+=($!)

status=0
wait -n || status=$?
echo "serve: a process stopped (status $status); stopping the others" >&2  # then gunicorn says why
exit "$status"
