"""Factories and helpers for the auto-memory tests."""

from datetime import timedelta

import factory
from django.utils import timezone

from memory_app.agent.models import AgentRun, Conversation, Message, MessageRole, MessageType, RunKind, RunStatus
from memory_app.automemory.models import AutoMemoryClaim, AutoMemoryLogEntry, AutoMemorySettings
from memory_app.memories.models import Memory
from tests.factories import UserFactory

LONG_TALK = (
    "Let us settle the storage question for the billing service after comparing the options in detail. "
    "We decided to use PostgreSQL 16 for billing. "
    "We always run migrations before deploy. "
    "The rest of this conversation is small talk about the weather and lunch plans for the team."
)


class ConversationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Conversation

    owner = factory.SubFactory(UserFactory)
    title = factory.Sequence(lambda n: f"thread {n}")


class AgentRunFactory(factory.django.DjangoModelFactory):
    """A completed top-level run that finished an hour ago after ten minutes."""

    class Meta:
        model = AgentRun

    user = factory.SubFactory(UserFactory)
    conversation = factory.LazyAttribute(lambda r: ConversationFactory(owner=r.user, project=r.project))
    project = None
    request_id = factory.Sequence(lambda n: f"req-{n}")
    kind = RunKind.CHAT
    status = RunStatus.COMPLETED
    prompt = "Help me with the billing service."
    finished_at = factory.LazyFunction(lambda: timezone.now() - timedelta(hours=1))
    started_at = factory.LazyAttribute(lambda r: r.finished_at - timedelta(minutes=10))
    usage = factory.LazyFunction(lambda: {"duration_s": 600, "quota_remaining_pct": 80})


class MessageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Message

    conversation = factory.LazyAttribute(lambda m: m.run.conversation)
    run = factory.SubFactory(AgentRunFactory)
    role = MessageRole.USER
    type = MessageType.TEXT
    content = "hello"


def enable(user, **fields) -> AutoMemorySettings:
    values = {"generate": True, "use": True, **fields}
    row, _ = AutoMemorySettings.objects.update_or_create(user=user, defaults=values)
    return row


def finished_run(*, user, project=None, text: str = LONG_TALK, role=MessageRole.USER, **fields) -> AgentRun:
    run = AgentRunFactory(user=user, project=project, **fields)
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
