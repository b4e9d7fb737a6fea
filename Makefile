.PHONY: run test migrate superuser bench

HOST ?= 127.0.0.1
PORT ?= 8000

run:
	@scripts/ensure_env.sh requirements.txt
	@scripts/run.sh $(HOST) $(PORT)

test:
	@scripts/test.sh

migrate:
	@scripts/ensure_env.sh requirements.txt
	@DEBUG=$${DEBUG:-1} .venv/bin/python manage.py migrate

bench:
	@scripts/ensure_env.sh requirements-dev.txt
	@scripts/bench.sh
