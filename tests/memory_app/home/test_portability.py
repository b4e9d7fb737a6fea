"""Portability: the export carries the notes files, the profile and the settings, and the import
restores them idempotently (conflicts reported, never overwritten); the operator's
``import_memories`` command, with ``--legacy`` the one way to bring pre-isolation global items in."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import IntegrityError
from django.urls import reverse

from identity_app.models import Profile
from identity_app.services import profile_update
from memory_app.automemory.models import AutoMemorySettings
from memory_app.automemory.services import auto_memory_settings_update
from memory_app.home.services import MAX_IMPORT_BYTES
from memory_app.memories.models import GLOBAL_SCOPE_ID, Memory, Origin, Status
from memory_app.notes import services as notes_services
from memory_app.notes.models import UserSettings, WorkspaceChange
from memory_app.notes.selectors import workspace_file_get
from memory_app.notes.workspace import Workspace, WorkspaceUnsafe, WorkspaceWriteFailed
from memory_app.scoped.consolidation import SYSTEM_USERNAME
from tests.factories import UserFactory
from tests.memory_app.home.conftest import NOTES, memory_rows

pytestmark = pytest.mark.django_db

EXPORT = "/api/users/me/export"
IMPORT = "/api/users/me/import"
TYPED_CHAT = "milky:private:30003"
ALL_AUTO = {
    "generate": True,
    "use": True,
    "extract_model": "small-model",
    "consolidation_model": "",
    "min_idle_minutes": 5,
    "min_duration_seconds": 0,
    "min_length_chars": 120,
    "min_quota_remaining_pct": 30,
    "redact_contact_info": False,
}


def export_of(client) -> dict:
    response = client.get(EXPORT)
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def alice_home(home):
    """alice's home with a profile, settings and two notes files of her own."""
    profile_update(
        user=home.alice,
        display_name="Alice Liddell",
        timezone="Asia/Shanghai",
        language="zh-hans",
        preferences={"theme": "dark"},
    )
    notes_services.user_settings_update(user=home.alice, enable_memory=False)
    auto_memory_settings_update(user=home.alice, changes=dict(ALL_AUTO))
    notes_services.workspace_file_write(user=home.alice, name="USER.md", content="Alice, 30, Shanghai\n")
    return home


def state_of(user) -> dict:
    """Everything an import may change for ``user``, to compare before and after."""
    profile = Profile.objects.filter(user=user).values("display_name", "timezone", "language", "preferences").first()
    auto = AutoMemorySettings.objects.filter(user=user).values(*ALL_AUTO).first()
    switch = UserSettings.objects.filter(user=user).values_list("enable_memory", flat=True).first()
    notes = {}
    for name in ("AGENTS.md", "USER.md", "MEMORY.md"):
        try:
            file = workspace_file_get(user=user, name=name)
        except WorkspaceUnsafe:
            notes[name] = "(not a regular file)"
            continue
        notes[name] = file.content if file.exists else None
    changes = WorkspaceChange.objects.filter(user=user).count()
    return {"profile": profile, "auto": auto, "switch": switch, "notes": notes, "changes": changes}


