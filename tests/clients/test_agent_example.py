"""examples/agent_loop.py, the program docs/quickstart-agents.md walks through, run as a user
would run it: a subprocess with the server's address and a service key from
``manage.py issue_token``. It must remember across its two conversations."""

import os
import subprocess
import sys

from tests.serving import ROOT


def test_the_quickstart_agent_remembers_across_two_conversations(live):
    key = live.manage("issue_token", "example-runtime", "--create-user", "--service").strip().splitlines()[-1]
    env = {**os.environ, "MEMSVC_URL": live.base, "MEMSVC_TOKEN": key}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "agent_loop.py"), "dana"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == ["PostgreSQL 16, as you decided.", "found in: Planning the billing service"]

    # What the second conversation knew came from the service: dana's notes file holds the note.
    from memsvc import Client

    with Client(live.base, live.keys["dana"]) as dana:
        titles = {c["title"] for c in dana.iter_conversations()}
        assert titles == {"Planning the billing service", "Billing migrations"}
        runs = list(dana.iter_runs())
        assert [r["status"] for r in runs] == ["completed", "completed"]
