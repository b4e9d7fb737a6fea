import os

import pytest

from memory_app.notes.workspace import Workspace, WorkspaceUnsafe, WorkspaceWriteFailed
from tests.memory_app.runs.helpers import memory_path

UID = 4242


def _agents(root):
    return root / str(UID) / "agents"


def _leftovers(root):
    return sorted(p.name for p in _agents(root).iterdir() if p.name.endswith(".tmp"))


def test_publish_creates_directories_and_file(workspace_root):
    Workspace(UID).replace_authorized_file("MEMORY.md", "héllo\n".encode())
    assert (_agents(workspace_root) / "MEMORY.md").read_bytes() == "héllo\n".encode()
    assert _leftovers(workspace_root) == []
    assert Workspace(UID).read_file("MEMORY.md", max_bytes=100).content == "héllo\n".encode()


def test_publish_replaces_existing_file_atomically(workspace_root):
    ws = Workspace(UID)
    ws.replace_authorized_file("MEMORY.md", b"old")
    inode_before = os.stat(_agents(workspace_root) / "MEMORY.md").st_ino
    ws.replace_authorized_file("MEMORY.md", b"new")
    assert (_agents(workspace_root) / "MEMORY.md").read_bytes() == b"new"
    # A new inode: the file was renamed into place, not rewritten in place.
    assert os.stat(_agents(workspace_root) / "MEMORY.md").st_ino != inode_before


@pytest.mark.parametrize("name", ["../MEMORY.md", "agents/MEMORY.md", "memory.md", "NOTES.md", "MEMORY.md\x00", ""])
def test_unknown_names_are_refused(name):
    with pytest.raises(Exception) as info:
        Workspace(UID).replace_authorized_file(name, b"x")
    assert getattr(info.value, "code", None) == "unknown_workspace_file"


@pytest.mark.parametrize("failing", ["write", "fsync", "rename"])
def test_failure_before_rename_keeps_old_file_and_leaves_no_temp(workspace_root, monkeypatch, failing):
    ws = Workspace(UID)
    ws.replace_authorized_file("MEMORY.md", b"old content\n")
    real = getattr(os, failing)
    calls = []

    def boom(*args, **kwargs):
        calls.append(args)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, failing, boom)
    with pytest.raises(WorkspaceWriteFailed):
        ws.replace_authorized_file("MEMORY.md", b"new content that must not appear\n")
    monkeypatch.setattr(os, failing, real)
    assert calls, "the fault was not injected"
    assert (_agents(workspace_root) / "MEMORY.md").read_bytes() == b"old content\n"
    assert _leftovers(workspace_root) == []


def test_partial_write_is_completed_not_truncated(workspace_root, monkeypatch):
    real_write = os.write

    def short_write(fd, data):
        return real_write(fd, bytes(data[:3]))

    monkeypatch.setattr(os, "write", short_write)
    Workspace(UID).replace_authorized_file("MEMORY.md", b"0123456789")
    monkeypatch.setattr(os, "write", real_write)
    assert (_agents(workspace_root) / "MEMORY.md").read_bytes() == b"0123456789"


def test_symlink_at_target_is_refused_and_not_followed(workspace_root, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious")
    _agents(workspace_root).mkdir(parents=True)
    (_agents(workspace_root) / "MEMORY.md").symlink_to(victim)
    with pytest.raises(WorkspaceUnsafe):
        Workspace(UID).replace_authorized_file("MEMORY.md", b"attack")
    with pytest.raises(WorkspaceUnsafe):
        Workspace(UID).read_file("MEMORY.md", max_bytes=100)
    with pytest.raises(WorkspaceUnsafe):
        Workspace(UID).delete_file("MEMORY.md")
    assert victim.read_bytes() == b"precious"
    assert (_agents(workspace_root) / "MEMORY.md").is_symlink()
    assert _leftovers(workspace_root) == []


def test_symlinked_agents_directory_is_refused(workspace_root, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "MEMORY.md").write_bytes(b"other")
    (workspace_root / str(UID)).mkdir()
    (workspace_root / str(UID) / "agents").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(WorkspaceUnsafe):
        Workspace(UID).replace_authorized_file("MEMORY.md", b"attack")
    with pytest.raises(WorkspaceUnsafe):
        Workspace(UID).read_file("MEMORY.md", max_bytes=100)
    assert sorted(p.name for p in elsewhere.iterdir()) == ["MEMORY.md"]
    assert (elsewhere / "MEMORY.md").read_bytes() == b"other"


def test_symlinked_user_directory_is_refused(workspace_root, tmp_path):
    elsewhere = tmp_path / "other-user"
    (elsewhere / "agents").mkdir(parents=True)
    (workspace_root / str(UID)).symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(WorkspaceUnsafe):
        Workspace(UID).replace_authorized_file("MEMORY.md", b"attack")
    assert list((elsewhere / "agents").iterdir()) == []


def test_fifo_or_directory_at_target_is_refused(workspace_root):
    _agents(workspace_root).mkdir(parents=True)
    os.mkfifo(_agents(workspace_root) / "MEMORY.md")
    (_agents(workspace_root) / "USER.md").mkdir()
    with pytest.raises(WorkspaceUnsafe):
        Workspace(UID).read_file("MEMORY.md", max_bytes=10)  # must not block on the FIFO
    with pytest.raises(WorkspaceUnsafe):
        Workspace(UID).replace_authorized_file("MEMORY.md", b"x")
    with pytest.raises(WorkspaceUnsafe):
        Workspace(UID).replace_authorized_file("USER.md", b"x")


def test_read_is_bounded_and_reports_full_size(workspace_root):
    Workspace(UID).replace_authorized_file("MEMORY.md", b"a" * 1000)
    read = Workspace(UID).read_file("MEMORY.md", max_bytes=10)
    assert (read.content, read.size, read.truncated) == (b"a" * 10, 1000, True)


def test_missing_file_reads_as_absent(workspace_root):
    read = Workspace(UID).read_file("MEMORY.md", max_bytes=10)
    assert (read.exists, read.content) == (False, b"")
    assert not (workspace_root / str(UID)).exists(), "reading must not create directories"


def test_users_get_separate_directories(workspace_root, alice, bob):
    Workspace(alice.pk).replace_authorized_file("MEMORY.md", b"alice")
    Workspace(bob.pk).replace_authorized_file("MEMORY.md", b"bob")
    assert memory_path(workspace_root, alice).read_bytes() == b"alice"
    assert memory_path(workspace_root, bob).read_bytes() == b"bob"
