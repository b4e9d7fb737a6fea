"""The write rule of chat items (``memory_app.memories.services.rules.require_write``): the user a
private chat is bound to may forget and correct its items; everything else stays refused."""

import pytest

from config.errors import NotFound, PermissionDenied, TooLarge
from identity_app.models import ChatBinding, Role
from memory_app.automemory.models import AutoMemoryLogEntry, AutoMemoryOutcome
from memory_app.memories import services
from memory_app.memories.models import GLOBAL_SCOPE_ID, Memory, Status, Tier
from memory_app.search.models import SearchDocument, SearchPosting
from tests.factories import (
    ChatBindingFactory,
    ChatMemoryFactory,
    CompletedRunFactory,
    MembershipFactory,
    MemoryCandidateFactory,
    ProjectMemoryFactory,
    UserFactory,
    UserMemoryFactory,
)

pytestmark = pytest.mark.django_db

ALICE_CHAT = "milky:private:10001"
BOB_CHAT = "milky:private:20002"


def rows():
    return sorted(Memory.objects.values_list("id", "status", "content", "superseded_by_id", "scope_type", "scope_id"))


def indexed(memory_id) -> bool:
    return SearchDocument.objects.filter(source="memory", ref=memory_id).exists()


@pytest.fixture
def chats(alice, bob):
    ChatBindingFactory(user=alice, chat_key=ALICE_CHAT)
    ChatBindingFactory(user=bob, chat_key=BOB_CHAT)
    return {
        "alice": ChatMemoryFactory(scope_id=ALICE_CHAT, content="Remind Alice to renew passport in June."),
        "bob": ChatMemoryFactory(scope_id=BOB_CHAT, content="Bob likes oolong tea"),
        "group": ChatMemoryFactory(scope_id="milky:group:777", content="The group meets on Tuesdays"),
    }


def test_bound_user_forgets_a_chat_item_with_its_search_document(alice, chats):
    item = chats["alice"]
    document = SearchDocument.objects.get(source="memory", ref=item.pk)
    assert document.vector is not None and SearchPosting.objects.filter(document=document).exists()

    assert services.memory_forget(actor=alice, memory_id=item.pk) == [item.pk]

    assert not Memory.objects.filter(pk=item.pk).exists()
    assert not SearchDocument.objects.filter(pk=document.pk).exists()
    assert not SearchPosting.objects.filter(document_id=document.pk).exists()


def test_bound_user_corrects_a_chat_item(alice, chats):
    item = chats["alice"]
    new = services.memory_supersede(actor=alice, memory_id=item.pk, content="Renew the passport in July.")
    item.refresh_from_db()
    assert (item.status, item.superseded_by_id) == (Status.SUPERSEDED, new.pk)
    assert (new.scope_type, new.scope_id, new.kind, new.created_by) == (Tier.CHAT, ALICE_CHAT, item.kind, alice)
    assert indexed(new.pk) and not indexed(item.pk)


def test_forgetting_a_corrected_chat_item_forgets_its_older_versions(alice, chats):
    new = services.memory_supersede(actor=alice, memory_id=chats["alice"].pk, content="Renew the passport in July.")
    assert sorted(services.memory_forget(actor=alice, memory_id=new.pk)) == sorted([new.pk, chats["alice"].pk])
    assert not Memory.objects.filter(scope_id=ALICE_CHAT).exists()


@pytest.mark.parametrize("action", ["forget", "supersede"])
def test_another_users_chat_item_is_404_and_unchanged(alice, chats, action):
    before = rows()
    for target in (chats["bob"], chats["group"]):
        with pytest.raises(NotFound):
            if action == "forget":
                services.memory_forget(actor=alice, memory_id=target.pk)
            else:
                services.memory_supersede(actor=alice, memory_id=target.pk, content="mine now")
    assert rows() == before


def test_the_bound_user_may_not_archive_or_move_a_chat_item(alice, chats):
    item = chats["alice"]
    before = rows()
    with pytest.raises(PermissionDenied):
        services.memory_archive(actor=alice, memory_id=item.pk)
    with pytest.raises(PermissionDenied):
        services.memory_rescope(
            actor=alice, memory_id=item.pk, from_scope=(Tier.CHAT, ALICE_CHAT), to_scope=(Tier.GLOBAL, GLOBAL_SCOPE_ID)
        )
    assert rows() == before


