import hashlib

import pytest

from memory_app.notes.models import UserSettings
from tests.memory_app.runs.helpers import memory_path

pytestmark = pytest.mark.django_db


def test_put_get_delete_roundtrip(api, alice, workspace_root):
    client = api(alice)
    response = client.put("/api/users/me/workspace/MEMORY.md", {"content": "- 喜欢乌龙茶 🍵\n"}, format="json")
    assert response.status_code == 200, response.content
    assert memory_path(workspace_root, alice).read_text("utf-8") == "- 喜欢乌龙茶 🍵\n"
    body = client.get("/api/users/me/workspace/MEMORY.md").json()
    expected = "- 喜欢乌龙茶 🍵\n".encode()
    assert body == {
        "name": "MEMORY.md",
        "content": "- 喜欢乌龙茶 🍵\n",
        "size": len(expected),
        "exists": True,
        "sha256": hashlib.sha256(expected).hexdigest(),
    }
    assert client.delete("/api/users/me/workspace/MEMORY.md").status_code == 204
    assert not memory_path(workspace_root, alice).exists()
    assert client.get("/api/users/me/workspace/MEMORY.md/").json()["exists"] is False


@pytest.mark.parametrize("name", ["AGENTS.md", "USER.md", "MEMORY.md"])
def test_all_three_files_are_editable(api, alice, workspace_root, name):
    assert api(alice).put(f"/api/users/me/workspace/{name}", {"content": "x"}, format="json").status_code == 200
    assert memory_path(workspace_root, alice, name).read_text() == "x"


@pytest.mark.parametrize(
    "path",
    [
        "/api/users/me/workspace/NOTES.md",
        "/api/users/me/workspace/..",
        "/api/users/me/workspace/%2e%2e",
        "/api/users/me/workspace/../MEMORY.md",
        "/api/users/me/workspace/agents/MEMORY.md",
        "/api/users/me/workspace/MEMORY.md%00",
        "/api/users/me/workspace/%2Fetc%2Fpasswd",
        "/api/users/me/workspace/memory.md",
    ],
)
def test_other_names_are_refused_and_nothing_is_written(api, alice, workspace_root, path):
    client = api(alice)
    response = client.put(path, {"content": "attack"}, format="json")
    assert response.status_code in (400, 404)
    assert response.json()["error"]["code"] in ("not_found", "unknown_workspace_file", "invalid")
    assert client.get(path).status_code in (400, 404)
    assert list(workspace_root.rglob("*")) == [] or all(p.is_dir() for p in workspace_root.rglob("*"))


def test_oversize_content_is_refused_and_file_unchanged(api, alice, workspace_root):
    client = api(alice)
    client.put("/api/users/me/workspace/MEMORY.md", {"content": "keep"}, format="json")
    big = "字" * (128 * 1024 // 3 + 1)  # just over 128 KiB in UTF-8
    response = client.put("/api/users/me/workspace/MEMORY.md", {"content": big}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "too_large"
    assert memory_path(workspace_root, alice).read_text() == "keep"


@pytest.mark.parametrize("body", [{"content": 5}, {"content": "a\x00b"}, {"content": "x", "path": "/etc"}, {}, []])
def test_malformed_bodies_are_refused(api, alice, workspace_root, body):
    response = api(alice).put("/api/users/me/workspace/MEMORY.md", body, format="json")
    assert response.status_code == 400
    assert not memory_path(workspace_root, alice).exists()


def test_users_only_reach_their_own_files(api, alice, mallory, workspace_root):
    api(alice).put("/api/users/me/workspace/MEMORY.md", {"content": "alice secret"}, format="json")
    assert api(mallory).get("/api/users/me/workspace/MEMORY.md").json()["content"] == ""
    api(mallory).delete("/api/users/me/workspace/MEMORY.md")
    assert memory_path(workspace_root, alice).read_text() == "alice secret"


def test_anonymous_is_refused(api, workspace_root):
    assert api().get("/api/users/me/workspace/MEMORY.md").status_code in (401, 403)
    assert api().get("/api/users/me/settings").status_code in (401, 403)


def test_symlink_planted_in_workspace_is_refused_through_api(api, alice, workspace_root, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    path = memory_path(workspace_root, alice)
    path.parent.mkdir(parents=True)
    path.symlink_to(victim)
    client = api(alice)
    response = client.put("/api/users/me/workspace/MEMORY.md", {"content": "x"}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "workspace_unsafe"
    assert client.get("/api/users/me/workspace/MEMORY.md").status_code == 409
    assert victim.read_text() == "precious"


def test_settings_default_and_update(api, alice):
    client = api(alice)
    assert client.get("/api/users/me/settings").json() == {"enable_memory": True}
    assert not UserSettings.objects.filter(user=alice).exists(), "GET must not write"
    response = client.put("/api/users/me/settings", {"enable_memory": False}, format="json")
    assert response.json() == {"enable_memory": False}
    assert client.get("/api/users/me/settings/").json() == {"enable_memory": False}
    assert UserSettings.objects.get(user=alice).enable_memory is False


@pytest.mark.parametrize(
    "body", [{"enable_memory": "maybe"}, {"enable_memory": None}, {}, {"enable_memory": True, "x": 1}]
)
def test_settings_bad_input_changes_nothing(api, alice, body):
    client = api(alice)
    client.put("/api/users/me/settings", {"enable_memory": False}, format="json")
    assert client.put("/api/users/me/settings", body, format="json").status_code == 400
    assert UserSettings.objects.get(user=alice).enable_memory is False


def test_a_deleted_account_leaves_no_workspace_file_on_disk(
    api, alice, bob, workspace_root, django_capture_on_commit_callbacks
):
    for user, name in ((alice, "MEMORY.md"), (alice, "USER.md"), (bob, "MEMORY.md")):
        response = api(user).put(
            f"/api/users/me/workspace/{name}", {"content": f"{user.username} secret"}, format="json"
        )
        assert response.status_code == 200
    folder = memory_path(workspace_root, alice).parent.parent  # <root>/<uid>
    (folder / "agents" / "MEMORY.md.tmp-left").write_text("alice secret, half written")
    outside = workspace_root / "kept.txt"
    outside.write_text("not alice's")
    (folder / "agents" / "link").symlink_to(outside)  # a link goes, never what it points to
    with django_capture_on_commit_callbacks(execute=True):
        alice.delete()
    assert not folder.exists()
    assert outside.read_text() == "not alice's"
    assert memory_path(workspace_root, bob).read_text() == "bob secret"  # another account's stays
