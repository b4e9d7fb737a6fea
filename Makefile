.PHONY: run serve test lint format migrate bench fuzz

HOST ?= 127.0.0.1
PORT ?= 8000

run:
	@scripts/ensure_env.sh requirements.txt
	@scripts/run.sh $(HOST) $(PORT)

# The production server: gunicorn (DEBUG off, static files served by the app), the migrations
# applied, memory_worker beside it (scripts/serve.sh, docs/deploy.md). Needs SECRET_KEY and
# ALLOWED_HOSTS.
serve:
	@scripts/ensure_env.sh requirements.txt
	@scripts/serve.sh $(HOST) $(PORT)

test: lint
	@scripts/test.sh

# ruff (lint + format), the import contracts and cycles, no log call with an `extra` key that
# LogRecord reserves, no dead code (vulture; what only a framework reaches is listed in
# scripts/vulture_whitelist.py), no model change without a migration, and mypy with the Django
# and DRF stubs (scripts/mypy.sh).
lint:
	@scripts/ensure_env.sh requirements-dev.txt
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/lint-imports --no-cache
	.venv/bin/python scripts/import_cycles.py
	.venv/bin/python scripts/check_log_extra.py
	.venv/bin/vulture
	DEBUG=1 .venv/bin/python manage.py makemigrations --check --dry-run
	scripts/mypy.sh

format:
	@scripts/ensure_env.sh requirements-dev.txt
	.venv/bin/ruff check --fix .
	.venv/bin/ruff format .

migrate:
	@scripts/ensure_env.sh requirements.txt
	@DEBUG=$${DEBUG:-1} .venv/bin/python manage.py migrate

bench:
	@scripts/ensure_env.sh requirements-dev.txt
	@scripts/bench.sh

# schemathesis against a live development server (scripts/fuzz.sh); not part of `make test`.
fuzz:
	@scripts/fuzz.sh
