"""Export of the memory home (versioned JSON, and Markdown) and import of the user memories of
an export: validated like the API, idempotent, bounded, all or nothing."""

import json

import pytest
from django.test import override_settings

from config.errors import DomainError
from memory_app.memories.models import Memory, Origin, Status
from memory_app.memories.services import memory_supersede, validate_content
from tests.factories import UserFactory
from tests.memory_app.home.conftest import ALICE_CHAT, NOTES, memory_rows

pytestmark = pytest.mark.django_db

EXPORT = "/api/users/me/export"
IMPORT = "/api/users/me/import"


def export_of(client) -> dict:
    response = client.get(EXPORT)
    assert response.status_code == 200, response.content
    return response.json()


def test_export_holds_the_whole_home_with_provenance(api, home):
    data = export_of(api(home.alice))
    assert (data["format"], data["version"], data["truncated"]) == ("memory-service-export", 2, False)
    assert data["user"] == {
        "username": "alice",
        "display_name": "",
        "timezone": "UTC",
        "language": "",
        "preferences": {},
    }
    assert data["settings"] == {
        "enable_memory": True,
        "auto_memory": {
            "generate": False,
            "use": False,
            "extract_model": "",
            "consolidation_model": "",
            "min_idle_minutes": 10,
            "min_duration_seconds": 30,
            "min_length_chars": 200,
            "min_quota_remaining_pct": 20,
            "redact_contact_info": True,
        },
    }
    assert data["notes_files"]["MEMORY.md"] == NOTES and data["notes_files"]["AGENTS.md"] is None
    assert [m["content"] for m in data["memories"]["user"]] == ["I like green tea"]
    assert data["memories"]["user"][0]["provenance"]["sentence"] == "You wrote it by hand."
    (project,) = data["memories"]["projects"]
    assert (project["name"], project["role"]) == ("Apollo", "owner")
    by_id = {m["id"]: m for m in project["memories"]}
    assert by_id[home.auto.pk]["provenance"]["auto_memory_log_entry"]["id"] == home.log_entry.pk
    (chat,) = data["memories"]["chats"]
    assert chat["chat_key"] == ALICE_CHAT
    assert {m["id"] for m in chat["memories"]} == {home.chat_item.pk, home.consolidated.pk}
    assert [e["memory_id"] for e in data["auto_memory_log"]] == [home.auto.pk]


def test_export_keeps_the_correction_chain_oldest_first(api, home):
    newer = memory_supersede(actor=home.alice, memory_id=home.mine.pk, content="I like white tea")
    user = export_of(api(home.alice))["memories"]["user"]
    assert [(m["id"], m["status"]) for m in user] == [(home.mine.pk, Status.SUPERSEDED), (newer.pk, Status.ACTIVE)]
    assert user[0]["superseded_by"] == newer.pk and user[1]["replaces"] == home.mine.pk


def test_an_export_holds_nothing_of_other_peoples(api, home):
    text = api(home.bob).get(EXPORT).content.decode()
    for secret in ("green tea", "passport", "window seats", "trains over planes", ALICE_CHAT):
        assert secret not in text
    assert "Bob collects stamps" in text and "Bob lives in Lyon" in text
    # Apollo's memories are bob's to read, but alice's run and its log entry stay hers.
    (project,) = json.loads(text)["memories"]["projects"]
    auto = next(m for m in project["memories"] if m["id"] == home.auto.pk)["provenance"]
    assert (auto["run_id"], auto["thread"], auto["auto_memory_log_entry"]) == (None, None, None)
    assert json.loads(text)["auto_memory_log"] == []


def test_export_is_bounded(api, home, monkeypatch):
    from memory_app.home import export

    monkeypatch.setattr(export, "EXPORT_MAX_MEMORIES", 2)
    data = export_of(api(home.alice))
    counted = len(data["memories"]["user"]) + sum(len(s["memories"]) for s in data["memories"]["chats"])
    counted += sum(len(s["memories"]) for s in data["memories"]["projects"])
    assert counted == 2 and data["truncated"] is True


def test_markdown_export_reads_as_a_document(api, home):
    response = api(home.alice).get(EXPORT + "/markdown")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/markdown")
    text = response.content.decode()
    assert text.startswith("# Memory export of alice")
    assert "## About me" in text and "I like green tea" in text and "You wrote it by hand." in text
    assert f"## Chat {ALICE_CHAT}" in text and "## Project Apollo (your role: Owner)" in text
    assert "- Allergic to walnuts" in text


# --- import ----------------------------------------------------------------------------------
def test_export_then_forget_then_import_brings_my_memories_back(api, home):
    client = api(home.alice)
    newer = memory_supersede(actor=home.alice, memory_id=home.mine.pk, content="I like white tea")
    data = export_of(client)
    assert client.post("/api/users/me/memory-home/forget-all", {"source": "user", "confirm": "FORGET"}, format="json")
    assert not Memory.objects.filter(owner=home.alice).exists()

    response = client.post(IMPORT, data, format="json")
    assert response.status_code == 200, response.content
    report = response.json()
    assert (len(report["created"]), report["duplicates"], report["not_active"]) == (1, 0, 1)
    (restored,) = Memory.objects.filter(owner=home.alice)
    assert (restored.content, restored.kind, restored.status, restored.origin) == (
        "I like white tea",
        "preference",
        Status.ACTIVE,
        Origin.API,
    )
    assert restored.evidence["imported"]["id"] == newer.pk
    provenance = client.get(f"/api/users/me/memory-home/items/{restored.pk}").json()["provenance"]
    assert provenance["sentence"] == "You imported it from an export."
    # Search finds it again: it was indexed like any new memory.
    hits = client.get("/api/users/me/memory-home/search", {"q": "white tea"}).json()["results"]
    assert restored.pk in {hit["id"] for hit in hits}


