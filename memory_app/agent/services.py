"""Writes of the agent part: conversations, messages and tool calls (by service principals for
a user), runs and their leases, and the user's workspace files and memory switch.

Every write owns its transaction; workspace edits and the memory switch take the per-user
lock (``locks.py``) so they serialize with ``remember_memory`` (docs/runs.md)."""

import hmac
import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from config.errors import Conflict, InvalidInput, NotFound, TooLarge
from config.validation import clean_text, json_size, validate_json_container, validate_json_value
from identity_app.chat_reach import chat_require_reach
from identity_app.models import User
from identity_app.permissions import (
    CREATE_TASK,
    READ,
    is_service_principal,
    project_require_permission,
    reach_require_project,
    require_service_principal,
)
from identity_app.selectors import user_get_acting
from identity_app.session_keys import InvalidSessionKey
from memory_app.agent import indexing, notes_history, notes_index
from memory_app.agent.budgets import utf8_len
from memory_app.agent.leases import (
    FINISHED_STATUSES,
    LeaseLost,
    RunCredential,
    RunNotAuthorized,
    hash_run_token,
    new_run_token,
    run_check_lease,
)
from memory_app.agent.locks import LockFailed, user_lock_acquire
from memory_app.agent.models import (
    TOP_LEVEL_RUN_KINDS,
    AgentRun,
    Conversation,
    ConversationSource,
    ConversationStatus,
    Message,
    MessageRole,
    MessageType,
    RunKind,
    RunStatus,
    ToolCall,
    UserSettings,
    WorkspaceChange,
    WorkspaceChangeAction,
    WorkspaceChangeSource,
)
from memory_app.agent.notes_history import Author
from memory_app.agent.selectors import (
    conversation_is_main_thread,
    conversations_visible,
    runs_visible,
    workspace_changes_visible,
)
from memory_app.agent.workspace import (
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
    *, user: User, files: dict[str, str], author: Author
) -> tuple[dict[str, str], list[Published]]:
    """Write each of ``files`` that is missing or empty, never overwriting text (an import):
    ``written``, ``identical`` (it already holds that text) or ``conflict`` per name.

    Runs inside the caller's transaction and takes the per-user lock for the rest of it, so the
    caller's other writes and these files commit together. The files are published last, after
    their history rows; if one publish fails, the ones before it are taken back and the error
    raised (the transaction then takes the rows back). The caller passes what was published to
    ``workspace_files_unpublish`` if its transaction fails afterwards."""
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
            _record(user=user, name=name, action=WorkspaceChangeAction.WRITE, author=author, before=before, after=data)
            to_publish.append((name, data, before))
            results[name] = FILL_WRITTEN
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


