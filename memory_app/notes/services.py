"""Writes of the notes file: the user's workspace files (publish, delete, fill on import, undo of
one change, forgetting the change history), an agent's notes (``MemoryFileEditor``: every write
of ``MEMORY.md`` by an agent goes through it) and the memory switch.

Every write owns its transaction and takes the per-user lock (``locks.py``), so writes of one
user serialize across processes (docs/runs.md)."""

import copy
import hmac
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from django.db import DatabaseError, transaction

from config.errors import Conflict, DomainError, InvalidInput, NotFound, TooLarge
from config.metrics import NOTES_WRITE_BATCH
from identity_app.models import User
from memory_app.notes import history, notes_index
from memory_app.notes import lines as line_rules
from memory_app.notes.errors import ErrorCode
from memory_app.notes.groupcommit import GroupCommitter
from memory_app.notes.history import Author
from memory_app.notes.locks import LockFailed, user_lock_acquire
from memory_app.notes.models import UserSettings, WorkspaceChange, WorkspaceChangeAction, WorkspaceChangeSource
from memory_app.notes.selectors import workspace_changes_visible
from memory_app.notes.workspace import (
    MAX_WORKSPACE_FILE_BYTES,
    MEMORY_FILE,
    FileRead,
    Workspace,
    WorkspaceEditConflict,
    WorkspaceFile,
    WorkspaceUnsafe,
    WorkspaceWriteFailed,
    sha256_hex,
    validate_base_sha256,
    validate_workspace_content,
    validate_workspace_name,
)
from memory_app.reads import services as reads_services

logger = logging.getLogger(__name__)


def _read_under_lock(workspace: Workspace, name: str, base_sha256: str | None) -> FileRead:
    """Under the per-user lock: the file as it is now (what the change history compares with),
    and, with ``base_sha256``, the check that it is still the version the editor started from."""
    read = workspace.read_file(name, max_bytes=MAX_WORKSPACE_FILE_BYTES)
    if base_sha256 is not None and (read.truncated or not hmac.compare_digest(sha256_hex(read.content), base_sha256)):
        raise WorkspaceEditConflict(
            f"{name} changed since you opened it (for example the agent saved a note); nothing was "
            "changed. Reload it and apply your edit again."
        )
    return read


def workspace_file_write(
    *,
    user: User,
    name: str,
    content: str,
    base_sha256: str | None = None,
    author: Author | None = None,
) -> WorkspaceFile:
    """Publish ``content``. With ``base_sha256`` (the hash the editor read) the write happens
    only if the file is still that version, checked under the per-user lock; otherwise
    ``409 conflict`` and the file is untouched. Without it the content overwrites the file.
    The change goes into the file's history, made by ``author`` (default: ``user`` over the API)."""
    validate_workspace_name(name)
    content = validate_workspace_content(content)
    base_sha256 = validate_base_sha256(base_sha256)
    data = content.encode("utf-8")
    with transaction.atomic(durable=True):
        user_lock_acquire(user_id=user.pk)
        workspace = Workspace(user.pk)
        before = _read_under_lock(workspace, name, base_sha256)
        # Recorded first: if the publish fails, the transaction takes the record back.
        _record(user=user, name=name, action=WorkspaceChangeAction.WRITE, author=author, before=before, after=data)
        workspace.replace_authorized_file(name, data)
    return WorkspaceFile(name, content, len(data), True, sha256_hex(data))


def workspace_file_delete(
    *, user: User, name: str, base_sha256: str | None = None, author: Author | None = None
) -> bool:
    """Remove a file; ``base_sha256`` and ``author`` as for ``workspace_file_write``."""
    validate_workspace_name(name)
    base_sha256 = validate_base_sha256(base_sha256)
    with transaction.atomic(durable=True):
        user_lock_acquire(user_id=user.pk)
        workspace = Workspace(user.pk)
        before = _read_under_lock(workspace, name, base_sha256)
        if before.exists:
            _record(user=user, name=name, action=WorkspaceChangeAction.DELETE, author=author, before=before, after=None)
        if name == MEMORY_FILE:
            notes_index.notes_index_drop(user_id=user.pk)  # its lines leave the search index with it
        return workspace.delete_file(name)