def write_file(tmp_path, data, name="export.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return str(path)


def run_command(*args) -> str:
    out = StringIO()
    call_command("import_memories", *args, stdout=out)
    return out.getvalue()


def legacy_file(*global_items, user_items=()) -> dict:
    return {
        "format": "memory-service-export",
        "version": 2,
        "memories": {"user": list(user_items), "global": list(global_items)},
    }


# --- export ----------------------------------------------------------------------------------
def test_export_carries_profile_settings_and_notes_files(api, alice_home):
    data = export_of(api(alice_home.alice))
    assert data["version"] == 2
    assert data["user"] == {
        "username": "alice",
        "display_name": "Alice Liddell",
        "timezone": "Asia/Shanghai",
        "language": "zh-hans",
        "preferences": {"theme": "dark"},
    }
    assert data["settings"] == {"enable_memory": False, "auto_memory": ALL_AUTO}
    assert data["notes_files"] == {"AGENTS.md": None, "USER.md": "Alice, 30, Shanghai\n", "MEMORY.md": NOTES}
    for secret in ("password", "pbkdf2", "token", "mk_"):
        assert secret not in json.dumps(data["user"]).lower()


def test_markdown_export_shows_profile_and_settings(api, alice_home):
    text = api(alice_home.alice).get(EXPORT + "/markdown").content.decode()
    assert "## Profile" in text and "Alice Liddell" in text and "Asia/Shanghai" in text and "zh-hans" in text
    assert "Memory (the notes file): off" in text and "Use my memories in new agent tasks: on" in text
    assert "Wait after the conversation's last message: 5 minutes" in text
    assert "## USER.md" in text and "Alice, 30, Shanghai" in text


def test_another_users_profile_settings_and_notes_are_never_exported(api, alice_home):
    text = api(alice_home.bob).get(EXPORT).content.decode()
    for secret in ("Alice Liddell", "Asia/Shanghai", "dark", "small-model", "Shanghai", "walnuts"):
        assert secret not in text
    data = json.loads(text)
    assert data["user"]["username"] == "bob" and data["notes_files"] == dict.fromkeys(data["notes_files"])
    assert data["settings"]["enable_memory"] is True and data["settings"]["auto_memory"]["use"] is False


# --- import: round trip, idempotence, conflicts -----------------------------------------------
def test_round_trip_into_a_fresh_user_restores_memories_notes_profile_and_settings(api, alice_home):
    data = export_of(api(alice_home.alice))
    carol = UserFactory(username="carol")
    client = api(carol)
    response = client.post(IMPORT, data, format="json")
    assert response.status_code == 200, response.content
    report = response.json()
    assert report["conflicts"] == []
    assert {row["name"]: row["result"] for row in report["notes_files"]} == {
        "USER.md": "written",
        "MEMORY.md": "written",
    }
    again = export_of(client)
    assert again["user"] == {**data["user"], "username": "carol"}
    assert again["settings"] == data["settings"]
    assert again["notes_files"] == data["notes_files"]
    active = [(m["kind"], m["content"]) for m in again["memories"]["user"]]
    assert active == [(m["kind"], m["content"]) for m in data["memories"]["user"] if m["status"] == Status.ACTIVE]
    # The notes files went through the workspace service: their change history records it.
    assert set(WorkspaceChange.objects.filter(user=carol).values_list("name", "source")) == {
        ("USER.md", "api"),
        ("MEMORY.md", "api"),
    }
    # The username is context only; another user's account never changes.
    assert carol.username == "carol" and Profile.objects.get(user=alice_home.alice).display_name == "Alice Liddell"


def test_a_second_import_skips_everything_and_changes_nothing(api, alice_home):
    data = export_of(api(alice_home.alice))
    carol = UserFactory(username="carol")
    client = api(carol)
    assert client.post(IMPORT, data, format="json").status_code == 200
    before, rows = state_of(carol), memory_rows()
    report = client.post(IMPORT, data, format="json").json()
    assert report["created"] == [] and report["duplicates"] == 1 and report["conflicts"] == []
    assert {row["result"] for row in report["notes_files"]} == {"identical"}
    assert report["settings"] and {row["result"] for row in report["settings"]} == {"unchanged"}
    assert state_of(carol) == before and memory_rows() == rows


def test_a_notes_file_holding_other_text_is_reported_not_overwritten(api, alice_home):
    data = export_of(api(alice_home.alice))
    carol = UserFactory(username="carol")
    notes_services.workspace_file_write(user=carol, name="MEMORY.md", content="- Carol's own note\n")
    notes_services.workspace_file_write(user=carol, name="USER.md", content="Alice, 30, Shanghai\n")
    report = api(carol).post(IMPORT, data, format="json").json()
    assert report["conflicts"] == ["MEMORY.md already holds other text; it was not overwritten."]
    rows = {row["name"]: row for row in report["notes_files"]}
    assert rows["MEMORY.md"]["result"] == "conflict" and rows["USER.md"]["result"] == "identical"
    assert workspace_file_get(user=carol, name="MEMORY.md").content == "- Carol's own note\n"
    # The rest of the file was imported all the same.
    assert len(report["created"]) == 1
    assert Profile.objects.get(user=carol).timezone == "Asia/Shanghai"


def test_only_the_fields_present_are_applied(api, home):
    carol = UserFactory(username="carol")
    profile_update(user=carol, display_name="Carol", timezone="Europe/Paris")
    body = {
        "format": "memory-service-export",
        "version": 1,
        "user": {"username": "somebody-else", "timezone": "Asia/Tokyo"},
        "settings": {"auto_memory": {"use": True}},
        "memories": {"user": []},
    }
    report = api(carol).post(IMPORT, body, format="json").json()
    assert report["settings"] == [
        {"field": "user.timezone", "result": "applied"},
        {"field": "settings.auto_memory.use", "result": "applied"},
    ]
    profile = Profile.objects.get(user=carol)
    assert (profile.display_name, profile.timezone, profile.language) == ("Carol", "Asia/Tokyo", "")
    auto = AutoMemorySettings.objects.get(user=carol)
    assert (auto.use, auto.generate, auto.min_idle_minutes) == (True, False, 10)
    assert UserSettings.objects.filter(user=carol, enable_memory=False).exists() is False


@pytest.mark.parametrize(
    ("part", "message"),
    [
        ({"user": {"timezone": "Mars/Olympus"}}, "user.timezone: 'Mars/Olympus' is not a valid IANA time zone name."),
        ({"user": {"language": "fr"}}, "user.language: 'fr' is not a language of this site."),
        ({"user": {"display_name": 5}}, "user.display_name: must be a string."),
        ({"user": {"preferences": {"api_key": "x"}}}, "user.preferences: preferences may not store credentials"),
        ({"user": {"preferences": []}}, "user.preferences: must be an object."),
        ({"settings": {"enable_memory": "yes"}}, "settings.enable_memory must be true or false."),
        ({"settings": {"auto_memory": {"min_idle_minutes": -1}}}, "settings.auto_memory: min_idle_minutes must be"),
        ({"settings": {"auto_memory": {"surprise": 1}}}, "settings.auto_memory: Unknown settings: surprise."),
        ({"settings": {"other": 1}}, "settings: unknown keys other."),
        ({"notes_files": {"SECRET.md": "x"}}, "notes_files.SECRET.md: only AGENTS.md, USER.md, MEMORY.md"),
        ({"notes_files": {"MEMORY.md": 5}}, "notes_files.MEMORY.md: content must be a string."),
        ({"notes_files": {"MEMORY.md": "x" * (128 * 1024 + 1)}}, "notes_files.MEMORY.md: content is larger than"),
    ],
)
def test_an_invalid_profile_setting_or_notes_file_refuses_the_whole_file(api, home, part, message):
    carol = UserFactory(username="carol")
    before, rows = state_of(carol), memory_rows()
    body = {
        "format": "memory-service-export",
        "version": 2,
        "memories": {"user": [{"kind": "fact", "content": "Would be imported"}]},
        "user": {"display_name": "Would be applied"},
        **part,
    }
    response = api(carol).post(IMPORT, body, format="json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]["message"]
    assert error.startswith(message) and error.endswith(".")
    assert state_of(carol) == before and memory_rows() == rows


def test_the_api_tells_a_nested_import_error_in_english_whatever_the_profile_language(api, home):
    """The web import page says it in the reader's language; the API's messages stay English."""
    carol = UserFactory(username="carol")
    profile_update(user=carol, language="zh-hans")
    body = {"format": "memory-service-export", "version": 2, "memories": {"user": []}}
    body["settings"] = {"auto_memory": {"generate": 1}}
    response = api(carol).post(IMPORT, body, format="json", HTTP_ACCEPT_LANGUAGE="zh-Hans")
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "settings.auto_memory: generate must be true or false."


def test_import_drops_scope_clue_keys_from_metadata(api, home):
    item = {"kind": "fact", "content": "Lives by the sea", "metadata": {"topic": "home", "session_id": TYPED_CHAT}}
    item["evidence"] = {"chat_address": TYPED_CHAT}
    body = {"format": "memory-service-export", "version": 2, "memories": {"user": [item]}}
    report = api(home.alice).post(IMPORT, body, format="json").json()
    memory = Memory.objects.get(pk=report["created"][0])
    assert memory.metadata == {"topic": "home"}
    assert set(memory.evidence) == {"imported"}


def test_the_api_import_never_creates_global_items(api, home, admin):
    # Not even for staff who may write global items: only the operator's --legacy import may.
    before = memory_rows()
    body = legacy_file({"kind": "preference", "content": "Likes jasmine tea", "evidence": {"session_id": TYPED_CHAT}})
    malformed = legacy_file("not an item")
    for user, sent in ((home.alice, body), (admin, body), (home.alice, malformed)):
        response = api(user).post(IMPORT, sent, format="json")
        assert response.status_code == 400, response.content
        assert response.json()["error"]["code"] == "global_not_allowed"
    assert memory_rows() == before
    assert not Memory.objects.filter(scope_id=GLOBAL_SCOPE_ID, content="Likes jasmine tea").exists()


# --- the command -------------------------------------------------------------------------------
def test_command_imports_like_the_api_and_reports_counts(api, alice_home, tmp_path):
    path = write_file(tmp_path, export_of(api(alice_home.alice)))
    carol = UserFactory(username="carol")
    out = run_command(path, "--user", "carol")
    assert "done: imported=1 global=0 notes_written=2" in out and "conflicts=0" in out
    assert Memory.objects.filter(owner=carol, content="I like green tea", origin=Origin.API).exists()
    assert workspace_file_get(user=carol, name="MEMORY.md").content == NOTES
    assert AutoMemorySettings.objects.get(user=carol).extract_model == "small-model"
    before = state_of(carol)
    again = run_command(path, "--user", "carol")
    assert "imported=0" in again and "notes_written=0" in again and "settings_applied=0" in again
    assert state_of(carol) == before


def test_command_reports_conflicts_on_stdout(api, alice_home, tmp_path):
    path = write_file(tmp_path, export_of(api(alice_home.alice)))
    carol = UserFactory(username="carol")
    notes_services.workspace_file_write(user=carol, name="USER.md", content="Carol\n")
    out = run_command(path, "--user", "carol")
    assert "conflict: USER.md already holds other text; it was not overwritten." in out
    assert "conflicts=1" in out
    assert workspace_file_get(user=carol, name="USER.md").content == "Carol\n"


def test_command_dry_run_changes_nothing(api, alice_home, tmp_path):
    item = {"kind": "preference", "content": "Likes jasmine tea", "evidence": {"session_id": TYPED_CHAT}}
    data = {**export_of(api(alice_home.alice)), "memories": {"user": [], "global": [item]}}
    path = write_file(tmp_path, data)
    carol = UserFactory(username="carol")
    before, rows = state_of(carol), memory_rows()
    out = run_command(path, "--user", "carol", "--legacy", "--dry-run")
    assert (
        out.strip().endswith("conflicts=0")
        and "dry run, nothing changed, it would do: imported=1 global=1 notes_written=2" in out
    )
    assert state_of(carol) == before and memory_rows() == rows
    assert not get_user_model().objects.filter(username=SYSTEM_USERNAME).exists()  # not even the writer


def test_legacy_import_keeps_clue_keys_and_scope_migration_sees_them(home, tmp_path):
    preference = {
        "id": "mem_old1",
        "kind": "preference",
        "content": "Likes jasmine tea",
        "evidence": {"session_id": TYPED_CHAT, "note": "dropped"},
        "metadata": {"topic": "tea"},
    }
    decision = {"kind": "decision", "content": "Replies are in Chinese", "metadata": {"chat_address": TYPED_CHAT}}
    mine = {"kind": "fact", "content": "Keeps bees", "metadata": {"source_session_id": TYPED_CHAT}}
    path = write_file(tmp_path, legacy_file(preference, decision, user_items=[mine]))
    out = run_command(path, "--user", "alice", "--legacy")
    assert "done: imported=3 global=2" in out
    tea = Memory.objects.get(content="Likes jasmine tea")
    assert (tea.scope_type, tea.scope_id, tea.owner) == ("global", GLOBAL_SCOPE_ID, None)
    assert tea.evidence == {"session_id": TYPED_CHAT, "imported": {"id": "mem_old1"}}
    assert tea.metadata == {"topic": "tea"}
    assert Memory.objects.get(content="Keeps bees", owner=home.alice).metadata == {"source_session_id": TYPED_CHAT}

    plan_path = tmp_path / "plan.json"
    call_command("migrate_memory_scope", "inspect", "--output", str(plan_path), stdout=StringIO())
    entries = {e["item_id"]: e for e in json.loads(plan_path.read_text())["entries"]}
    assert (entries[tea.pk]["decision"], entries[tea.pk]["target_scope_id"]) == ("migrate", TYPED_CHAT)
    kept = entries[Memory.objects.get(content="Replies are in Chinese").pk]
    assert kept["decision"] == "keep"
    # A second legacy import finds the global items already there.
    assert "imported=0 global=0" in run_command(path, "--user", "alice", "--legacy")


def test_without_legacy_the_command_strips_clues_and_refuses_global_items(home, tmp_path):
    mine = {"kind": "fact", "content": "Keeps bees", "metadata": {"source_session_id": TYPED_CHAT, "topic": "bees"}}
    path = write_file(tmp_path, legacy_file(user_items=[mine]))
    run_command(path, "--user", "alice")
    assert Memory.objects.get(content="Keeps bees", owner=home.alice).metadata == {"topic": "bees"}

    before = memory_rows()
    path = write_file(tmp_path, legacy_file({"kind": "preference", "content": "Likes jasmine tea"}), "global.json")
    with pytest.raises(CommandError, match=r"only an operator can import .*--legacy.*Nothing was imported\."):
        run_command(path, "--user", "alice")
    assert memory_rows() == before


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "The file is not JSON."),
        ('{"format": "memory-service-export", "version": 3, "memories": {"user": []}}', "Only version 1 or 2"),
        ('{"format": "other", "version": 2, "memories": {"user": []}}', "Not an export of this service"),
        (
            '{"format": "memory-service-export", "version": 2, "memories": {"user": [{"kind": "fact"}]}}',
            "memories.user[0]",
        ),
        (" " * (MAX_IMPORT_BYTES + 1), "The file is larger than"),
        ("[" * 200 + "]" * 200, "The file nests deeper than"),
        (
            '{"format": "memory-service-export", "version": 2, "memories": {"user": []}, "version": 1}',
            "The file is not valid: The JSON object has the key 'version' twice.",
        ),
    ],
)
def test_command_refuses_a_bad_file_and_changes_nothing(alice_home, tmp_path, content, message):
    path = write_file(tmp_path, content)
    before, rows = state_of(alice_home.alice), memory_rows()
    with pytest.raises(CommandError) as failure:
        run_command(path, "--user", "alice", "--legacy")
    assert str(failure.value).startswith(message) and str(failure.value).endswith("Nothing was imported.")
    assert state_of(alice_home.alice) == before and memory_rows() == rows


