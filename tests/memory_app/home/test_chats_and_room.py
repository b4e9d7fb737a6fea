"""Chats named where they appear (the home, a chat's own list, provenance), forgetting a whole chat
that shows what goes (its items, its pending reviews) and can be undone for a while, and the
memory home's "Room left": the notes file against what agents read, the rows against what an
export holds, with a calm warning near either limit."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.html import escape

from config.errors import NotFound
from memory_app.home import services as home_services
from memory_app.home.overview import capacity_of, home_overview
from memory_app.home.provenance import provenance_for
from memory_app.home.search import home_search
from memory_app.home.sources import home_memories
from memory_app.memories import services as memory_services
from memory_app.memories.models import Memory, MemoryChange
from memory_app.notes import services as notes_services
from memory_app.scoped.models import CandidateDecision, ChatForgetUndo, MemoryCandidate
from memory_app.scoped.services import chat_forget_undo, chat_forget_undos_purge, scoped_item_create
from memory_app.search.models import SearchDocument
from tests.memory_app.home.conftest import ALICE_CHAT, BOB_CHAT

pytestmark = pytest.mark.django_db


def _rows(chat_key: str):
    memories = list(
        Memory.objects.filter(scope_type="chat", scope_id=chat_key)
        .order_by("pk")
        .values_list("pk", "content", "status", "superseded_by", "paused", "expires_at", "created_at", "created_by")
    )
    candidates = list(
        MemoryCandidate.objects.filter(session_id__startswith=chat_key)
        .order_by("pk")
        .values_list("pk", "decision", "memory", "content")
    )
    return memories, candidates


# --- chats are named where they appear ---------------------------------------------------------


def test_an_unnamed_chat_is_offered_a_name_on_the_home_and_named_everywhere_once_named(client, home):
    client.force_login(home.alice)
    page = client.get(reverse("web:home")).content.decode()
    items_url = escape(f"{reverse('web:memory_home_items')}?source=chat%3A{ALICE_CHAT.replace(':', '%3A')}")
    assert f'href="{items_url}#rename-chat"' in page and "Name this chat" in page
    chat_page = client.get(reverse("web:memory_home_items"), {"source": f"chat:{ALICE_CHAT}"})
    assert 'id="rename-chat"' in chat_page.content.decode()
    response = client.post(
        reverse("web:chat_memories"), {"chat": ALICE_CHAT, "display_name": "Travel bot", "back": "items"}
    )
    assert response.status_code == 302 and response["Location"].startswith(reverse("web:memory_home_items"))
    page = client.get(reverse("web:home")).content.decode()
    assert "Chat “Travel bot”" in page and "Name this chat" not in page
    sentence = provenance_for(user=home.alice, memories=[home.consolidated])[home.consolidated.pk].sentence
    assert "“Travel bot”" in sentence and ALICE_CHAT not in sentence
    assert any(hit.title == "Chat “Travel bot”" for hit in home_search(user=home.alice, query="passport").hits)


def test_renaming_another_users_chat_from_its_list_is_a_404_and_changes_nothing(client, home):
    client.force_login(home.alice)
    response = client.post(reverse("web:chat_memories"), {"chat": BOB_CHAT, "display_name": "Mine", "back": "items"})
    assert response.status_code == 404
    assert home.bob.chat_bindings.get().display_name == ""


# --- forgetting a whole chat, and undoing it ------------------------------------------------------


def test_the_confirmation_lists_the_items_and_says_the_pending_reviews_go_too(client, home, settings):
    settings.MEMORY_CHAT_TO_GLOBAL = "review"
    scoped_item_create(actor=home.svc, session_id=ALICE_CHAT, kind="decision", content="We fly economy only.")
    client.force_login(home.alice)
    page = client.get(reverse("web:memory_home_forget_all"), {"source": f"chat:{ALICE_CHAT}"}).content.decode()
    assert "Remind Alice to renew passport in June." in page and "We fly economy only." in page
    assert "1 of them waits for an operator&#x27;s review" in page or "1 of them waits for an operator's review" in page
    assert "You can undo this for 10 minutes" in page
    assert Memory.objects.filter(scope_id=ALICE_CHAT).exists()  # showing it forgets nothing


def test_forgetting_a_chat_then_undoing_it_puts_every_row_back_as_it_was(client, home, settings):
    settings.MEMORY_CHAT_TO_GLOBAL = "review"
    scoped_item_create(actor=home.svc, session_id=ALICE_CHAT, kind="decision", content="We fly economy only.")
    memory_services.memory_change(actor=home.alice, memory_id=home.chat_item.pk, paused=True)
    corrected = memory_services.memory_supersede(
        actor=home.alice, memory_id=home.consolidated.pk, content="I prefer aisle seats."
    )
    before = _rows(ALICE_CHAT)
    changes = list(MemoryChange.objects.values_list("memory_id", "field", "new_value"))
    pending = MemoryCandidate.objects.filter(decision=CandidateDecision.PENDING).count()
    assert pending == 1
    client.force_login(home.alice)
    response = client.post(reverse("web:memory_home_forget_all"), {"source": f"chat:{ALICE_CHAT}", "confirm": "FORGET"})
    undo = ChatForgetUndo.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse(
        "web:memory_home_forget_undo", args=[undo.pk]
    )
    assert not Memory.objects.filter(scope_id=ALICE_CHAT).exists() and not MemoryChange.objects.exists()
    assert not MemoryCandidate.objects.filter(decision=CandidateDecision.PENDING).exists()
    assert not home_search(user=home.alice, query="passport").hits  # gone from every search at once
    page = client.get(response["Location"]).content.decode()
    assert 'id="undo-forget"' in page and "review that was waiting went too" in page
    # bob can neither see nor use alice's undo.
    client.force_login(home.bob)
    assert client.get(response["Location"]).status_code == 404
    assert client.post(response["Location"], {"action": "undo"}).status_code == 404
    assert not Memory.objects.filter(scope_id=ALICE_CHAT).exists()
    client.force_login(home.alice)
    back = client.post(response["Location"], {"action": "undo"})
    assert back.status_code == 302 and "chat%3A" in back["Location"]
    after = _rows(ALICE_CHAT)
    assert after[0] == before[0]
    assert after[1] == before[1]
    assert sorted(MemoryChange.objects.values_list("memory_id", "field", "new_value")) == sorted(changes)
    assert MemoryCandidate.objects.filter(decision=CandidateDecision.PENDING).count() == pending
    assert Memory.objects.get(pk=corrected.pk).status == "active" and Memory.objects.get(pk=home.chat_item.pk).paused
    assert SearchDocument.objects.filter(ref=corrected.pk).exists()  # searchable again
    assert [h.memory.pk for h in home_search(user=home.alice, query="aisle seats").hits] == [corrected.pk]
    assert not ChatForgetUndo.objects.exists()
    assert client.post(response["Location"], {"action": "undo"}).status_code == 404  # once


def test_an_undo_after_its_time_or_after_unbinding_brings_nothing_back(api, home, settings):
    client = api(home.alice)
    response = client.post(
        "/api/users/me/memory-home/forget-all", {"source": f"chat:{ALICE_CHAT}", "confirm": "FORGET"}, format="json"
    )
    undo = response.json()["undo"]
    assert undo["items"] == 2 and undo["url"].endswith(f"/undo/{undo['id']}")
    ChatForgetUndo.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    late = client.post(undo["url"])
    assert late.status_code == 409 and late.json()["error"]["code"] == "undo_expired"
    assert not Memory.objects.filter(scope_id=ALICE_CHAT).exists()
    assert chat_forget_undos_purge() == 1 and not ChatForgetUndo.objects.exists()
    # Unbound meanwhile: the chat is no longer hers to bring back.
    scoped_item_create(actor=home.svc, session_id=ALICE_CHAT, kind="task", content="Book the dentist.")
    report = home_services.home_forget_source(actor=home.alice, source=f"chat:{ALICE_CHAT}", confirm="FORGET")
    home.alice.chat_bindings.all().delete()
    assert client.post(f"/api/users/me/memory-home/forget-all/undo/{report.undo.pk}").status_code == 404
    assert not Memory.objects.filter(scope_id=ALICE_CHAT).exists()


def test_forget_it_for_good_now_drops_the_undo(api, home):
    client = api(home.alice)
    undo = client.post(
        "/api/users/me/memory-home/forget-all", {"source": f"chat:{ALICE_CHAT}", "confirm": "FORGET"}, format="json"
    ).json()["undo"]
    assert api(home.bob).delete(undo["url"]).status_code == 404 and ChatForgetUndo.objects.exists()
    assert client.delete(undo["url"]).status_code == 204
    assert not ChatForgetUndo.objects.exists() and client.post(undo["url"]).status_code == 404


def test_no_undo_for_other_sources_when_turned_off_or_for_a_chat_too_large(api, home, settings, monkeypatch):
    client = api(home.alice)
    body = {"source": "user", "confirm": "FORGET"}
    assert client.post("/api/users/me/memory-home/forget-all", body, format="json").json()["undo"] is None
    settings.MEMORY_FORGET_UNDO_MINUTES = 0
    body = {"source": f"chat:{ALICE_CHAT}", "confirm": "FORGET"}
    assert client.post("/api/users/me/memory-home/forget-all", body, format="json").json()["undo"] is None
    settings.MEMORY_FORGET_UNDO_MINUTES = 10
    monkeypatch.setattr("memory_app.scoped.services.UNDO_MAX_ROWS", 1)
    scoped_item_create(actor=home.svc, session_id=ALICE_CHAT, kind="task", content="Book the dentist.")
    scoped_item_create(actor=home.svc, session_id=ALICE_CHAT, kind="task", content="Water the plants.")
    assert client.post("/api/users/me/memory-home/forget-all", body, format="json").json()["undo"] is None
    assert not ChatForgetUndo.objects.exists() and not Memory.objects.filter(scope_id=ALICE_CHAT).exists()


def test_the_undo_keeps_nothing_an_agent_or_a_list_could_read(api, home, svc):
    client = api(home.alice)
    client.post(
        "/api/users/me/memory-home/forget-all", {"source": f"chat:{ALICE_CHAT}", "confirm": "FORGET"}, format="json"
    )
    assert ChatForgetUndo.objects.exists()
    found = api(svc).post("/api/memory/search", {"query": "passport", "session_id": ALICE_CHAT}, format="json")
    assert found.json()["results"] == []
    listed = client.get("/api/users/me/memory-home/items", {"source": f"chat:{ALICE_CHAT}", "status": "all"})
    assert listed.json()["results"] == []
    assert "passport" not in str(client.get("/api/users/me/export").json())


def test_undo_is_refused_for_a_forged_id(home):
    with pytest.raises(NotFound):
        chat_forget_undo(actor=home.alice, undo_id="undo_made_up")
    with pytest.raises(NotFound):
        chat_forget_undo(actor=home.alice, undo_id="x" * 5000)


# --- room left ------------------------------------------------------------------------------------


def test_room_left_counts_the_notes_file_and_the_rows_and_warns_calmly_near_a_limit(home):
    capacity = home_overview(user=home.alice).capacity
    assert capacity.notes_read_bytes == 24 * 1024 and capacity.notes_bytes == len(
        b"- Prefers trains over planes\n- Allergic to walnuts\n"
    )
    assert capacity.memories == home_memories(user=home.alice).count()
    assert capacity.warnings == []
    with translation.override("en"):
        near = capacity_of(notes_bytes=20 * 1024, memories=10)
        over = capacity_of(notes_bytes=30 * 1024, memories=4600)
    assert len(near.warnings) == 1 and "83%" in near.warnings[0]
    assert "only its first 24.0\xa0KB" in over.warnings[0] and "6.0\xa0KB" in over.warnings[0]
    assert "4600" in over.warnings[1] and "5000" in over.warnings[1]


def test_the_home_shows_the_room_left_with_a_warning_past_what_agents_read(client, home):
    notes_services.workspace_file_write(user=home.alice, name="MEMORY.md", content="- note\n" * 4000)
    client.force_login(home.alice)
    page = client.get(reverse("web:home")).content.decode()
    assert 'id="home-capacity"' in page and 'id="capacity-notes"' in page
    assert "agents read only its first 24.0\xa0KB" in page


def test_the_overview_api_carries_the_room_left_and_paused_counts(api, home):
    memory_services.memory_change(actor=home.alice, memory_id=home.mine.pk, paused=True)
    body = api(home.alice).get("/api/users/me/memory-home").json()
    assert body["capacity"]["notes_read_bytes"] == 24 * 1024 and body["capacity"]["export_limit"] == 5000
    assert body["capacity"]["warnings"] == [] and body["capacity"]["in_new_chats"] == 5
    own = next(s for s in body["sources"] if s["source"] == "user")
    assert (own["count"], own["paused"]) == (1, 1)