FILL_WRITTEN, FILL_IDENTICAL, FILL_CONFLICT = "written", "identical", "conflict"


@dataclass(frozen=True)
class Published:
    """A file ``workspace_files_fill`` published, with what it replaced (to take it back)."""

    name: str
    before: FileRead


def workspace_files_fill(
    *, user: User, files: dict[str, str], author: Author, dry_run: bool = False
) -> tuple[dict[str, str], list[Published]]:
    """Write each of ``files`` that is missing or empty, never overwriting text (an import):
    ``written``, ``identical`` (it already holds that text) or ``conflict`` per name.

    Runs inside the caller's transaction and takes the per-user lock for the rest of it, so the
    caller's other writes and these files commit together. The files are published last, after
    their history rows; if one publish fails, the ones before it are taken back and the error
    raised (the transaction then takes the rows back). The caller passes what was published to
    ``workspace_files_unpublish`` if its transaction fails afterwards. ``dry_run``: the same
    answer, and nothing is locked, recorded or written."""
    if not dry_run:
        if not transaction.get_connection().in_atomic_block:
            raise LockFailed("Filling the workspace files needs the caller's transaction.")
        user_lock_acquire(user_id=user.pk)
    workspace = Workspace(user.pk)
    results: dict[str, str] = {}
    to_publish: list[tuple[str, bytes, FileRead]] = []
    for name, content in files.items():
        validate_workspace_name(name)
        data = validate_workspace_content(content).encode("utf-8")
        before = _read_under_lock(workspace, name, None)
        if before.exists and not before.truncated and before.content == data:
            results[name] = FILL_IDENTICAL
        elif before.exists and (before.truncated or before.content):
            results[name] = FILL_CONFLICT
        else:
            results[name] = FILL_WRITTEN
            if not dry_run:
                _record(
                    user=user, name=name, action=WorkspaceChangeAction.WRITE, author=author, before=before, after=data
                )
                to_publish.append((name, data, before))
    published: list[Published] = []
    try:
        for name, data, before in to_publish:
            workspace.replace_authorized_file(name, data)
            published.append(Published(name, before))
    except BaseException:
        workspace_files_unpublish(user=user, published=published)
        raise
    return results, published


def workspace_files_unpublish(*, user: User, published: list[Published]) -> None:
    """Put back what ``workspace_files_fill`` published (its caller's transaction failed): each
    file as it was before, or gone if it did not exist. Best effort: a file that cannot be put
    back is logged, and the other files are still put back."""
    workspace = Workspace(user.pk)
    for item in reversed(published):
        try:
            if item.before.exists:
                workspace.replace_authorized_file(item.name, item.before.content)
            else:
                workspace.delete_file(item.name)
        except (OSError, WorkspaceUnsafe, WorkspaceWriteFailed) as exc:
            logger.error(
                "workspace file could not be put back",
                extra={"user_id": user.pk, "file": item.name, "error_class": type(exc).__name__},
            )


def _record(
    *, user: User, name: str, action: str, author: Author | None, before: FileRead, after: bytes | None, **extra: Any
) -> None:
    history.change_record(
        user_id=user.pk,
        name=name,
        action=action,
        author=author or Author(WorkspaceChangeSource.API, actor=user),
        before=None if before.truncated else before.content,
        before_exists=before.exists,
        after=after,
        **extra,
    )