def test_a_removed_binding_takes_the_right_along(alice, chats):
    ChatBinding.objects.filter(user=alice).delete()
    before = rows()
    with pytest.raises(NotFound):
        services.memory_forget(actor=alice, memory_id=chats["alice"].pk)
    assert rows() == before


def test_staff_without_a_binding_is_404(chats):
    staff = UserFactory(username="staffer", is_staff=True, is_superuser=True)
    before = rows()
    with pytest.raises(NotFound):
        services.memory_forget(actor=staff, memory_id=chats["alice"].pk)
    assert rows() == before


def test_service_principals_still_change_any_chat(svc, chats):
    services.memory_supersede(actor=svc, memory_id=chats["group"].pk, content="The group meets on Wednesdays")
    services.memory_forget(actor=svc, memory_id=chats["bob"].pk)
    assert not Memory.objects.filter(scope_id=BOB_CHAT).exists()


# --- forgetting several at once -------------------------------------------------------------
def test_forget_many_takes_older_versions_candidates_and_documents(alice, chats):
    mine = UserMemoryFactory(owner=alice, content="I like green tea")
    newer = services.memory_supersede(actor=alice, memory_id=mine.pk, content="I like white tea")
    candidate = MemoryCandidateFactory(memory=chats["alice"])
    forgotten = services.memory_forget_many(actor=alice, memory_ids=[newer.pk, chats["alice"].pk])
    assert sorted(forgotten) == sorted([newer.pk, mine.pk, chats["alice"].pk])
    assert not Memory.objects.filter(pk__in=forgotten).exists()
    assert not SearchDocument.objects.filter(source="memory", ref__in=forgotten).exists()
    assert not type(candidate).objects.filter(pk=candidate.pk).exists()


def test_forget_many_is_all_or_nothing(alice, bob, chats, project):
    mine = UserMemoryFactory(owner=alice)
    bobs = UserMemoryFactory(owner=bob)
    viewer = UserFactory(username="vera")
    MembershipFactory(project=project, user=viewer, role=Role.VIEWER)
    decision = ProjectMemoryFactory(project=project)
    before = rows()
    with pytest.raises(NotFound):  # one id of someone else's
        services.memory_forget_many(actor=alice, memory_ids=[mine.pk, bobs.pk])
    with pytest.raises(NotFound):  # a forged id
        services.memory_forget_many(actor=alice, memory_ids=[mine.pk, "mem_forged"])
    with pytest.raises(NotFound):  # a chat not bound to alice
        services.memory_forget_many(actor=alice, memory_ids=[mine.pk, chats["bob"].pk])
    with pytest.raises(PermissionDenied):  # a viewer's project
        services.memory_forget_many(actor=viewer, memory_ids=[decision.pk])
    with pytest.raises(TooLarge):
        services.memory_forget_many(actor=alice, memory_ids=[f"mem_{i}" for i in range(501)])
    assert rows() == before


def test_forgetting_an_auto_memory_forgets_the_logs_copy_of_its_text(alice, project):
    run = CompletedRunFactory(user=alice, project=project)
    memory = ProjectMemoryFactory(project=project, origin="auto", content="We use PostgreSQL 16 for billing")
    entry = AutoMemoryLogEntry.objects.create(
        user=alice,
        run=run,
        run_ref=run.pk,
        outcome=AutoMemoryOutcome.EXTRACTED,
        memory_id=memory.pk,
        content=memory.content,
    )
    other = AutoMemoryLogEntry.objects.create(
        user=alice, run=run, run_ref=run.pk, outcome=AutoMemoryOutcome.EXTRACTED, memory_id="mem_other", content="kept"
    )
    services.memory_forget(actor=alice, memory_id=memory.pk)
    entry.refresh_from_db()
    other.refresh_from_db()
    assert (entry.content, entry.memory_id, entry.outcome) == ("", memory.pk, AutoMemoryOutcome.EXTRACTED)
    assert other.content == "kept"
