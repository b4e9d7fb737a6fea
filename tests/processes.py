"""Tests that drive another program (an older client, another language's client, a migration
run from scratch) in a process of its own, which prints what it saw as JSON on its last line."""

import json
import subprocess
from pathlib import Path


def json_of_run(command: list[str], *, cwd: Path | None = None, env: dict | None = None, timeout: int = 120):
    """The JSON the program printed last; a failing program fails the test with its stderr."""
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
