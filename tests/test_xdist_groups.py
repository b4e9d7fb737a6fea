"""The grouping ``make test`` relies on: with ``--dist loadgroup`` (scripts/test.sh), every test
of one ``xdist_group`` runs on one worker. Modules whose module- or session-scoped fixtures start
servers on a shared database (``tests/test_two_nodes.py``) break when their tests are spread
over two workers: each worker would drop and create the same database under the other."""

import collections
import subprocess
import sys

from tests.conftest import INTEGRATION_MODULES, ONE_WORKER_MODULES
from tests.serving import ROOT

GROUPED = """
import os
import pytest

pytestmark = pytest.mark.xdist_group("one")


@pytest.mark.parametrize("n", range(8))
def test_grouped(n):
    with open(os.path.join(os.path.dirname(__file__), "workers.txt"), "a") as out:
        out.write(os.environ["PYTEST_XDIST_WORKER"] + " ")
"""
FREE = """
import time

import pytest


@pytest.mark.parametrize("n", range(8))
def test_free(n):
    time.sleep(0.05)
"""


def test_a_group_runs_whole_on_one_worker(tmp_path):
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    (tmp_path / "test_free.py").write_text(FREE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:django",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "-s",
            "-q",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    workers = collections.Counter((tmp_path / "workers.txt").read_text().split())
    assert sum(workers.values()) == 8, workers
    assert len(workers) == 1, f"the group was spread over workers: {dict(workers)}"


def test_the_server_modules_are_in_this_repository():
    for module in ONE_WORKER_MODULES + INTEGRATION_MODULES:
        assert (ROOT / module).is_file(), module
