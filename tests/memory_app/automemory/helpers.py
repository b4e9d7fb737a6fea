"""Helpers for the auto-memory tests (the factories are in ``tests/factories.py``)."""

from memory_app.automemory.models import AutoMemoryClaim, AutoMemoryLogEntry, AutoMemorySettings
from memory_app.memories.models import Memory
from memory_app.ops.services import jobs_run_pending
from memory_app.runs.models import AgentRun
from memory_app.threads.models import MessageRole
from tests.factories import CompletedRunFactory, MessageFactory

LONG_TALK = (
    "Let us settle the storage question for the billing service after comparing the options in detail. "
    "We decided to use PostgreSQL 16 for billing. "
    "We always run migrations before deploy. "
    "The rest of this conversation is small talk about the weather and lunch plans for the team."
)


def enable(user, **fields) -> AutoMemorySettings:
    values = {"generate": True, "use": True, **fields}
    row, _ = AutoMemorySettings.objects.update_or_create(user=user, defaults=values)
    return row


def finished_run(*, user, project=None, text: str = LONG_TALK, role=MessageRole.USER, **fields) -> AgentRun:
    run = CompletedRunFactory(user=user, project=project, **fields)
    if text:
        MessageFactory(run=run, role=role, content=text)
    return run


def manual_round(client) -> dict:
    """The on-demand round as a runtime sees it: 202 with a status URL; a worker runs the job;
    the status URL then reports it done, with the round's result."""
    response = client.post("/api/users/me/auto-memory/run")
    assert response.status_code == 202, response.content
    assert response.json()["status"] == "queued" and response["Location"] == response.json()["status_url"]
    jobs_run_pending(worker_id="test-worker")
    status = client.get(response.json()["status_url"])
    assert status.status_code == 200 and status.json()["status"] == "done", status.content
    return status.json()["result"]


def auto_memories(project=None):
    qs = Memory.objects.filter(origin="auto")
    if project is not None:
        qs = qs.filter(project=project)
    return qs


def all_stored_text() -> str:
    """Every text the auto-memory part writes: memories, the log and claims."""
    parts = []
    for row in Memory.objects.all():
        parts += [row.content, str(row.metadata), str(row.evidence), row.source_thread_id]
    for row in AutoMemoryLogEntry.objects.all():
        parts += [row.content, row.reason, str(row.details), row.error_class, row.gate]
    for row in AutoMemoryClaim.objects.all():
        parts += [row.last_error_class, row.worker_id]
    return "\n".join(parts)
