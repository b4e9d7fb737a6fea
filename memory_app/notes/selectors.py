"""Reads of the notes file: the workspace files, their change history and the memory switch.

A user reads only their own files and history; nobody else's (not even a service principal)."""

from typing import Protocol

from django.db.models import OuterRef, QuerySet, Subquery

from config.errors import NotFound
from identity_app.models import User
from memory_app.notes.models import UserSettings, WorkspaceChange
from memory_app.notes.workspace import Workspace, WorkspaceFile, read_whole_file, sha256_hex, validate_workspace_name


def workspace_file_get(*, user: User, name: str) -> WorkspaceFile:
    validate_workspace_name(name)
    read = read_whole_file(Workspace(user.pk), name)
    return WorkspaceFile(
        name, read.content.decode("utf-8", errors="replace"), read.size, read.exists, sha256_hex(read.content)
    )


def workspace_changes_visible(*, user: User) -> QuerySet[WorkspaceChange]:
    """The change history of a user's workspace files: their own, nobody else's (not even a
    service principal's, which never reads another user's notes file either)."""
    # Changes of one group commit share a moment; their sequence numbers keep them in order.
    return (
        WorkspaceChange.objects.filter(user=user)
        .select_related("actor", "reverts")
        .defer("reverts__hunks")
        .order_by("-created_at", "-seq", "-id")
    )


def workspace_change_get(*, user: User, change_id: str) -> WorkspaceChange:
    change = workspace_changes_visible(user=user).filter(pk=change_id).first()
    if change is None:
        raise NotFound("Change not found.")
    return change


def user_settings_get(*, user: User) -> UserSettings:
    """The user's settings; an unsaved default row when none exists (reads never write)."""
    found = UserSettings.objects.filter(user=user).first()
    return found if found is not None else UserSettings(user=user)


def memory_enabled_for(*, user_id: int) -> bool:
    value = UserSettings.objects.filter(user_id=user_id).values_list("enable_memory", flat=True).first()
    return memory_enabled_from(value)


def enable_memory_subquery(user_field: str = "user_id") -> Subquery:
    """The stored ``enable_memory`` of the row's user (NULL without a settings row), to read it in
    the same query as the row; ``memory_enabled_from`` turns it into the switch state."""
    return Subquery(UserSettings.objects.filter(user_id=OuterRef(user_field)).values("enable_memory")[:1])


def memory_enabled_from(value: bool | None) -> bool:
    return UserSettings._meta.get_field("enable_memory").default if value is None else bool(value)


class _Run(Protocol):
    """An ``AgentRun`` (the runs package builds on this one)."""

    user_id: int


def run_memory_enabled(run: _Run) -> bool:
    """The run user's ``enable_memory``, as read with the run by authentication when it was
    (``stored_enable_memory``), else read now."""
    if hasattr(run, "stored_enable_memory"):
        return memory_enabled_from(run.stored_enable_memory)
    return memory_enabled_for(user_id=run.user_id)
