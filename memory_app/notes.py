"""User-facing operations on the workspace files and the ``enable_memory`` switch.

User edits take the same per-user lock and the same atomic publish path as the agent's
``remember_memory`` tool, so an edit and a tool write never overwrite each other.
"""

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from config.errors import InvalidInput, TooLarge
from memory_app.locks import user_lock_acquire
from memory_app.models import UserSettings
from memory_app.text import utf8_len
from memory_app.workspace import Workspace, validate_workspace_name

# Source and result of MEMORY.md are capped at 128 KiB (SPEC §5); the other two files share it.
MAX_WORKSPACE_FILE_BYTES = 128 * 1024


@dataclass(frozen=True)
class WorkspaceFile:
    name: str
    content: str
    size: int
    exists: bool


def workspace_file_get(*, user: AbstractBaseUser, name: str) -> WorkspaceFile:
    validate_workspace_name(name)
    read = Workspace(user.pk).read_file(name, max_bytes=MAX_WORKSPACE_FILE_BYTES)
    if read.truncated:
        raise TooLarge(
            f"{name} is larger than {MAX_WORKSPACE_FILE_BYTES} bytes; edit it on disk.",
            code="workspace_file_too_large",
        )
    return WorkspaceFile(name, read.content.decode("utf-8", errors="replace"), read.size, read.exists)


def validate_workspace_content(content) -> str:
    if not isinstance(content, str):
        raise InvalidInput("content must be a string.", code="invalid_content")
    if "\x00" in content:
        raise InvalidInput("content may not contain NUL characters.", code="invalid_content")
    if utf8_len(content) > MAX_WORKSPACE_FILE_BYTES:
        raise TooLarge(f"content is larger than {MAX_WORKSPACE_FILE_BYTES} bytes (UTF-8).")
    return content


def workspace_file_write(*, user: AbstractBaseUser, name: str, content: str) -> WorkspaceFile:
    validate_workspace_name(name)
    content = validate_workspace_content(content)
    data = content.encode("utf-8")
    with transaction.atomic(durable=True):
        user_lock_acquire(user_id=user.pk)
        Workspace(user.pk).replace_authorized_file(name, data)
    return WorkspaceFile(name, content, len(data), True)


def workspace_file_delete(*, user: AbstractBaseUser, name: str) -> bool:
    validate_workspace_name(name)
    with transaction.atomic(durable=True):
        user_lock_acquire(user_id=user.pk)
        return Workspace(user.pk).delete_file(name)


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
