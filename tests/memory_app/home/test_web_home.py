"""The memory home pages through the Django test client."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from memory_app.memories.models import Memory, Status
from tests.factories import UserFactory
from tests.memory_app.home.conftest import ALICE_CHAT, BOB_CHAT, assert_forgotten, index_rows, memory_rows

pytestmark = pytest.mark.django_db


def items_url(source: str) -> str:
    return reverse("web:memory_home_items") + "?" + f"source={source}"


def test_home_shows_every_source_with_its_sentence_switches_and_links(web, home):
    response = web(home.alice).get(reverse("web:home"))
    assert response.status_code == 200
    text = response.text
    for title in ("About me", "Notes file", "Project Apollo", f"Chat “{ALICE_CHAT}”", "Auto-extracted"):
        assert title in text
    assert "I like green tea" in text and "We use PostgreSQL 16 for billing" in text
    assert "Helper agents it starts never see them" in text and "it is off now" in text and "it is on now" in text
    assert reverse("web:settings") in text
    assert "2 lines" in text
    assert "passport" not in text  # chats show counts; their items are one click away
    assert BOB_CHAT not in text and "Bob collects stamps" not in text


def test_home_search_highlights_hits_of_every_source(web, home):
    response = web(home.alice).get(reverse("web:home"), {"q": "passport walnuts tea"})
    text = response.text
    assert "Remind Alice to renew <mark>passport</mark> in June." in text
    assert "I like green <mark>tea</mark>" in text
    assert "- Allergic to <mark>walnuts</mark>" in text
    assert f'data-source="chat:{ALICE_CHAT}"' in text


def test_home_search_of_another_user_finds_nothing_of_alices(web, home):
    text = web(home.bob).get(reverse("web:home"), {"q": "passport walnuts green"}).text
    assert "Remind Alice" not in text and "Allergic" not in text and "I like green" not in text
    assert "Nothing agents may use about you matches" in text


def test_a_new_user_is_told_how_to_start(web, db):
    text = web(UserFactory(username="newbie")).get(reverse("web:home")).text
    assert "Nothing yet. Add what agents should know about you" in text
    assert "No notes file yet" in text


def test_items_page_lists_a_chat_with_provenance_and_actions(web, home):
    response = web(home.alice).get(items_url(f"chat:{ALICE_CHAT}"))
    assert response.status_code == 200
    text = response.text
    assert "Remind Alice to renew passport in June." in text
    assert "The agent service “svc” learned it from the chat" in text
    assert reverse("web:memory_home_item_forget", args=[home.chat_item.pk]) in text
    assert f'name="ids" value="{home.chat_item.pk}"' in text


def test_items_page_of_a_viewer_has_no_actions(web, home):
    text = web(home.vera).get(items_url(f"project:{home.project.pk}")).text
    assert "We deploy on Fridays" in text
    assert 'name="ids"' not in text and "Forget selected" not in text


def test_item_page_answers_why_do_you_know_this(web, home):
    text = web(home.alice).get(reverse("web:memory_home_item", args=[home.auto.pk])).text
    assert "Why do you know this?" in text
    assert f"Auto-memory extracted it from your agent task {home.run.pk}" in text
    assert reverse("web:run_detail", args=[home.run.pk]) in text
    assert reverse("web:conversation_detail", args=[home.run.conversation_id]) in text
    assert f"{reverse('web:auto_memory_log')}?run={home.run.pk}#log-{home.log_entry.pk}" in text


def test_the_log_links_its_run_and_memory(web, home):
    text = web(home.alice).get(reverse("web:auto_memory_log"), {"run": home.run.pk}).text
    assert f'id="log-{home.log_entry.pk}"' in text
    assert reverse("web:run_detail", args=[home.run.pk]) in text
    assert reverse("web:memory_home_item", args=[home.auto.pk]) in text
    other_run = web(home.alice).get(reverse("web:auto_memory_log"), {"run": "run_other"}).text
    assert f'id="log-{home.log_entry.pk}"' not in other_run


def test_correct_a_chat_item_on_the_web(web, home):
    client = web(home.alice)
    url = reverse("web:memory_home_item_correct", args=[home.chat_item.pk])
    assert "Remind Alice to renew passport in June." in client.get(url).text
    response = client.post(url, {"kind": "task", "content": "Renew the passport in July."})
    assert response.status_code == 302
    new = Memory.objects.get(scope_id=ALICE_CHAT, content="Renew the passport in July.")
    assert response["Location"] == reverse("web:memory_home_item", args=[new.pk])
    home.chat_item.refresh_from_db()
    assert (home.chat_item.status, home.chat_item.superseded_by_id) == (Status.SUPERSEDED, new.pk)


def test_forget_a_chat_item_on_the_web(web, home):
    client = web(home.alice)
    url = reverse("web:memory_home_item_forget", args=[home.chat_item.pk])
    assert "Forget this memory?" in client.get(url).text
    assert Memory.objects.filter(pk=home.chat_item.pk).exists()
    response = client.post(url)
    assert response.status_code == 302
    assert_forgotten([home.chat_item.pk])


def test_others_cannot_open_correct_or_forget_alices_chat_item(web, home, mallory):
    before = (memory_rows(), index_rows())
    for user in (home.bob, home.vera, home.svc, mallory):
        client = web(user)
        for name in ("web:memory_home_item", "web:memory_home_item_correct", "web:memory_home_item_forget"):
            assert client.get(reverse(name, args=[home.chat_item.pk])).status_code == 404
        assert client.post(reverse("web:memory_home_item_forget", args=[home.chat_item.pk])).status_code == 404
        response = client.post(
            reverse("web:memory_home_item_correct", args=[home.chat_item.pk]), {"kind": "task", "content": "x"}
        )
        assert response.status_code == 404
    assert (memory_rows(), index_rows()) == before


def test_bulk_forget_shows_the_selection_first(web, home):
    client = web(home.alice)
    url = reverse("web:memory_home_forget_selected")
    ids = [home.chat_item.pk, home.consolidated.pk]
    preview = client.post(url, {"ids": ids, "source": f"chat:{ALICE_CHAT}"})
    assert preview.status_code == 200 and "Forget 2 memories?" in preview.text
    assert Memory.objects.filter(pk__in=ids).count() == 2
    done = client.post(url, {"ids": ids, "source": f"chat:{ALICE_CHAT}", "confirmed": "yes"})
    assert done.status_code == 302 and done["Location"] == items_url(f"chat%3A{ALICE_CHAT.replace(':', '%3A')}")
    assert_forgotten(ids)


def test_bulk_forget_with_a_foreign_id_forgets_nothing(web, home):
    before = memory_rows()
    client = web(home.alice)
    url = reverse("web:memory_home_forget_selected")
    for foreign in (home.bobs_chat_item.pk, "mem_forged"):
        assert client.post(url, {"ids": [home.mine.pk, foreign]}).status_code == 404
        assert client.post(url, {"ids": [home.mine.pk, foreign], "confirmed": "yes"}).status_code == 404
    assert client.post(url, {"confirmed": "yes"}).status_code == 302  # nothing selected: back, with a message
    assert memory_rows() == before


def test_forget_everything_needs_the_typed_word(web, home, workspace_root):
    client = web(home.alice)
    url = reverse("web:memory_home_forget_all")
    page = client.get(url, {"source": "all"})
    assert page.status_code == 200 and 'data-confirm-word="FORGET"' in page.text
    before = (memory_rows(), index_rows())
    wrong = client.post(url, {"source": "all", "confirm": "forget"})
    assert wrong.status_code == 400 and "Type FORGET to confirm" in wrong.text
    assert (memory_rows(), index_rows()) == before
    done = client.post(url, {"source": "all", "confirm": "FORGET"})
    assert done.status_code == 302
    assert not Memory.objects.filter(owner=home.alice).exists()
    assert not Memory.objects.filter(scope_id=ALICE_CHAT).exists()
    assert not (workspace_root / str(home.alice.pk) / "agents" / "MEMORY.md").exists()
    assert Memory.objects.filter(pk=home.project_memory.pk).exists()


def test_forget_everything_pages_of_others_sources(web, home):
    url = reverse("web:memory_home_forget_all")
    assert web(home.alice).get(url, {"source": f"chat:{BOB_CHAT}"}).status_code == 404
    assert web(home.vera).get(url, {"source": f"project:{home.project.pk}"}).status_code == 403
    before = memory_rows()
    assert web(home.alice).post(url, {"source": f"chat:{BOB_CHAT}", "confirm": "FORGET"}).status_code == 404
    assert web(home.vera).post(url, {"source": f"project:{home.project.pk}", "confirm": "FORGET"}).status_code == 403
    assert web(home.alice).get(url, {"source": "nonsense"}).status_code == 400
    assert memory_rows() == before


def test_export_downloads_json_and_markdown(web, home):
    client = web(home.alice)
    response = client.get(reverse("web:memory_home_export"))
    assert response.status_code == 200 and response["Content-Disposition"].startswith("attachment;")
    assert json.loads(response.content)["memories"]["user"][0]["content"] == "I like green tea"
    markdown = client.get(reverse("web:memory_home_export"), {"as": "markdown"})
    assert markdown["Content-Type"].startswith("text/markdown") and b"# Memory export of alice" in markdown.content


def upload(data: bytes, name: str = "export.json"):
    return SimpleUploadedFile(name, data, content_type="application/json")


def test_import_an_export_on_the_web(web, home):
    client = web(home.alice)
    data = json.loads(client.get(reverse("web:memory_home_export")).content)
    data["memories"]["user"].append({"kind": "fact", "content": "Speaks Portuguese"})
    response = client.post(reverse("web:memory_home_import"), {"file": upload(json.dumps(data).encode())})
    assert response.status_code == 200
    assert "1 memory added." in response.text and "1 already known, skipped." in response.text
    assert Memory.objects.filter(owner=home.alice, content="Speaks Portuguese", origin="manual").exists()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\xff\xfe not utf-8", "not UTF-8"),
        (b"{not json", "not JSON"),
        (b"[" * 40 + b"]" * 40, "nests deeper"),
        (json.dumps({"format": "x"}).encode(), "Not an export of this service"),
        (b"x" * (1024 * 1024 + 1), "larger than"),
    ],
)
def test_bad_import_files_change_nothing(web, home, data, message):
    before = memory_rows()
    response = web(home.alice).post(reverse("web:memory_home_import"), {"file": upload(data)})
    assert response.status_code == 400 and message in response.text
    assert memory_rows() == before


def test_the_memory_pages_link_to_the_provenance(web, home):
    text = web(home.alice).get(items_url("user")).text
    assert reverse("web:memory_home_item", args=[home.mine.pk]) + "#provenance" in text
    assert "wrote it by hand" in text and "Manual" not in text
