"""Helpers for the auto-memory tests (the factories are in ``tests/factories.py``)."""

from memory_app.agent.models import AgentRun, MessageRole
from memory_app.automemory.models import AutoMemoryClaim, AutoMemoryLogEntry, AutoMemorySettings
from memory_app.memories.models import Memory
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