def workspace_change_undo(
    *, user: User, change_id: str, base_sha256: str | None = None, author: Author | None = None
) -> WorkspaceChange:
    """Reverse one change of the user's workspace file history, keeping every later change, through
    the same lock and publish path as an edit. ``base_sha256`` as for ``workspace_file_write``.
    A later change that touched the same lines, a file changed outside the service, or a change
    already undone is ``409 undo_conflict``; in every refusal the file is untouched. The undo is
    itself a change (``reverts`` the undone one), so it can be undone in turn."""
    base_sha256 = validate_base_sha256(base_sha256)
    with transaction.atomic(durable=True):
        user_lock_acquire(user_id=user.pk)
        change = workspace_changes_visible(user=user).filter(pk=change_id).first()
        if change is None:
            raise NotFound("Change not found.")
        workspace = Workspace(user.pk)
        before = _read_under_lock(workspace, change.name, base_sha256)
        if before.truncated:
            raise history.UndoConflict(f"{change.name} is larger than {MAX_WORKSPACE_FILE_BYTES} bytes.")
        later = list(WorkspaceChange.objects.filter(user=user, name=change.name, seq__gt=change.seq).order_by("seq"))
        text = history.change_reversed(change=change, later=later, current=before.content, exists=before.exists)
        data = text.encode("utf-8")
        if len(data) > MAX_WORKSPACE_FILE_BYTES:
            raise TooLarge(
                f"Undoing this change would make {change.name} larger than {MAX_WORKSPACE_FILE_BYTES} bytes."
            )
        # Undoing the change that created the file removes it again.
        after = None if not data and not change.before_exists else data
        if (after is not None) == before.exists and (after or b"") == before.content:
            raise history.UndoConflict("There is nothing left to undo in this change.")
        undo = history.change_record(
            user_id=user.pk,
            name=change.name,
            action=WorkspaceChangeAction.UNDO,
            author=author or Author(WorkspaceChangeSource.API, actor=user),
            before=before.content,
            before_exists=before.exists,
            after=after,
            reverts=change,
        )
        assert undo is not None  # recorded: the no-change case raised UndoConflict above
        if after is None:
            workspace.delete_file(change.name)
        else:
            workspace.replace_authorized_file(change.name, data)
    return undo


def workspace_history_clear(*, user: User, name: str | None = None) -> int:
    """Forget the recorded changes (and so the old text they hold) of one file or of all three;
    the files themselves stay as they are. Returns how many changes were forgotten."""
    if name is not None:
        validate_workspace_name(name)
    with transaction.atomic(durable=True):
        user_lock_acquire(user_id=user.pk)
        qs = WorkspaceChange.objects.filter(user=user)
        if name is not None:
            qs = qs.filter(name=name)
        count, _ = qs.delete()
        if name in (None, MEMORY_FILE):
            # Which notes-file versions agents read goes with the versions' history.
            reads_services.reads_forget_notes(user_id=user.pk)
    return count


def user_settings_update(*, user: User, enable_memory: bool) -> UserSettings:
    if not isinstance(enable_memory, bool):
        raise InvalidInput("enable_memory must be a boolean.", code=ErrorCode.INVALID)
    # Not durable: an import sets the switch in its own transaction (all or nothing); the lock
    # then holds to the end of that transaction.
    with transaction.atomic():
        # Same lock as remember_memory: a switch turned off is seen by every later write.
        user_lock_acquire(user_id=user.pk)
        row, _ = UserSettings.objects.select_for_update().get_or_create(user=user)
        if row.enable_memory != enable_memory:
            row.enable_memory = enable_memory
            row.save(update_fields=["enable_memory", "updated_at"])
    return row


# --- an agent's notes ------------------------------------------------------------------------
@dataclass(frozen=True)
class LineEdit:
    """One note for the user's ``MEMORY.md`` (``lines.line_edit_apply``): append ``content``, or
    replace the text ``replaces`` (which must occur once) by it. ``caller`` is what the editor's
    ``authorize`` needs to decide who makes it (an agent run's credential and claims)."""

    content: str
    replaces: str | None
    caller: object = None


# ``authorize(user_id, edits)``, called under the per-user lock in the batch's transaction: for
# each edit, in order, who makes it (an ``Author``) or the error that refuses it alone.
Authorize = Callable[[int, list[LineEdit]], list[Author | DomainError]]