def test_command_refuses_an_unknown_user_or_a_missing_file(home, tmp_path):
    path = write_file(tmp_path, legacy_file())
    with pytest.raises(CommandError, match="No active user 'nobody'"):
        run_command(path, "--user", "nobody")
    with pytest.raises(CommandError, match="Cannot read"):
        run_command(str(tmp_path / "missing.json"), "--user", "alice")
    with pytest.raises(CommandError):
        call_command("import_memories", path)  # --user is required


def test_legacy_global_items_need_a_kind_the_global_tier_takes(home, tmp_path):
    before = memory_rows()
    path = write_file(tmp_path, legacy_file({"kind": "opinion", "content": "x"}))
    with pytest.raises(CommandError, match=r"memories.global\[0\]: kind must be one of"):
        run_command(path, "--user", "alice", "--legacy")
    assert memory_rows() == before


# --- the web page ------------------------------------------------------------------------------
def test_web_import_restores_notes_and_reports_a_conflict(client, api, alice_home):
    data = export_of(api(alice_home.alice))
    carol = UserFactory(username="carol")
    notes_services.workspace_file_write(user=carol, name="MEMORY.md", content="- Carol's own note\n")
    client.force_login(carol)
    upload = SimpleUploadedFile("export.json", json.dumps(data).encode(), content_type="application/json")
    response = client.post(reverse("web:memory_home_import"), {"file": upload})
    assert response.status_code == 200
    assert "USER.md restored." in response.text
    assert "MEMORY.md already holds other text; it was not overwritten." in response.text
    assert "profile fields or settings applied." in response.text
    assert workspace_file_get(user=carol, name="MEMORY.md").content == "- Carol's own note\n"
    assert WorkspaceChange.objects.get(user=carol, name="USER.md").source == "web"