def test_import_is_idempotent_and_skips_what_i_have(api, home):
    client = api(home.alice)
    data = export_of(client)
    data["memories"]["user"].append({"kind": "fact", "content": "Speaks Portuguese"})
    data["memories"]["user"].append({"kind": "fact", "content": "  speaks portuguese!  "})
    first = client.post(IMPORT, data, format="json").json()
    assert (len(first["created"]), first["duplicates"]) == (1, 2)
    before = memory_rows()
    second = client.post(IMPORT, data, format="json").json()
    assert (second["created"], second["duplicates"]) == ([], 3)
    assert memory_rows() == before


def test_another_users_export_imports_as_my_own_memories_only(api, home):
    data = export_of(api(home.alice))
    carol = UserFactory(username="carol")
    report = api(carol).post(IMPORT, data, format="json").json()
    assert len(report["created"]) == 1
    assert Memory.objects.get(pk=report["created"][0]).owner == carol
    # Project and chat memories of the file are never imported.
    assert not Memory.objects.filter(created_by=carol).exclude(scope_type="user").exists()


def valid_export(*items) -> dict:
    return {"format": "memory-service-export", "version": 1, "memories": {"user": list(items)}}


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"format": "something-else", "version": 1, "memories": {"user": []}}, "invalid_import"),
        ({"format": "memory-service-export", "version": 3, "memories": {"user": []}}, "invalid_import"),
        ({"format": "memory-service-export", "version": True, "memories": {"user": []}}, "invalid"),
        ({"format": "memory-service-export", "version": 1, "memories": {"user": "x"}}, "invalid_import"),
        ({"format": "memory-service-export", "version": 1}, "invalid"),
        ({"format": "memory-service-export", "version": 1, "memories": {}, "surprise": 1}, "invalid"),
        (valid_export({"kind": "task", "content": "Chat kinds are not for the user tier"}), "invalid_kind"),
        (valid_export({"kind": "fact", "content": ""}), "invalid_content"),
        (valid_export({"kind": "fact", "content": 7}), "invalid_content"),
        (valid_export({"kind": "fact", "content": "x" * 4001}), "too_large"),
        (valid_export({"kind": "fact", "content": "ok", "unknown": 1}), "invalid_import"),
        (valid_export({"kind": "fact", "content": "ok", "status": "deleted"}), "invalid_import"),
        (valid_export({"kind": "fact", "content": "ok", "metadata": []}), "invalid_import"),
        (valid_export({"kind": "fact", "content": "ok", "metadata": {"k": "v" * 9000}}), "too_large"),
        (valid_export({"kind": "fact", "content": "ok", "id": 5}), "invalid_import"),
        (valid_export({"kind": "fact", "content": "ok", "expires_at": "2999-01-01T00:00:00"}), "invalid_expires_at"),
        # a date-time whose instant in UTC is past the year 9999 (config/instants.py)
        (
            valid_export({"kind": "fact", "content": "ok", "expires_at": "9999-12-31T23:00:00-05:00"}),
            "invalid_expires_at",
        ),
        (valid_export("not an object"), "invalid_import"),
        (valid_export(*[{"kind": "fact", "content": f"fact {n}"} for n in range(1001)]), "too_many"),
    ],
)
def test_malformed_or_oversize_imports_change_nothing(api, home, body, code):
    before = memory_rows()
    response = api(home.alice).post(IMPORT, body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == code
    assert memory_rows() == before


@pytest.mark.parametrize("content", ["", "  \n\t ", 7, None, ["a list"], "x" * 4001, " " + "x" * 4001 + " "])
def test_the_import_refuses_a_content_as_the_memory_service_does(api, home, content):
    """One content rule: the import's answer is the memory service's, with the item's place."""
    with pytest.raises(DomainError) as refused:
        validate_content(content)
    before = memory_rows()
    response = api(home.alice).post(IMPORT, valid_export({"kind": "fact", "content": content}), format="json")
    error = response.json()["error"]
    assert (response.status_code, error["code"]) == (400, refused.value.code)
    assert error["message"] == f"memories.user[0]: {refused.value.message}"
    assert memory_rows() == before


def test_the_import_takes_a_content_the_memory_service_takes(api, home):
    content = "  " + "y" * 4000 + "\n"  # at the limit once stripped, as the service counts
    assert validate_content(content) == "y" * 4000
    response = api(home.alice).post(IMPORT, valid_export({"kind": "fact", "content": content}), format="json")
    assert response.status_code == 200, response.content
    assert Memory.objects.filter(owner=home.alice, content="y" * 4000).exists()


def test_an_invalid_item_after_valid_ones_refuses_the_whole_file(api, home):
    before = memory_rows()
    body = valid_export(
        {"kind": "fact", "content": "Fine"}, {"kind": "fact", "content": "ok", "metadata": {"k": "v" * 9000}}
    )
    response = api(home.alice).post(IMPORT, body, format="json")
    assert response.status_code == 400 and "memories.user[1]" in response.json()["error"]["message"]
    assert memory_rows() == before


@override_settings(API_MAX_BODY_BYTES=4096)
def test_an_import_over_the_body_limit_is_413(api, home):
    before = memory_rows()
    body = valid_export(*[{"kind": "fact", "content": f"fact number {n} " * 5} for n in range(100)])
    response = api(home.alice).post(IMPORT, json.dumps(body), content_type="application/json")
    assert response.status_code == 413
    assert memory_rows() == before
