"""No lost update between the user's editor and the agent: edits carry the version they read."""

import hashlib

import pytest
from django.test import Client

from memory_app.notes import services
from memory_app.runs import tools
from tests.memory_app.runs.helpers import memory_path

pytestmark = pytest.mark.django_db

URL = "/api/users/me/workspace/MEMORY.md"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_get_returns_hash_and_etag(api, alice, workspace_root):
    client = api(alice)
    missing = client.get(URL)
    assert missing.json()["sha256"] == _sha(b"") and missing["ETag"] == f'"{_sha(b"")}"'
    services.workspace_file_write(user=alice, name="MEMORY.md", content="- tea\n")
    response = client.get(URL)
    expected = _sha(b"- tea\n")
    assert response.json()["sha256"] == expected and response["ETag"] == f'"{expected}"'


def test_editor_put_after_an_agent_append_is_a_conflict_and_keeps_the_note(api, alice, make_run, workspace_root):
    client = api(alice)
    client.put(URL, {"content": "- first\n"}, format="json")
    opened = client.get(URL).json()
    handle = make_run(alice)
    assert tools.remember_memory(credential=handle.credential, content="agent note")["result"] == "appended"
    on_disk = memory_path(workspace_root, alice).read_bytes()
    response = client.put(URL, {"content": "- first\n- user edit\n", "base_sha256": opened["sha256"]}, format="json")
    assert response.status_code == 409 and response.json()["error"]["code"] == "conflict"
    assert memory_path(workspace_root, alice).read_bytes() == on_disk
    # The same with If-Match, and for DELETE.
    response = client.put(URL, {"content": "overwrite"}, format="json", HTTP_IF_MATCH=f'"{opened["sha256"]}"')
    assert response.status_code == 409
    response = client.delete(URL, {"base_sha256": opened["sha256"]}, format="json")
    assert response.status_code == 409
    response = client.delete(URL, HTTP_IF_MATCH=f'"{opened["sha256"]}"')
    assert response.status_code == 409
    assert memory_path(workspace_root, alice).read_bytes() == on_disk


def test_put_and_delete_with_the_current_hash_succeed(api, alice, workspace_root):
    client = api(alice)
    created = client.put(URL, {"content": "- one\n", "base_sha256": _sha(b"")}, format="json")
    assert created.status_code == 200 and created.json()["sha256"] == _sha(b"- one\n")
    updated = client.put(URL, {"content": "- two\n"}, format="json", HTTP_IF_MATCH=created["ETag"])
    assert updated.status_code == 200
    assert memory_path(workspace_root, alice).read_bytes() == b"- two\n"
    assert client.delete(URL, {"base_sha256": _sha(b"- two\n")}, format="json").status_code == 204
    assert not memory_path(workspace_root, alice).exists()


def test_put_without_a_base_still_overwrites(api, alice, workspace_root):
    client = api(alice)
    client.put(URL, {"content": "- old\n"}, format="json")
    assert client.put(URL, {"content": "- new\n"}, format="json").status_code == 200
    assert memory_path(workspace_root, alice).read_bytes() == b"- new\n"


@pytest.mark.parametrize("base", ["abc", "G" * 64, 12])
def test_malformed_base_is_400_and_changes_nothing(api, alice, workspace_root, base):
    client = api(alice)
    client.put(URL, {"content": "- keep\n"}, format="json")
    response = client.put(URL, {"content": "- lost\n", "base_sha256": base}, format="json")
    assert response.status_code == 400
    assert memory_path(workspace_root, alice).read_bytes() == b"- keep\n"


def test_web_editor_sends_the_version_and_reports_a_conflict(alice, make_run, workspace_root):
    client = Client()
    client.force_login(alice)
    services.workspace_file_write(user=alice, name="MEMORY.md", content="- first\n")
    page = client.get("/workspace/?name=MEMORY.md").content.decode()
    base = _sha(b"- first\n")
    assert f'name="base_sha256" value="{base}"' in page
    handle = make_run(alice)
    tools.remember_memory(credential=handle.credential, content="agent note")
    on_disk = memory_path(workspace_root, alice).read_bytes()
    response = client.post(
        "/workspace/",
        {"name": "MEMORY.md", "content": "- first\n- MY-UNSAVED-EDIT\n", "base_sha256": base, "action": "save"},
    )
    assert response.status_code == 409
    body = response.content.decode()
    assert "was changed since you opened it" in body and "MY-UNSAVED-EDIT" in body and "agent note" in body
    assert memory_path(workspace_root, alice).read_bytes() == on_disk
    response = client.post("/workspace/", {"name": "MEMORY.md", "base_sha256": base, "action": "delete"}, follow=True)
    assert "was changed since you opened it" in response.content.decode()
    assert memory_path(workspace_root, alice).read_bytes() == on_disk
