"""The per-user workspace on disk: ``WORKSPACE_ROOT/<uid>/agents/{AGENTS.md,USER.md,MEMORY.md}``.

Every access walks the path with directory file descriptors and ``O_NOFOLLOW`` so a symlink
or other non-regular file planted anywhere below the root is refused, never followed.
Publishing is atomic (docs/runs.md): temp file created exclusively in the target directory, written
in full, fsynced, renamed within the same directory fd, then the directory is fsynced.
"""

import contextlib
import errno
import hashlib
import logging
import os
import re
import secrets
import stat
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext as _

from config.budgets import utf8_len
from config.errors import Conflict, InvalidInput, NotFound, ServiceUnavailable, TooLarge
from config.validation import clean_text
from memory_app.notes.errors import ErrorCode

logger = logging.getLogger(__name__)

AGENTS_FILE = "AGENTS.md"
USER_FILE = "USER.md"
MEMORY_FILE = "MEMORY.md"
WORKSPACE_FILES = (AGENTS_FILE, USER_FILE, MEMORY_FILE)
AGENTS_DIR = "agents"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class WorkspaceUnsafe(Conflict):
    """A symlink or non-regular file sits where a workspace directory or file should be."""

    code = ErrorCode.WORKSPACE_UNSAFE


class WorkspaceWriteFailed(ServiceUnavailable):
    code = ErrorCode.WORKSPACE_WRITE_FAILED


@dataclass(frozen=True)
class FileRead:
    content: bytes  # at most the requested number of bytes
    size: int  # size of the whole file on disk
    exists: bool
    identity: tuple[int, ...] | None = None  # file_identity() of the version read

    @property
    def truncated(self) -> bool:
        return self.size > len(self.content)


def _identity(info: os.stat_result) -> tuple[int, ...]:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def validate_workspace_name(name: str) -> str:
    """Only the three fixed names; anything else (paths, ``..``, NUL) is unknown."""
    if name not in WORKSPACE_FILES:
        raise NotFound("Unknown workspace file.", code=ErrorCode.UNKNOWN_WORKSPACE_FILE)
    return name


