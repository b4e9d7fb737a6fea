#!/usr/bin/env bash
# Run every benchmark in bench/ against PostgreSQL ($DATABASE_URL, default the local server).
set -euo pipefail
cd "$(dirname "$0")/.."
export DATABASE_URL=${DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/postgres}
export API_THROTTLE=off  # benchmarks measure the service, not its rate limits
for bench in bench/bench_*.py; do
  echo "=== $bench ==="
  .venv/bin/python "$bench" "$@"
done