# --- all or nothing ----------------------------------------------------------------------------
def nothing_changed_for(user, before: dict, rows) -> None:
    assert state_of(user) == before
    assert memory_rows() == rows
    assert not Memory.objects.filter(owner=user).exists()


def test_an_import_whose_notes_file_cannot_be_written_changes_nothing(api, alice_home, settings):
    """A directory where carol's MEMORY.md should be: the import is refused whole -- no memory,
    profile field, setting or other notes file of the file was written first."""
    data = export_of(api(alice_home.alice))
    carol = UserFactory(username="carol")
    (Path(settings.WORKSPACE_ROOT) / str(carol.pk) / "agents" / "MEMORY.md").mkdir(parents=True)
    before, rows = state_of(carol), memory_rows()
    response = api(carol).post(IMPORT, data, format="json")
    assert response.status_code == 409, response.content
    assert response.json()["error"]["code"] == "workspace_unsafe"
    nothing_changed_for(carol, before, rows)


def test_a_publish_that_fails_takes_back_the_files_published_before_it(api, alice_home, monkeypatch):
    data = export_of(api(alice_home.alice))
    carol = UserFactory(username="carol")
    before, rows = state_of(carol), memory_rows()
    publish = Workspace.replace_authorized_file

    def disk_full_on_memory_md(self, name, content):
        if name == "MEMORY.md":
            raise WorkspaceWriteFailed("Cannot create a temp file: No space left on device.")
        return publish(self, name, content)

    monkeypatch.setattr(Workspace, "replace_authorized_file", disk_full_on_memory_md)
    response = api(carol).post(IMPORT, data, format="json")
    assert response.status_code == 503, response.content
    assert response.json()["error"]["code"] == "workspace_write_failed"
    nothing_changed_for(carol, before, rows)  # USER.md, published first, is gone again