class Workspace:
    def __init__(self, user_id: int, *, root: str | os.PathLike[str] | None = None) -> None:
        self.user_id = int(user_id)
        self.root = os.fspath(root if root is not None else settings.WORKSPACE_ROOT)

    # --- directory walk ------------------------------------------------------------------
    def _open_child_dir(self, parent_fd: int, name: str, *, create: bool) -> int | None:
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
        except FileNotFoundError:
            if not create:
                return None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise WorkspaceUnsafe(f"Workspace path component {name!r} is not a plain directory.") from None
            raise
        with contextlib.suppress(FileExistsError):  # created concurrently; the open below checks it
            os.mkdir(name, 0o700, dir_fd=parent_fd)
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise WorkspaceUnsafe(f"Workspace path component {name!r} is not a plain directory.") from None
            raise

    def _open_agents_dir(self, *, create: bool) -> int | None:
        """An fd of ``<root>/<uid>/agents`` (the root itself is trusted configuration)."""
        if create:
            os.makedirs(self.root, mode=0o700, exist_ok=True)
        try:
            root_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            if not create:
                return None
            raise
        try:
            user_fd = self._open_child_dir(root_fd, str(self.user_id), create=create)
        finally:
            os.close(root_fd)
        if user_fd is None:
            return None
        try:
            return self._open_child_dir(user_fd, AGENTS_DIR, create=create)
        finally:
            os.close(user_fd)

    @staticmethod
    def _lstat(dir_fd: int, name: str) -> os.stat_result | None:
        try:
            return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    # --- reads ---------------------------------------------------------------------------
    def file_identity(self, name: str) -> tuple[int, ...] | None:
        """``(device, inode, size, mtime_ns, ctime_ns)`` of a workspace file, without reading it
        (the same walk as a read; a symlink or non-regular file is refused). None when missing."""
        validate_workspace_name(name)
        dir_fd = self._open_agents_dir(create=False)
        if dir_fd is None:
            return None
        try:
            info = self._lstat(dir_fd, name)
        finally:
            os.close(dir_fd)
        if info is None:
            return None
        if not stat.S_ISREG(info.st_mode):
            raise WorkspaceUnsafe(f"{name} is not a regular file.")
        return _identity(info)

    def read_file(self, name: str, *, max_bytes: int) -> FileRead:
        """Read at most ``max_bytes`` of a workspace file. Missing → ``exists=False``."""
        validate_workspace_name(name)
        dir_fd = self._open_agents_dir(create=False)
        if dir_fd is None:
            return FileRead(b"", 0, False)
        try:
            try:
                fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
            except FileNotFoundError:
                return FileRead(b"", 0, False)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise WorkspaceUnsafe(f"{name} is a symlink; refusing to follow it.") from None
                raise
            try:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    raise WorkspaceUnsafe(f"{name} is not a regular file.")
                chunks, remaining = [], max_bytes
                while remaining > 0:
                    chunk = os.read(fd, min(remaining, 65536))
                    if not chunk:
                        break
                    chunks.append(chunk)
                    remaining -= len(chunk)
                return FileRead(b"".join(chunks), info.st_size, True, _identity(info))
            finally:
                os.close(fd)
        finally:
            os.close(dir_fd)

    # --- writes --------------------------------------------------------------------------
    def replace_authorized_file(self, name: str, content: bytes) -> None:
        """Atomically publish ``content`` as ``name``. The caller holds the per-user lock and has
        already authorized the write. Failure before the rename keeps the old file and leaves no
        temp file."""
        validate_workspace_name(name)
        try:
            dir_fd = self._open_agents_dir(create=True)
        except WorkspaceUnsafe:
            raise
        except OSError as exc:
            raise WorkspaceWriteFailed(f"Cannot open the workspace directory: {exc.strerror}.") from None
        assert dir_fd is not None  # create=True makes what is missing, or raises
        try:
            current = self._lstat(dir_fd, name)
            if current is not None and not stat.S_ISREG(current.st_mode):
                raise WorkspaceUnsafe(f"{name} is not a regular file; refusing to replace it.")
            temp_name = f".{name}.{secrets.token_hex(8)}.tmp"
            try:
                fd = os.open(temp_name, _TEMP_FLAGS, 0o600, dir_fd=dir_fd)
            except OSError as exc:
                raise WorkspaceWriteFailed(f"Cannot create a temp file: {exc.strerror}.") from None
            published = False
            try:
                try:
                    view = memoryview(content)
                    while view:
                        written = os.write(fd, view)
                        view = view[written:]
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.rename(temp_name, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
                published = True
                os.fsync(dir_fd)
            except OSError as exc:
                if not published:
                    self._unlink_quietly(dir_fd, temp_name)
                    raise WorkspaceWriteFailed(f"Publishing {name} failed: {exc.strerror or exc}.") from None
                # The rename is durable in the page cache; only the directory fsync failed.
                logger.error("workspace dir fsync failed after publishing %s for user %s: %s", name, self.user_id, exc)
                raise WorkspaceWriteFailed(f"Publishing {name} could not be made durable.") from None
            except BaseException:
                if not published:
                    self._unlink_quietly(dir_fd, temp_name)
                raise
        finally:
            os.close(dir_fd)

    def delete_file(self, name: str) -> bool:
        """Remove a workspace file; False when it did not exist."""
        validate_workspace_name(name)
        dir_fd = self._open_agents_dir(create=False)
        if dir_fd is None:
            return False
        try:
            current = self._lstat(dir_fd, name)
            if current is None:
                return False
            if not stat.S_ISREG(current.st_mode):
                raise WorkspaceUnsafe(f"{name} is not a regular file; refusing to delete it.")
            try:
                os.unlink(name, dir_fd=dir_fd)
            except FileNotFoundError:
                return False
            except OSError as exc:
                raise WorkspaceWriteFailed(f"Deleting {name} failed: {exc.strerror}.") from None
            os.fsync(dir_fd)
            return True
        finally:
            os.close(dir_fd)

    def delete_all(self) -> None:
        """Remove the user's folder: every entry of ``<root>/<uid>/agents`` that is not a folder
        (the files, a temporary file a crashed write left, a link itself and never what it points
        to), then the two folders if they are empty. For an account that is deleted
        (``on_user_deleted``); a folder that is not a plain one is left alone."""
        dir_fd = self._open_agents_dir(create=False)
        if dir_fd is not None:
            try:
                for name in os.listdir(dir_fd):
                    found = self._lstat(dir_fd, name)
                    if found is not None and not stat.S_ISDIR(found.st_mode):
                        self._unlink_quietly(dir_fd, name)
            finally:
                os.close(dir_fd)
        try:
            root_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return
        try:
            user_fd = self._open_child_dir(root_fd, str(self.user_id), create=False)
            if user_fd is not None:
                try:
                    with contextlib.suppress(OSError):  # missing, or not empty: left as it is
                        os.rmdir(AGENTS_DIR, dir_fd=user_fd)
                finally:
                    os.close(user_fd)
            with contextlib.suppress(OSError):
                os.rmdir(str(self.user_id), dir_fd=root_fd)
        finally:
            os.close(root_fd)

    @staticmethod
    def _unlink_quietly(dir_fd: int, name: str) -> None:
        try:
            os.unlink(name, dir_fd=dir_fd)
        except FileNotFoundError:
            pass
        except OSError as exc:  # pragma: no cover - logged, the original error wins
            logger.error("could not remove temp file %s: %s", name, exc)


# --- whole files as the editor, the API and the tools see them ------------------------------

# Source and result of MEMORY.md are capped at 128 KiB (docs/runs.md); the other two files share it.
MAX_WORKSPACE_FILE_BYTES = 128 * 1024
# How much of MEMORY.md a run's context carries (the rest is cut, marked; docs/runs.md).
MEMORY_CONTEXT_BYTES = 24 * 1024
_SHA256_RE = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class WorkspaceFile:
    name: str
    content: str
    size: int
    exists: bool
    sha256: str  # of the bytes on disk (of no bytes when the file does not exist)


class WorkspaceEditConflict(Conflict):
    code = ErrorCode.CONFLICT


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_whole_file(workspace: Workspace, name: str) -> FileRead:
    read = workspace.read_file(name, max_bytes=MAX_WORKSPACE_FILE_BYTES)
    if read.truncated:
        raise TooLarge(
            f"{name} is larger than {MAX_WORKSPACE_FILE_BYTES} bytes; edit it on disk.",
            code=ErrorCode.WORKSPACE_FILE_TOO_LARGE,
        )
    return read


def validate_workspace_content(content: object) -> str:
    if not isinstance(content, str):
        raise InvalidInput(_("content must be a string."), code=ErrorCode.INVALID_CONTENT)
    clean_text(content, field="content")
    if utf8_len(content) > MAX_WORKSPACE_FILE_BYTES:
        raise TooLarge(_("content is larger than %(n)s bytes (UTF-8).") % {"n": MAX_WORKSPACE_FILE_BYTES})
    return content


def validate_base_sha256(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _SHA256_RE.fullmatch(value):
        raise InvalidInput("base_sha256 must be 64 lowercase hex characters.", code=ErrorCode.INVALID_BASE_SHA256)
    return value


def on_user_deleted(sender: type, instance: Any, **kwargs: Any) -> None:
    """An account deleted (the admin, a command): its workspace folder goes once the deletion
    commits, so that no file of it is left on the disk (its rows go by the database's cascade)."""
    user_id = instance.pk
    transaction.on_commit(lambda: Workspace(user_id).delete_all(), robust=True)