def _record(*, user, name: str, action: str, author: Author | None, before: FileRead, after: bytes | None, **extra):
    notes_history.change_record(
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
            raise notes_history.UndoConflict(f"{change.name} is larger than {MAX_WORKSPACE_FILE_BYTES} bytes.")
        later = list(WorkspaceChange.objects.filter(user=user, name=change.name, seq__gt=change.seq).order_by("seq"))
        text = notes_history.change_reversed(change=change, later=later, current=before.content, exists=before.exists)
        data = text.encode("utf-8")
        if len(data) > MAX_WORKSPACE_FILE_BYTES:
            raise TooLarge(
                f"Undoing this change would make {change.name} larger than {MAX_WORKSPACE_FILE_BYTES} bytes."
            )
        # Undoing the change that created the file removes it again.
        after = None if not data and not change.before_exists else data
        if (after is not None) == before.exists and (after or b"") == before.content:
            raise notes_history.UndoConflict("There is nothing left to undo in this change.")
        undo = notes_history.change_record(
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
        raise InvalidInput("enable_memory must be a boolean.", code="invalid")
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


MAX_MESSAGE_CONTENT_BYTES = 256 * 1024
MAX_MESSAGE_JSON_BYTES = 16 * 1024
SENT_AT_MAX_AHEAD = timedelta(minutes=5)  # clock skew of a runtime
MAX_TOOL_CALLS_PER_MESSAGE = 50
MAX_TOOL_CALL_FIELD_BYTES = 64 * 1024


def _short_text(value, name: str, limit: int, *, required: bool = False) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string.", code=f"invalid_{name}")
    clean_text(value, field=name)
    if len(value) > limit:
        raise TooLarge(f"{name} is longer than {limit} characters.")
    if required and not value.strip():
        raise InvalidInput(f"{name} may not be empty.", code=f"invalid_{name}")
    return value


def conversation_create(
    *,
    actor: User,
    username: str,
    title: str = "",
    project_id: str | None = None,
    source: str = ConversationSource.CHAT,
    parent_id: str | None = None,
    session_key: str | None = None,
    no_memory: bool = False,
) -> Conversation:
    require_service_principal(actor)
    owner = user_get_acting(actor=actor, username=username)
    _require_bool(no_memory, "no_memory")
    if source not in ConversationSource.values:
        raise InvalidInput(f"source must be one of {', '.join(ConversationSource.values)}.", code="invalid_source")
    parent = None
    if parent_id:
        parent = conversations_visible(user=actor).filter(pk=parent_id, owner=owner).first()
        if parent is None:
            raise NotFound("Parent conversation not found for this user.")
    project = None
    if project_id:
        project = project_require_permission(user=owner, project_id=project_id, permission=READ)
    reach_require_project(actor, project.pk if project else None)
    session_key = _short_text(session_key, "session_key", 200)
    if session_key:
        # A malformed key is a 400; a chat the caller may not use for this user is answered as
        # a chat that does not exist (docs/API.md, "Chat reach"). The key never changes later.
        chat_require_reach(actor=actor, session_key=session_key, acting_for_id=owner.pk)
    conversation = Conversation(
        owner=owner,
        project=project,
        title=_short_text(title, "title", 300),
        source=source,
        parent=parent,
        session_key=session_key,
        no_memory=no_memory,
    )
    conversation.full_clean()
    with transaction.atomic(durable=True):
        conversation.save(force_insert=True)
    return conversation


def message_create(
    *,
    actor: User,
    conversation_id: str,
    role: str,
    type: str = MessageType.TEXT,
    content: str = "",
    metadata: dict | None = None,
    attachments: list | None = None,
    images: list | None = None,
    feedback: dict | None = None,
    run_id: str | None = None,
    tool_calls: list | None = None,
    sent_at: datetime | None = None,
) -> Message:
    """A message of a conversation; ``sent_at`` is when it was said (default: now), at most
    ``SENT_AT_MAX_AHEAD`` ahead of the server's clock."""
    require_service_principal(actor)
    if sent_at is not None and (
        not isinstance(sent_at, datetime) or timezone.is_naive(sent_at) or sent_at > timezone.now() + SENT_AT_MAX_AHEAD
    ):
        raise InvalidInput(
            "sent_at must be a date and time with a time zone, not in the future.", code="invalid_sent_at"
        )
    if role not in MessageRole.values:
        raise InvalidInput(f"role must be one of {', '.join(MessageRole.values)}.", code="invalid_role")
    if type not in MessageType.values:
        raise InvalidInput(f"type must be one of {', '.join(MessageType.values)}.", code="invalid_type")
    if not isinstance(content, str):
        raise InvalidInput("content must be a string.", code="invalid_content")
    clean_text(content, field="content")
    if utf8_len(content) > MAX_MESSAGE_CONTENT_BYTES:
        raise TooLarge(f"content is larger than {MAX_MESSAGE_CONTENT_BYTES} bytes.")
    tool_calls = validate_json_container(
        tool_calls, field="tool_calls", kind=list, max_bytes=MAX_TOOL_CALLS_PER_MESSAGE * MAX_TOOL_CALL_FIELD_BYTES
    )
    if len(tool_calls) > MAX_TOOL_CALLS_PER_MESSAGE:
        raise TooLarge(f"at most {MAX_TOOL_CALLS_PER_MESSAGE} tool calls per message.")
    calls = [_tool_call_fields(call) for call in tool_calls]
    message = Message(
        role=role,
        type=type,
        content=content,
        metadata=validate_json_container(metadata, field="metadata", kind=dict, max_bytes=MAX_MESSAGE_JSON_BYTES),
        attachments=validate_json_container(
            attachments, field="attachments", kind=list, max_bytes=MAX_MESSAGE_JSON_BYTES
        ),
        images=validate_json_container(images, field="images", kind=list, max_bytes=MAX_MESSAGE_JSON_BYTES),
        feedback=validate_json_container(feedback, field="feedback", kind=dict, max_bytes=MAX_MESSAGE_JSON_BYTES),
        sent_at=sent_at,
    )
    with transaction.atomic(durable=True):
        conversation = (
            conversations_visible(user=actor).select_for_update(of=("self",)).filter(pk=conversation_id).first()
        )
        if conversation is None:
            raise NotFound("Conversation not found.")
        if run_id:
            run = AgentRun.objects.filter(pk=run_id, conversation=conversation).first()
            if run is None:
                raise NotFound("Run not found in this conversation.")
            message.run = run
        message.conversation = conversation
        message.save(force_insert=True)
        ToolCall.objects.bulk_create(
            [ToolCall(message=message, conversation=conversation, **fields) for fields in calls]
        )
        conversation.save(update_fields=["updated_at"])
        indexing.on_message_created(message, conversation)
    return message


def _require_bool(value, name: str) -> None:
    if not isinstance(value, bool):
        raise InvalidInput(f"{name} must be true or false.", code=f"invalid_{name}")


def conversation_update(
    *,
    actor: User,
    conversation_id: str,
    title: str | None = None,
    status: str | None = None,
    no_memory: bool | None = None,
) -> Conversation:
    """Rename or archive/delete/restore a conversation, or turn its "don't remember this chat"
    mode on or off (``no_memory``; it applies from the next context assembly on; turned on, it
    also keeps every run of the chat not extracted yet from ever being extracted): its owner or
    a service principal."""
    if status is not None and status not in ConversationStatus.values:
        raise InvalidInput(f"status must be one of {', '.join(ConversationStatus.values)}.", code="invalid_status")
    if no_memory is not None:
        _require_bool(no_memory, "no_memory")
    with transaction.atomic(durable=True):
        conversation = (
            conversations_visible(user=actor).select_for_update(of=("self",)).filter(pk=conversation_id).first()
        )
        if conversation is None:
            raise NotFound("Conversation not found.")
        fields: list[str] = []
        if title is not None:
            conversation.title, fields = _short_text(title, "title", 300), [*fields, "title"]
        if status is not None:
            conversation.status, fields = status, [*fields, "status"]
        if no_memory is not None and no_memory != conversation.no_memory:
            conversation.no_memory, fields = no_memory, [*fields, "no_memory"]
        if fields:
            conversation.save(update_fields=[*fields, "updated_at"])
        if no_memory:
            # Runs of the chat not yet extracted are never extracted, even if the mode is
            # turned off before the worker gets to them.
            AgentRun.objects.filter(conversation=conversation, auto_memory_processed_at__isnull=True).update(
                not_remembered=True
            )
    return conversation


def _tool_call_fields(call) -> dict:
    if not isinstance(call, dict):
        raise InvalidInput("each tool call must be a JSON object.", code="invalid_tool_calls")
    unknown = set(call) - {"name", "input", "output", "status", "error"}
    if unknown:
        raise InvalidInput(f"unknown tool call fields: {', '.join(sorted(unknown))}.", code="invalid_tool_calls")
    call_input = call.get("input") or {}
    if not isinstance(call_input, (dict, list)):
        raise InvalidInput("tool call input must be a JSON object or array.", code="invalid_tool_calls")
    validate_json_value(call_input, field="tool call input")
    if json_size(call_input) > MAX_TOOL_CALL_FIELD_BYTES:
        raise TooLarge(f"tool call input is larger than {MAX_TOOL_CALL_FIELD_BYTES} bytes.")
    output = call.get("output")
    if output is not None and not isinstance(output, str):
        output = json.dumps(output, ensure_ascii=False)
    fields = {
        "name": _short_text(call.get("name"), "tool call name", 200, required=True),
        "input": call_input,
        "output": _short_text(output, "tool call output", MAX_TOOL_CALL_FIELD_BYTES),
        "status": _short_text(call.get("status"), "tool call status", 32),
        "error": _short_text(call.get("error"), "tool call error", MAX_TOOL_CALL_FIELD_BYTES),
    }
    return fields


MIN_LEASE_SECONDS = 5
MAX_LEASE_SECONDS = 3600
MAX_USAGE_BYTES = 8 * 1024


def _lease_seconds(value) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not MIN_LEASE_SECONDS <= value <= MAX_LEASE_SECONDS:
        raise InvalidInput(
            f"lease_seconds must be an integer between {MIN_LEASE_SECONDS} and {MAX_LEASE_SECONDS}.",
            code="invalid_lease",
        )
    return value


def _worker_id(value) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 200:
        raise InvalidInput("worker_id must be a non-empty string of at most 200 characters.", code="invalid_worker")
    return value.strip()


def _require_chat_in_reach(*, actor: User, session_key: str, user_id: int) -> None:
    """A run token reads its conversation's chat items: whoever starts or takes over a run
    must reach that chat for the run's user (a token limited to alice, say, never a group
    chat an unlimited principal gave one of her conversations). Out of reach: 404, as a chat
    that does not exist. A malformed key (written before keys were checked) has no scope and
    gives its runs no items, so it needs no reach."""
    if not session_key:
        return
    try:
        chat_require_reach(actor=actor, session_key=session_key, acting_for_id=user_id)
    except InvalidSessionKey:
        return


@dataclass(frozen=True)
class IssuedRun:
    run: AgentRun
    run_token: str


def run_create(
    *,
    actor: User,
    username: str,
    conversation_id: str,
    request_id: str,
    kind: str = RunKind.CHAT,
    worker_id: str,
    lease_seconds: int = 60,
    prompt: str = "",
    goal: str | None = None,
    parent_run_id: str | None = None,
    project_id: str | None = None,
) -> IssuedRun:
    """Create a running run on behalf of ``username`` and issue its first run token."""
    require_service_principal(actor)
    user = user_get_acting(actor=actor, username=username)
    if kind not in RunKind.values:
        raise InvalidInput(f"kind must be one of {', '.join(RunKind.values)}.", code="invalid_kind")
    if not isinstance(request_id, str) or not request_id.strip() or len(request_id) > 100:
        raise InvalidInput("request_id must be a non-empty string of at most 100 characters.", code="invalid")
    worker_id, lease_seconds = _worker_id(worker_id), _lease_seconds(lease_seconds)
    conversation = conversations_visible(user=actor).filter(pk=conversation_id, owner=user).first()
    if conversation is None:
        raise NotFound("Conversation not found for this user.")
    _require_chat_in_reach(actor=actor, session_key=conversation.session_key, user_id=user.pk)
    if conversation.status != ConversationStatus.ACTIVE:
        raise Conflict("The conversation is not active.", code="conversation_not_active")
    if kind in TOP_LEVEL_RUN_KINDS:
        # A main-agent run gets MEMORY.md, the memory tools and identity injection; a
        # sub-agent must never pass for one.
        if parent_run_id:
            raise InvalidInput(f"A {kind} run cannot have parent_run_id; use kind=subagent.", code="parent_not_allowed")
        if not conversation_is_main_thread(conversation):
            raise InvalidInput(
                f"A {kind} run cannot execute on a sub-agent or agent-call thread.", code="subagent_thread"
            )
    parent = None
    if parent_run_id:
        parent = runs_visible(user=actor).filter(pk=parent_run_id, user=user).first()
        if parent is None:
            raise NotFound("Parent run not found for this user.")
    if kind == RunKind.SUBAGENT and parent is None:
        raise InvalidInput("A subagent run needs parent_run_id.", code="parent_required")
    project = None
    if project_id:
        project = project_require_permission(user=user, project_id=project_id, permission=CREATE_TASK)
    elif conversation.project_id:
        project = conversation.project
    reach_require_project(actor, project.pk if project else None)
    issued = _running_run(
        actor=actor,
        user=user,
        conversation=conversation,
        project=project,
        request_id=request_id.strip(),
        kind=kind,
        parent_run=parent,
        prompt=prompt or "",
        goal=goal,
        worker_id=worker_id,
        lease_seconds=lease_seconds,
    )
    with transaction.atomic(durable=True):
        issued.run.save(force_insert=True)
    return issued


def _running_run(*, actor, user, conversation, lease_seconds: int, **fields) -> IssuedRun:
    """A new running run (not saved yet) holding its first lease, and that lease's token."""
    now = timezone.now()
    run = AgentRun(
        user=user,
        created_by=actor,
        conversation=conversation,
        not_remembered=conversation.no_memory,
        status=RunStatus.RUNNING,
        lease_expires_at=now + timedelta(seconds=lease_seconds),
        lease_generation=1,
        started_at=now,
        **fields,
    )
    token = new_run_token(run.pk, 1)
    run.run_token_hash = hash_run_token(token)
    run.full_clean()
    return IssuedRun(run, token)


ASSISTANT_THREAD_TITLE = "Assistant (MCP)"


def assistant_run_open(
    *, actor: User, username: str, worker_id: str, lease_seconds: int = 60, request_id: str
) -> IssuedRun:
    """A top-level chat run for an assistant connected over MCP (docs/mcp.md), in the user's
    assistant thread (created on first use, then reused, so sessions do not pile up threads).

    A service principal opens it for ``username`` under the rules of ``conversation_create``
    and ``run_create`` (its token's reach included). Anyone else opens it only for themselves:
    such a run reaches their own notes file and history, which they read and edit anyway. The
    run has no messages to learn from, so auto-memory neither extracts from it nor injects into it.
    """
    if is_service_principal(actor):
        user = user_get_acting(actor=actor, username=username)
    elif username == actor.get_username():
        user = actor
    else:
        raise NotFound("Only service principals open runs for other users.")
    worker_id, lease_seconds = _worker_id(worker_id), _lease_seconds(lease_seconds)
    reach_require_project(actor, None)
    with transaction.atomic(durable=True):
        thread = (
            conversations_visible(user=actor)
            .filter(
                owner=user,
                source=ConversationSource.API,
                title=ASSISTANT_THREAD_TITLE,
                status=ConversationStatus.ACTIVE,
                parent__isnull=True,
                project__isnull=True,
            )
            .order_by("created_at", "id")
            .first()
        )
        if thread is None:
            thread = Conversation(owner=user, source=ConversationSource.API, title=ASSISTANT_THREAD_TITLE)
            thread.full_clean()
            thread.save(force_insert=True)
        issued = _running_run(
            actor=actor,
            user=user,
            conversation=thread,
            request_id=request_id,
            kind=RunKind.CHAT,
            worker_id=worker_id,
            lease_seconds=lease_seconds,
            auto_memory_generate=False,
            auto_memory_use=False,
        )
        issued.run.save(force_insert=True)
    return issued


def run_claim(*, actor: User, run_id: str, worker_id: str, lease_seconds: int = 60) -> IssuedRun:
    """Take over a run whose lease expired (or renew one's own): one conditional UPDATE, so of
    two racing workers exactly one wins. The previous token stops working."""
    require_service_principal(actor)
    worker_id, lease_seconds = _worker_id(worker_id), _lease_seconds(lease_seconds)
    with transaction.atomic(durable=True):
        current = (
            runs_visible(user=actor)
            .filter(pk=run_id)
            .values("lease_generation", "status", "user_id", "conversation__session_key")
            .first()
        )
        if current is None:
            raise NotFound("Run not found.")
        _require_chat_in_reach(
            actor=actor, session_key=current["conversation__session_key"], user_id=current["user_id"]
        )
        if current["status"] in FINISHED_STATUSES:
            raise Conflict(f"The run is {current['status']}.", code="run_finished")
        generation = current["lease_generation"] + 1
        token = new_run_token(run_id, generation)
        now = timezone.now()
        claimable = Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lte=now) | Q(worker_id=worker_id)
        updated = (
            AgentRun.objects.filter(claimable, pk=run_id, lease_generation=current["lease_generation"])
            .filter(status__in=[RunStatus.QUEUED, RunStatus.RUNNING])
            .update(
                worker_id=worker_id,
                lease_expires_at=now + timedelta(seconds=lease_seconds),
                lease_generation=F("lease_generation") + 1,
                run_token_hash=hash_run_token(token),
                status=RunStatus.RUNNING,
                updated_at=now,
            )
        )
        if updated != 1:
            raise Conflict("The run's lease is held by another worker.", code="lease_held")
    return IssuedRun(AgentRun.objects.get(pk=run_id), token)


def run_heartbeat(*, credential: RunCredential, lease_seconds: int = 60) -> AgentRun:
    lease_seconds = _lease_seconds(lease_seconds)
    now = timezone.now()
    with transaction.atomic(durable=True):
        run = AgentRun.objects.select_for_update().filter(pk=credential.run_id).first()
        if run is None:
            raise RunNotAuthorized("This run token is not valid for this run.")
        run_check_lease(run=run, credential=credential, now=now)
        run.lease_expires_at = now + timedelta(seconds=lease_seconds)
        run.save(update_fields=["lease_expires_at", "updated_at"])
    return run


def run_context_round_next(*, run_id: str) -> int:
    """Count one more context assembly of the run and return its number (1 = the first).

    One UPDATE and the read of its result in one transaction: the row lock the UPDATE takes
    (PostgreSQL) or the write lock (SQLite) makes concurrent calls count one after the other, so
    exactly one of them is round 1. A lost increment after a crash costs nothing, so PostgreSQL
    does not wait for the commit to reach the disk.
    """
    with transaction.atomic():
        connection = transaction.get_connection()
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL synchronous_commit TO OFF")
        AgentRun.objects.filter(pk=run_id).update(context_rounds=F("context_rounds") + 1)
        return AgentRun.objects.filter(pk=run_id).values_list("context_rounds", flat=True).get()


def run_finish(*, credential: RunCredential, status: str, usage: dict | None = None) -> AgentRun:
    """Finish a run. The token must still be the run's current one; an expired lease that
    nobody took over may still report its outcome."""
    if status not in FINISHED_STATUSES:
        raise InvalidInput("status must be completed, failed or cancelled.", code="invalid_status")
    usage = validate_json_container(usage, field="usage", max_bytes=MAX_USAGE_BYTES)
    now = timezone.now()
    with transaction.atomic(durable=True):
        run = AgentRun.objects.select_for_update().filter(pk=credential.run_id).first()
        if run is None:
            raise RunNotAuthorized("This run token is not valid for this run.")
        try:
            run_check_lease(run=run, credential=credential, now=now)
        except LeaseLost:
            if run.lease_generation != credential.generation:
                raise
        run.status = status
        run.finished_at = now
        run.usage = {**(run.usage or {}), **usage}
        run.lease_expires_at = None
        run.save(update_fields=["status", "finished_at", "usage", "lease_expires_at", "updated_at"])
    return run
