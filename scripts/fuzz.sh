#!/usr/bin/env bash
# `make fuzz`: schemathesis against a live development server started as `make run` starts it,
# on a throwaway database and port, once with an end user's token and once with a service
# principal's token (the run-scoped endpoints get a run token of that user). Coverage, fuzzing
# and stateful phases, each pass bounded in examples and wall-clock time. Prints a summary and
# exits non-zero on any server error or failed check.
#
#   FUZZ_SECONDS       wall-clock budget of each pass (default 180)
#   FUZZ_MAX_EXAMPLES  examples per operation and phase (default 30)
#   FUZZ_DEBUG         DEBUG of the server (default 1, as under `make run`)
#   FUZZ_DATABASE_URL  a PostgreSQL server to create the throwaway database on (default: SQLite)
#   FUZZ_WORKERS       schemathesis workers per pass (default 1: with two, Hypothesis parses
#                      source in two threads at once, which CPython 3.11.7 cannot do — "AST
#                      constructor recursion depth mismatch", CPython gh-106905)
#
# The server logs at DEBUG, so every log line of every request is built and written.
#
# Reports, the server log and the database stay in var/fuzz/<time>/.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SECONDS_PER_PASS=${FUZZ_SECONDS:-180}
MAX_EXAMPLES=${FUZZ_MAX_EXAMPLES:-30}

scripts/ensure_env.sh requirements.txt
# schemathesis lives in an environment of its own: its dependencies never meet the service's.
VENV=var/fuzz-venv
digest=$(sha256sum requirements-fuzz.txt | cut -d' ' -f1)
if [ ! -x "$VENV/bin/schemathesis" ] || [ "$(cat "$VENV/.installed" 2>/dev/null)" != "$digest" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r requirements-fuzz.txt
  echo "$digest" > "$VENV/.installed"
fi

WORK="$ROOT/var/fuzz/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$WORK"
PORT=$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
BASE="http://127.0.0.1:$PORT"

export DEBUG=${FUZZ_DEBUG:-1} API_THROTTLE=off WORKSPACE_ROOT="$WORK/workspaces" LOG_LEVEL=DEBUG
if [ "$DEBUG" = 0 ]; then
  export SECRET_KEY="fuzz-only-$(.venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(40))')"
  export ALLOWED_HOSTS=127.0.0.1 SECURE_SSL_REDIRECT=0
fi
FUZZ_DB=""
if [ -n "${FUZZ_DATABASE_URL:-}" ]; then
  FUZZ_DB="memsvc_fuzz_$$"
  DATABASE_URL=$(.venv/bin/python scripts/fuzz_setup.py --create-database "$FUZZ_DATABASE_URL" "$FUZZ_DB")
  export DATABASE_URL
else
  unset DATABASE_URL
  export SQLITE_PATH="$WORK/db.sqlite3"
fi

SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then
    kill -- "-$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  if [ -n "$FUZZ_DB" ]; then
    .venv/bin/python scripts/fuzz_setup.py --drop-database "$FUZZ_DATABASE_URL" "$FUZZ_DB" || true
  fi
}
trap cleanup EXIT

# Its own process group, so the cleanup stops the server and nothing else.
setsid scripts/run.sh 127.0.0.1 "$PORT" --noreload >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
.venv/bin/python - "$BASE/api/schema/" <<'PY'
import sys, time, urllib.request
deadline = time.monotonic() + 180
while True:
    try:
        urllib.request.urlopen(sys.argv[1], timeout=5).read()
        break
    except OSError:
        if time.monotonic() > deadline:
            sys.exit("the server did not start; see server.log")
        time.sleep(0.5)
PY
.venv/bin/python scripts/fuzz_setup.py >"$WORK/accounts.json"
field() { .venv/bin/python -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$WORK/accounts.json" "$1"; }
export FUZZ_RUN_TOKEN FUZZ_RUN_ID
FUZZ_RUN_TOKEN=$(field run_token)
FUZZ_RUN_ID=$(field run_id)

status=0
for persona in user service; do
  echo "=== schemathesis as the $persona (at most ${SECONDS_PER_PASS}s) ==="
  # --max-time ends the phases; the timeout also bounds a request or a shutdown that hangs.
  # scripts/fuzz_hooks.py: how to generate the schema's own formats (expires_at: future-date-time).
  FUZZ_TOKEN=$(field "${persona}_token") FUZZ_SPARE_TOKEN_ID=$(field "${persona}_spare_token_id") \
    PYTHONPATH="$ROOT/scripts" SCHEMATHESIS_HOOKS=fuzz_hooks \
    timeout --signal=INT --kill-after=30 $((SECONDS_PER_PASS + 120)) "$VENV/bin/schemathesis" --config-file scripts/schemathesis.toml run "$BASE/api/schema/" \
    --phases coverage,fuzzing,stateful --checks all \
    --max-examples "$MAX_EXAMPLES" --max-time "$SECONDS_PER_PASS" --workers "${FUZZ_WORKERS:-1}" \
    --report json --report-dir "$WORK/$persona" --no-color >"$WORK/$persona.txt" 2>&1 || status=1
  tail -n 25 "$WORK/$persona.txt"
done

.venv/bin/python - "$WORK" <<'PY' || status=1
import glob, json, re, sys
from collections import Counter

work = sys.argv[1]
statuses = Counter()
server_errors = []
for line in open(f"{work}/server.log", encoding="utf-8", errors="replace"):
    match = re.search(r'"([A-Z]+) (/api/\S*) HTTP/[\d.]+" (\d{3}) ', line)
    if match:
        statuses[match.group(3)] += 1
        if match.group(3).startswith("5"):
            server_errors.append(f"{match.group(1)} {match.group(2)} -> {match.group(3)}")
print("\n=== fuzz summary ===")
print(f"API requests served: {sum(statuses.values())}  by status: {dict(sorted(statuses.items()))}")
print(f"server errors (5xx): {len(server_errors)}")
for line in server_errors[:20]:
    print("  " + line)
for persona in ("user", "service"):
    reports = glob.glob(f"{work}/{persona}/json-*.json")
    if not reports:
        print(f"{persona}: no report (see {work}/{persona}.txt)")
        continue
    try:
        report = json.load(open(reports[0]))
    except ValueError:
        print(f"{persona}: the report is incomplete (see {work}/{persona}.txt)")
        continue
    cases = report["test_cases"]
    failures = report["failures"]
    print(
        f"{persona}: {cases['generated']} test cases, {report['operations']['tested']} operations, "
        f"{len(failures)} kinds of failure, {len(report['errors'])} errors, {report['running_time']:.0f}s"
    )
    for failure in failures:
        print(f"  {failure['code']} {failure['title']}: {failure['count']} in {', '.join(failure['operations'][:6])}")
print(f"reports and server log: {work}")
sys.exit(1 if server_errors else 0)
PY
exit $status
