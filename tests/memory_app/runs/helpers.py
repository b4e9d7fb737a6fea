"""Plain helpers for the runs/workspace/tools/context tests; the fixtures (``workspace_root``,
``make_run``, ``run_api``) live in ``tests/conftest.py``."""

from pathlib import Path

from memory_app.runs import leases
from memory_app.runs.models import AgentRun


def memory_path(root: Path, user, name: str = "MEMORY.md") -> Path:
    return Path(root) / str(user.pk) / "agents" / name


class RunHandle:
    def __init__(self, run: AgentRun, token: str):
        self.run = run
        self.token = token

    @property
    def credential(self) -> leases.RunCredential:
        credential = leases.run_credential_from_token(self.token)
        assert credential is not None
        return credential

    @property
    def id(self) -> str:
        return self.run.pk