class MemoryFileEditor:
    """The one writer of an agent's notes to ``MEMORY.md``: ``edit(user_id, line_edit)`` queues
    the note behind the batch of that user's notes in progress (``groupcommit.py``) and returns
    ``{"result": "appended" | "replaced" | "unchanged", "bytes": <file size>}`` once the publish
    that holds it is durable, or raises the error that refused it."""

    def __init__(self, authorize: Authorize) -> None:
        self._authorize = authorize
        self.committer = GroupCommitter(self.apply_batch)

    def edit(self, user_id: int, edit: LineEdit) -> dict[str, Any]:
        # apply_batch's outcome for this edit: its result dict (an error is raised instead).
        return cast(dict[str, Any], self.committer.submit(user_id, edit))

    def apply_batch(self, user_id: int, edits: list[LineEdit]) -> list[Any]:
        """Apply queued notes of one user in order, with one lock, one read and one publish: each
        note is authorized and applied on its own (a refused note changes nothing and gets its
        own error), each applied note is recorded as its own change, and the file is published
        once before any caller is answered. A failure of the lock, the read or the publish
        refuses every note of the batch and leaves the file as it was."""
        outcomes: list[Any] = [None] * len(edits)
        NOTES_WRITE_BATCH.observe(len(edits))
        try:
            with transaction.atomic(durable=True):
                user_lock_acquire(user_id=user_id)
                authors = self._authorize(user_id, edits)
                workspace, read, steps = Workspace(user_id), None, []
                for index, (edit, author) in enumerate(zip(edits, authors, strict=True)):
                    try:
                        if isinstance(author, DomainError):
                            raise author
                        if read is None:  # read once, after the first note that was authorized
                            read = workspace.read_file(MEMORY_FILE, max_bytes=MAX_WORKSPACE_FILE_BYTES)
                            current, file_error = _memory_file_text(read)
                            data, exists = read.content, read.exists
                            lines = line_rules.file_lines(user_id, current) if file_error is None else []
                        if file_error is not None:
                            raise copy.copy(file_error)
                        result, updated, new_lines = line_rules.line_edit_apply(
                            current=current, lines=lines, content=edit.content, replaces=edit.replaces
                        )
                        if updated is not None:
                            new_data = updated.encode("utf-8")
                            if len(new_data) > MAX_WORKSPACE_FILE_BYTES:
                                raise TooLarge(
                                    f"MEMORY.md would grow beyond {MAX_WORKSPACE_FILE_BYTES} bytes.",
                                    code=ErrorCode.MEMORY_FILE_TOO_LARGE,
                                )
                            action = (
                                WorkspaceChangeAction.APPEND if result == "appended" else WorkspaceChangeAction.REPLACE
                            )
                            steps.append(history.ChangeStep(action, author, data, exists, new_data))
                            current, data, exists, lines = updated, new_data, True, new_lines
                        outcomes[index] = {"result": result, "bytes": len(data)}
                    except DomainError as exc:
                        logger.info("notes edit refused for user %s: %s", user_id, exc.code)
                        outcomes[index] = exc
                if steps:
                    # Recorded first: if the publish fails, the transaction takes the records back.
                    history.changes_record(user_id=user_id, name=MEMORY_FILE, steps=steps)
                    workspace.replace_authorized_file(MEMORY_FILE, data)
                if read is not None and file_error is None:
                    line_rules.file_lines_keep(user_id, current, lines)
        except DomainError as exc:
            logger.info("notes edits refused for user %s (%d edits): %s", user_id, len(edits), exc.code)
            raise
        except DatabaseError as exc:
            logger.warning(
                "notes edits refused for user %s (%d edits): database error %s",
                user_id,
                len(edits),
                exc.__class__.__name__,
            )
            raise LockFailed(f"Memory write refused: database unavailable ({exc.__class__.__name__}).") from exc
        return outcomes


def _memory_file_text(read: FileRead) -> tuple[str, DomainError | None]:
    """The current MEMORY.md as text, or the error that refuses every write to it."""
    if read.truncated:
        return "", TooLarge(
            f"MEMORY.md is larger than {MAX_WORKSPACE_FILE_BYTES} bytes; ask the user to tidy it.",
            code=ErrorCode.MEMORY_FILE_TOO_LARGE,
        )
    try:
        return read.content.decode("utf-8"), None
    except UnicodeDecodeError:
        return "", Conflict("MEMORY.md is not valid UTF-8; ask the user to fix it.", code=ErrorCode.MEMORY_FILE_INVALID)