def test_a_commit_that_fails_after_the_publish_takes_the_files_back(api, alice_home, monkeypatch, transactional_db):
    """The files are published last, just before the commit; a commit that fails (here a
    deferred foreign key checked at COMMIT, on a real transaction) takes them back too."""
    data = export_of(api(alice_home.alice))
    carol = UserFactory(username="carol")
    notes_services.workspace_file_write(user=carol, name="MEMORY.md", content="")  # empty: filled, then emptied again
    before, rows = state_of(carol), memory_rows()
    fill = notes_services.workspace_files_fill

    def fill_then_break_the_commit(**kwargs):
        answer = fill(**kwargs)
        assert workspace_file_get(user=carol, name="USER.md").exists  # really published
        UserSettings.objects.create(user_id=10**9)  # no such user: refused at COMMIT
        return answer

    monkeypatch.setattr(notes_services, "workspace_files_fill", fill_then_break_the_commit)
    with pytest.raises(IntegrityError):
        api(carol).post(IMPORT, data, format="json")
    nothing_changed_for(carol, before, rows)
    assert workspace_file_get(user=carol, name="MEMORY.md").content == ""


def test_the_import_command_is_all_or_nothing_too(api, alice_home, tmp_path, settings):
    data = export_of(api(alice_home.alice))
    carol = UserFactory(username="carol")
    (Path(settings.WORKSPACE_ROOT) / str(carol.pk) / "agents" / "USER.md").mkdir(parents=True)
    before, rows = state_of(carol), memory_rows()
    with pytest.raises(CommandError, match=r"USER\.md"):
        run_command(write_file(tmp_path, data), "--user", "carol")
    nothing_changed_for(carol, before, rows)


def test_a_dry_run_reports_the_notes_files_and_writes_nothing(api, alice_home, tmp_path):
    data = export_of(api(alice_home.alice))
    carol = UserFactory(username="carol")
    notes_services.workspace_file_write(user=carol, name="MEMORY.md", content="- Carol's own note\n")
    before, rows = state_of(carol), memory_rows()
    out = run_command(write_file(tmp_path, data), "--user", "carol", "--dry-run")
    assert "MEMORY.md already holds other text" in out
    nothing_changed_for(carol, before, rows)
