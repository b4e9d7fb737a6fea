"""Fixtures shared by the runs/workspace/tools/context tests (imported with ``*``)."""

from pathlib import Path

import pytest

from memory_app.agent import leases, services
from memory_app.agent.models import AgentRun, Conversation

__all__ = ["workspace_root", "make_run", "memory_path", "run_api", "RunHandle"]


@pytest.fixture(autouse=True)
def workspace_root(tmp_path, settings):
    """Every test gets its own workspace root."""
    root = tmp_path / "workspaces"
    root.mkdir()
    settings.WORKSPACE_ROOT = root
    return root


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


@pytest.fixture
def make_run(svc):
    """``make_run(user, kind="chat", conversation=None, ...)`` → RunHandle, created by the
    service principal through the real service."""

    def make(user, *, kind="chat", conversation: Conversation | None = None, parent=None, worker_id="w1",
             lease_seconds=60, prompt="Hello", goal=None, request_id="req-1", **conv):
        if conversation is None:
            conversation = services.conversation_create(actor=svc, username=user.username, title="t", **conv)
        if kind == "subagent" and parent is None:
            parent = make(user, conversation=conversation, worker_id=worker_id).run
        issued = services.run_create(
            actor=svc,
            username=user.username,
            conversation_id=conversation.pk,
            request_id=request_id,
            kind=kind,
            worker_id=worker_id,
            lease_seconds=lease_seconds,
            prompt=prompt,
            goal=goal,
            parent_run_id=parent.pk if parent else None,
        )
        return RunHandle(issued.run, issued.run_token)

    return make


@pytest.fixture
def run_api(db):
    """``run_api(token)`` → an API client that authenticates with a run token."""
    from rest_framework.test import APIClient

    def make(token: str | None):
        client = APIClient()
        if token is not None:
            client.credentials(HTTP_AUTHORIZATION=f"Run {token}")
        return client

    return make
