"""Auto-memory extraction throughput: N finished runs, rounds of 50, deterministic extractor.

    .venv/bin/python bench/automemory_round.py [N]          # SQLite
    DATABASE_URL=postgresql://… .venv/bin/python bench/automemory_round.py [N]

Builds a throwaway test database, prints runs/second and the queries per run.
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
if os.environ.get("DATABASE_URL"):
    os.environ.setdefault("DATABASE_TEST_NAME", "bench_automemory")

import django

django.setup()

from django.db import connection, reset_queries  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_databases, teardown_databases  # noqa: E402


def main(n: int) -> None:
    old = setup_databases(verbosity=0, interactive=False)
    try:
        from identity_app.models import Role
        from memory_app.automemory.worker import round_run
        from tests.factories import MembershipFactory, ProjectFactory, UserFactory
        from tests.memory_app.automemory.helpers import enable, finished_run

        user = UserFactory(username="bench")
        project = ProjectFactory()
        MembershipFactory(project=project, user=user, role=Role.OWNER)
        enable(user, min_length_chars=10)
        text = " ".join("We decided to use engine-{i} for service-{i}." for _ in range(3))
        for i in range(n):
            finished_run(user=user, project=project, text=text.replace("{i}", str(i)) + " We always test first.")
        reset_queries()
        started = time.perf_counter()
        processed = 0
        with CaptureQueriesContext(connection) as queries:
            while results := round_run(worker_id="bench", limit=50):
                processed += len(results)
        elapsed = time.perf_counter() - started
        print(
            f"{connection.vendor}: {processed} runs in {elapsed:.2f}s = {processed / elapsed:.0f} runs/s, "
            f"{len(queries) / max(processed, 1):.1f} queries/run"
        )
    finally:
        teardown_databases(old, verbosity=0)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
