"""Context assembly keeps what it built from each workspace file while the file is unchanged
(filecache.py): a stat per request, a read only after a change, never a stale text."""

import os

import pytest

from memory_app.context import filecache
from memory_app.notes import services, workspace
from tests.memory_app.runs.helpers import memory_path

pytestmark = pytest.mark.django_db


@pytest.fixture
def reads(monkeypatch):
    """The workspace files context assembly opened, by name."""
    opened = []
    real = workspace.Workspace.read_file

    def counting(self, name, *, max_bytes):
        opened.append(name)
        return real(self, name, max_bytes=max_bytes)

    monkeypatch.setattr(workspace.Workspace, "read_file", counting)
    filecache.clear()
    yield opened
    filecache.clear()


def _memory(run_api, handle):
    response = run_api(handle.token).get(f"/api/runs/{handle.id}/context")
    assert response.status_code == 200, response.content
    return next((s["content"] for s in response.json()["sections"] if s["name"] == "memory"), None)


def test_an_unchanged_file_is_not_read_again(run_api, make_run, alice, reads, monkeypatch):
    monkeypatch.setattr(filecache, "RACY_NS", 0)  # the file's last change counts as long ago
    services.workspace_file_write(user=alice, name="MEMORY.md", content="- likes oolong\n")
    handle = make_run(alice)
    assert "likes oolong" in _memory(run_api, handle)
    assert "MEMORY.md" in reads
    reads.clear()
    assert "likes oolong" in _memory(run_api, handle)
    assert "MEMORY.md" not in reads

    # A publish (a new file) is seen at once.
    services.workspace_file_write(user=alice, name="MEMORY.md", content="- likes sencha\n")
    reads.clear()
    text = _memory(run_api, handle)
    assert "likes sencha" in text and "oolong" not in text
    assert reads.count("MEMORY.md") == 1


def test_an_edit_in_place_within_the_clock_tick_is_not_missed(
    run_api, make_run, alice, reads, workspace_root, monkeypatch
):
    """Same inode, same size, written right after the last read, on a file system whose clock
    tick hides the edit (all five identity fields unchanged): the entry is racy, so its bytes
    are hashed again and the new text is built."""
    services.workspace_file_write(user=alice, name="MEMORY.md", content="- likes oolong\n")
    handle = make_run(alice)
    assert "likes oolong" in _memory(run_api, handle)
    path = memory_path(workspace_root, alice)
    before = workspace.Workspace(alice.pk).file_identity("MEMORY.md")
    with open(path, "r+b") as handle_file:  # same length, same inode
        handle_file.write(b"- likes sencha\n")
    assert path.stat().st_ino == before[1]
    monkeypatch.setattr(workspace.Workspace, "file_identity", lambda self, name: before)  # a coarse clock
    text = _memory(run_api, handle)
    assert "likes sencha" in text and "oolong" not in text


def test_a_removed_file_drops_its_entry(run_api, make_run, alice, reads):
    services.workspace_file_write(user=alice, name="MEMORY.md", content="- likes oolong\n")
    handle = make_run(alice)
    assert "likes oolong" in _memory(run_api, handle)
    services.workspace_file_delete(user=alice, name="MEMORY.md")
    assert _memory(run_api, handle) is None


def test_a_symlink_planted_after_caching_is_refused(run_api, make_run, alice, reads, workspace_root, tmp_path):
    services.workspace_file_write(user=alice, name="MEMORY.md", content="- likes oolong\n")
    handle = make_run(alice)
    assert "likes oolong" in _memory(run_api, handle)
    victim = tmp_path / "victim"
    victim.write_text("- precious secret\n")
    path = memory_path(workspace_root, alice)
    path.unlink()
    os.symlink(victim, path)
    response = run_api(handle.token).get(f"/api/runs/{handle.id}/context")
    assert response.status_code == 200
    body = response.json()
    assert "workspace_file_unsafe:MEMORY.md" in body["warnings"]
    assert "precious" not in response.content.decode() and "oolong" not in response.content.decode()


def test_users_never_share_an_entry(run_api, make_run, alice, bob, reads, monkeypatch):
    monkeypatch.setattr(filecache, "RACY_NS", 0)
    services.workspace_file_write(user=alice, name="MEMORY.md", content="- alice likes oolong\n")
    services.workspace_file_write(user=bob, name="MEMORY.md", content="- bob likes coffee\n")
    assert "alice likes oolong" in _memory(run_api, make_run(alice))
    text = _memory(run_api, make_run(bob))
    assert "bob likes coffee" in text and "alice" not in text
