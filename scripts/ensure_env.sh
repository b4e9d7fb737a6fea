#!/usr/bin/env bash
# Create .venv and install the pinned requirements when they changed since the last install.
# With the development requirements, also unpack the older client releases the tests drive
# (requirements-older-clients.txt) into .venv/older-clients/<name>-<version>.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
REQS=${1:-requirements.txt}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=".venv/.installed-$(basename "$REQS")"
digest=$(cat requirements*.txt | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$digest" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$REQS"
  echo "$digest" > "$stamp"
fi
if [ "$(basename "$REQS")" = requirements-dev.txt ]; then
  pins=$(sed -e 's/#.*//' -e 's/[[:space:]]//g' requirements-older-clients.txt | grep -E '^[A-Za-z0-9_.-]+==[^=]+$' || true)
  for pin in $pins; do
    folder=".venv/older-clients/${pin%%==*}-${pin##*==}"
    [ -f "$folder/.unpacked" ] && continue
    wheels=".venv/older-clients/.download"
    rm -rf "$wheels" "$folder" && mkdir -p "$wheels" "$folder"
    .venv/bin/python -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
      -d "$wheels" "$pin"
    .venv/bin/python -m zipfile -e "$wheels"/*.whl "$folder"
    rm -rf "$wheels"
    touch "$folder/.unpacked"
  done
fi
