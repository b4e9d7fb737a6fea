#!/usr/bin/env bash
# mypy over config, identity_app and memory_app (settings in pyproject.toml), incremental in
# .mypy_cache. That cache does not notice a change to the types in config/settings.py (the Django
# plugin reads them through django.conf), so it is dropped whenever that file changes.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=.mypy_cache/settings.sha256
digest=$(sha256sum config/settings.py | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$digest" ]; then
  rm -rf .mypy_cache
  mkdir -p .mypy_cache
  echo "$digest" > "$stamp"
fi
# config.settings wants a SECRET_KEY when DEBUG is off; the plugin imports it.
DEBUG=1 exec .venv/bin/mypy "$@"
