"""A small world for the memory home: alice's own memories, her project Apollo (bob a member,
vera a viewer), a private chat bound to her with a bot's items, a memory auto-memory extracted
from her run, and her notes file; bob has a chat and a memory of his own."""

from dataclasses import dataclass

import pytest

from identity_app.models import Role
from memory_app.automemory.models import AutoMemoryLogEntry, AutoMemoryOutcome
from memory_app.memories import services as memory_services
from memory_app.memories.models import Memory, Origin
from memory_app.notes import services as notes_services
from memory_app.scoped.consolidation import consolidate_turn
from memory_app.scoped.services import scoped_item_create
from memory_app.search.models import SearchDocument, SearchPosting, SearchScope
from tests.factories import ChatBindingFactory, CompletedRunFactory, MembershipFactory, UserFactory

ALICE_CHAT = "milky:private:10001"
BOB_CHAT = "milky:private:20002"
NOTES = "- Prefers trains over planes\n- Allergic to walnuts\n"


@dataclass
class Home:
    alice: object
    bob: object
    vera: object
    svc: object
    project: object
    mine: Memory
    project_memory: Memory
    bobs_project_memory: Memory
    chat_item: Memory
    consolidated: Memory
    auto: Memory
    log_entry: AutoMemoryLogEntry
    run: object
    bobs_memory: Memory
    bobs_chat_item: Memory


@pytest.fixture
def home(alice, bob, svc, project):
    vera = UserFactory(username="vera")
    MembershipFactory(project=project, user=vera, role=Role.VIEWER)
    mine = memory_services.memory_create(
        actor=alice, tier="user", kind="preference", content="I like green tea", origin=Origin.MANUAL
    )
    project_memory = memory_services.memory_create(
        actor=alice, tier="project", project_id=project.pk, kind="decision", content="We deploy on Fridays"
    )
    bobs_project_memory = memory_services.memory_create(
        actor=bob, tier="project", project_id=project.pk, kind="convention", content="Reviews need two approvals"
    )
    ChatBindingFactory(user=alice, chat_key=ALICE_CHAT)
    ChatBindingFactory(user=bob, chat_key=BOB_CHAT)
    chat_item, _ = scoped_item_create(
        actor=svc, session_id=ALICE_CHAT, kind="task", content="Remind Alice to renew passport in June."
    )
    report = consolidate_turn(
        actor=svc, session_id=ALICE_CHAT, messages=[{"role": "user", "content": "I prefer window seats."}]
    )
    consolidated = Memory.objects.get(pk=next(c.memory_id for c in report.candidates if c.memory_id))
    run = CompletedRunFactory(user=alice, project=project)
    auto = memory_services.memory_create(
        actor=alice,
        tier="project",
        project_id=project.pk,
        kind="decision",
        content="We use PostgreSQL 16 for billing",
        origin=Origin.AUTO,
        metadata={"subject_key": "billing database", "run_id": run.pk},
        evidence={"run_id": run.pk, "conversation_id": run.conversation_id},
        source_thread_id=run.conversation_id,
    )
    log_entry = AutoMemoryLogEntry.objects.create(
        user=alice,
        run=run,
        run_ref=run.pk,
        project_id_ref=project.pk,
        outcome=AutoMemoryOutcome.EXTRACTED,
        memory_id=auto.pk,
        content=auto.content,
    )
    notes_services.workspace_file_write(user=alice, name="MEMORY.md", content=NOTES)
    bobs_memory = memory_services.memory_create(actor=bob, tier="user", kind="fact", content="Bob collects stamps")
    bobs_chat_item, _ = scoped_item_create(actor=svc, session_id=BOB_CHAT, kind="fact", content="Bob lives in Lyon")
    return Home(
        alice=alice,
        bob=bob,
        vera=vera,
        svc=svc,
        project=project,
        mine=mine,
        project_memory=project_memory,
        bobs_project_memory=bobs_project_memory,
        chat_item=chat_item,
        consolidated=consolidated,
        auto=auto,
        log_entry=log_entry,
        run=run,
        bobs_memory=bobs_memory,
        bobs_chat_item=bobs_chat_item,
    )


def memory_rows() -> list:
    return sorted(Memory.objects.values_list("id", "status", "content", "superseded_by_id", "scope_type", "scope_id"))


def index_rows() -> tuple:
    return (
        sorted(SearchDocument.objects.values_list("source", "ref", "scope_id", "text_hash", "model")),
        SearchPosting.objects.count(),
        sorted(SearchScope.objects.values_list("key", "docs", "total_length")),
    )


def assert_forgotten(ids) -> None:
    """No row, no search document, posting or vector of ``ids`` remains."""
    ids = list(ids)
    assert ids
    assert not Memory.objects.filter(pk__in=ids).exists()
    assert not SearchDocument.objects.filter(source="memory", ref__in=ids).exists()
    assert not SearchPosting.objects.filter(document__source="memory", document__ref__in=ids).exists()


def assert_scope_empty(key: str) -> None:
    """A scope holds no document, posting or vector, and its statistics say so."""
    assert not SearchDocument.objects.filter(scope__key=key).exists()
    assert not SearchPosting.objects.filter(scope__key=key).exists()
    scope = SearchScope.objects.filter(key=key).first()
    assert scope is None or (scope.docs, scope.total_length) == (0, 0)
