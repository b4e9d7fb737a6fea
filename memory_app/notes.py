"""User-facing operations on the workspace files and the ``enable_memory`` switch.

User edits take the same per-user lock and the same atomic publish path as the agent's
``remember_memory`` tool, so an edit and a tool write never overwrite each other.
"""

import hashlib
import hmac
import re
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from config.errors import Conflict, InvalidInput, TooLarge
from config.validation import clean_text
from memory_app.locks import user_lock_acquire
from memory_app.models import UserSettings
from memory_app.text import utf8_len
from memory_app.workspace import Workspace, validate_workspace_name

# Source and result of MEMORY.md are capped at 128 KiB (SPEC §5); the other two files share it.
MAX_WORKSPACE_FILE_BYTES = 128 * 1024
_SHA256_RE = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class WorkspaceFile:
    name: str
    content: str
    size: int
    exists: bool
    sha256: str  # of the bytes on disk (of no bytes when the file does not exist)


class WorkspaceEditConflict(Conflict):
    code = "conflict"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_whole(workspace: Workspace, name: str):
    read = workspace.read_file(name, max_bytes=MAX_WORKSPACE_FILE_BYTES)
    if read.truncated:
        raise TooLarge(
            f"{name} is larger than {MAX_WORKSPACE_FILE_BYTES} bytes; edit it on disk.",
            code="workspace_file_too_large",
        )
    return read


def workspace_file_get(*, user: AbstractBaseUser, name: str) -> WorkspaceFile:
    validate_workspace_name(name)
    read = _read_whole(Workspace(user.pk), name)
    return WorkspaceFile(name, read.content.decode("utf-8", errors="replace"), read.size, read.exists, _sha256(read.content))


def validate_workspace_content(content) -> str:
    if not isinstance(content, str):
        raise InvalidInput("content must be a string.", code="invalid_content")
    clean_text(content, field="content")
    if utf8_len(content) > MAX_WORKSPACE_FILE_BYTES:
        raise TooLarge(f"content is larger than {MAX_WORKSPACE_FILE_BYTES} bytes (UTF-8).")
    return content


def validate_base_sha256(value) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _SHA256_RE.fullmatch(value):
        raise InvalidInput("base_sha256 must be 64 lowercase hex characters.", code="invalid_base_sha256")
    return value


def _check_base(workspace: Workspace, name: str, base_sha256: str | None) -> None:
    """Under the per-user lock: the file is still the version the editor started from."""
    if base_sha256 is None:
        return
    read = workspace.read_file(name, max_bytes=MAX_WORKSPACE_FILE_BYTES)
    if read.truncated or not hmac.compare_digest(_sha256(read.content), base_sha256):
        raise WorkspaceEditConflict(
            f"{name} changed since you opened it (for example the agent saved a note); nothing was "
            "changed. Reload it and apply your edit again."
        )


def workspace_file_write(
    *, user: AbstractBaseUser, name: str, content: str, base_sha256: str | None = None
) -> WorkspaceFile:
    """Publish ``content``. With ``base_sha256`` (the hash the editor read) the write happens
    only if the file is still that version, checked under the per-user lock; otherwise
    ``409 conflict`` and the file is untouched. Without it the content overwrites the file."""
    validate_workspace_name(name)
    content = validate_workspace_content(content)
    base_sha256 = validate_base_sha256(base_sha256)
    data = content.encode("utf-8")
    with transaction.atomic(durable=True):
        user_lock_acquire(user_id=user.pk)
        workspace = Workspace(user.pk)
        _check_base(workspace, name, base_sha256)
        workspace.replace_authorized_file(name, data)
    return WorkspaceFile(name, content, len(data), True, _sha256(data))


def workspace_file_delete(*, user: AbstractBaseUser, name: str, base_sha256: str | None = None) -> bool:
    """Remove a file; ``base_sha256`` as for ``workspace_file_write``."""
    validate_workspace_name(name)
    base_sha256 = validate_base_sha256(base_sha256)
    with transaction.atomic(durable=True):
        user_lock_acquire(user_id=user.pk)
        workspace = Workspace(user.pk)
        _check_base(workspace, name, base_sha256)
        return workspace.delete_file(name)


def user_settings_get(*, user: AbstractBaseUser) -> UserSettings:
    """The user's settings; an unsaved default row when none exists (reads never write)."""
    found = UserSettings.objects.filter(user=user).first()
    return found if found is not None else UserSettings(user=user)


def memory_enabled_for(*, user_id: int) -> bool:
    value = UserSettings.objects.filter(user_id=user_id).values_list("enable_memory", flat=True).first()
    return UserSettings._meta.get_field("enable_memory").default if value is None else bool(value)


def user_settings_update(*, user: AbstractBaseUser, enable_memory: bool) -> UserSettings:
    if not isinstance(enable_memory, bool):
        raise InvalidInput("enable_memory must be a boolean.", code="invalid")
    with transaction.atomic(durable=True):
        # Same lock as remember_memory: a switch turned off is seen by every later write.
        user_lock_acquire(user_id=user.pk)
        row, _ = UserSettings.objects.select_for_update().get_or_create(user=user)
        if row.enable_memory != enable_memory:
            row.enable_memory = enable_memory
            row.save(update_fields=["enable_memory", "updated_at"])
    return row
