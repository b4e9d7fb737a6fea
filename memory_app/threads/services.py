"""Writes of conversations, their messages and tool calls: by service principals for a user;
an owner may rename, archive or switch "don't remember this chat" on their own.

Every write owns its transaction; a new history message is indexed in it (``indexing.py``)."""

import json
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from config.budgets import utf8_len
from config.errors import Conflict, InvalidInput, NotFound, TooLarge
from config.instants import shown_everywhere
from config.validation import clean_text, json_size, validate_json_container, validate_json_value
from identity_app.chat_reach import chat_require_reach
from identity_app.models import User
from identity_app.permissions import READ, project_require_permission, reach_require_project, require_service_principal
from identity_app.selectors import user_get_acting
from memory_app.reads.models import ItemKind
from memory_app.reads.services import reads_forget
from memory_app.threads import indexing
from memory_app.threads.errors import ErrorCode
from memory_app.threads.models import (
    Conversation,
    ConversationSource,
    ConversationStatus,
    Message,
    MessageRole,
    MessageType,
    ToolCall,
)
from memory_app.threads.selectors import conversations_visible

MAX_MESSAGE_CONTENT_BYTES = 256 * 1024
MAX_MESSAGE_JSON_BYTES = 16 * 1024
SENT_AT_MAX_AHEAD = timedelta(minutes=5)  # clock skew of a runtime
MAX_TOOL_CALLS_PER_MESSAGE = 50
MAX_TOOL_CALL_FIELD_BYTES = 64 * 1024
MAX_FORGET_MESSAGES = 10_000


def _short_text(value, name: str, limit: int, *, code: ErrorCode, required: bool = False) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string.", code=code)
    clean_text(value, field=name)
    if len(value) > limit:
        raise TooLarge(f"{name} is longer than {limit} characters.")
    if required and not value.strip():
        raise InvalidInput(f"{name} may not be empty.", code=code)
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
    external_id: str = "",
) -> Conversation:
    require_service_principal(actor)
    owner = user_get_acting(actor=actor, username=username)
    _require_bool(no_memory, "no_memory", code=ErrorCode.INVALID_NO_MEMORY)
    if source not in ConversationSource.values:
        raise InvalidInput(
            f"source must be one of {', '.join(ConversationSource.values)}.", code=ErrorCode.INVALID_SOURCE
        )
    parent = None
    if parent_id:
        parent = conversations_visible(user=actor).filter(pk=parent_id, owner=owner).first()
        if parent is None:
            raise NotFound("Parent conversation not found for this user.")
    project = None
    if project_id:
        project = project_require_permission(user=owner, project_id=project_id, permission=READ)
    reach_require_project(actor, project.pk if project else None)
    session_key = _short_text(session_key, "session_key", 200, code=ErrorCode.INVALID_SESSION_KEY)
    if session_key:
        # A malformed key is a 400; a chat the caller may not use for this user is answered as
        # a chat that does not exist (docs/API.md, "Chat reach"). The key never changes later.
        chat_require_reach(actor=actor, session_key=session_key, acting_for_id=owner.pk)
    conversation = Conversation(
        owner=owner,
        project=project,
        title=_short_text(title, "title", 300, code=ErrorCode.INVALID_TITLE),
        source=source,
        parent=parent,
        session_key=session_key,
        no_memory=no_memory,
        external_id=_short_text(external_id, "external_id", 200, code=ErrorCode.INVALID_EXTERNAL_ID),
    )
    conversation.full_clean(validate_constraints=False)  # the database holds the external id's
    with transaction.atomic(durable=True):
        conversation.save(force_insert=True)
    return conversation


def conversation_for_external_id(
    *, actor: User, username: str, external_id: str, **fields
) -> tuple[Conversation, bool]:
    """The conversation of ``username`` that the runtime calls ``external_id`` (an OpenAI Agents
    SDK session id), created with ``fields`` when there is none yet: (conversation, created).
    Found again from any process; two processes creating it at once make one (the external id
    is unique per user)."""
    require_service_principal(actor)
    owner = user_get_acting(actor=actor, username=username)
    external_id = _short_text(external_id, "external_id", 200, code=ErrorCode.INVALID_EXTERNAL_ID, required=True)
    visible = conversations_visible(user=actor).filter(owner=owner, external_id=external_id)
    found = visible.first()
    if found is not None:
        return found, False
    if Conversation.objects.filter(owner=owner, external_id=external_id).exists():
        # Another conversation of this user holds the id, outside this token's reach.
        raise Conflict("external_id is taken by a conversation this token may not use.", code=ErrorCode.CONFLICT)
    try:
        return conversation_create(actor=actor, username=username, external_id=external_id, **fields), True
    except IntegrityError:
        found = visible.first()  # created by a concurrent request meanwhile
        if found is None:
            raise
        return found, False


def messages_forget(*, actor: User, conversation_id: str, message_id: int | None = None) -> tuple[list[int], int]:
    """Forget one message of a conversation, or (``message_id`` None) all of them, at most
    ``MAX_FORGET_MESSAGES`` a call, oldest first: deleted with their tool calls, index entries,
    vectors and reads; the turn after a forgotten one is indexed again. Returns the forgotten
    ids and how many messages are left to forget (0 for one message). Service principals
    within reach, and the conversation's owner."""
    with transaction.atomic(durable=True):
        conversation = (
            conversations_visible(user=actor).select_for_update(of=("self",)).filter(pk=conversation_id).first()
        )
        if conversation is None:
            raise NotFound("Conversation not found.")
        if conversation.owner_id != actor.pk:
            require_service_principal(actor)
        doomed = conversation.messages.all()
        if message_id is not None:
            doomed = doomed.filter(pk=message_id)
        ids = list(doomed.order_by("created_at", "id").values_list("pk", flat=True)[: MAX_FORGET_MESSAGES + 1])
        if message_id is not None and not ids:
            raise NotFound("Message not found.")
        more = len(ids) > MAX_FORGET_MESSAGES
        ids = ids[:MAX_FORGET_MESSAGES]
        if message_id is not None:
            followers = _follower(conversation, ids)
        else:  # the oldest went: the first one left is indexed again without them
            followers = _follower(conversation, ids[-1:]) if more else []
        indexing.on_messages_deleted(ids, followers)
        reads_forget(item_kind=ItemKind.MESSAGE, refs=[str(pk) for pk in ids])
        Message.objects.filter(pk__in=ids).delete()
        conversation.save(update_fields=["updated_at"])
        remaining = conversation.messages.count() if more else 0
    return ids, remaining


def _follower(conversation: Conversation, ids: list[int]) -> list[Message]:
    """The turn after a forgotten one, whose vector holds its text (``indexing``: a turn is
    embedded with the user or assistant text before it, whatever tool calls sit between); none
    when it was the last."""
    gone = Message.objects.get(pk=ids[0])
    after = Q(created_at__gt=gone.created_at) | Q(created_at=gone.created_at, pk__gt=gone.pk)
    following = (
        conversation.messages.filter(after, role__in=indexing.HISTORY_ROLES, type=MessageType.TEXT)
        .select_related("conversation")
        .order_by("created_at", "id")
        .first()
    )
    return [following] if following is not None else []


MAX_MESSAGES_AT_ONCE = 100  # ``messages_create``: one transaction, the turns together


def message_create(*, actor: User, conversation_id: str, **fields: Any) -> Message:
    """A message of a conversation, its fields as ``_new_message`` takes them (``role``,
    ``type``, ``content``, ``metadata``, …); ``sent_at`` is when it was said (default: now), at
    most ``SENT_AT_MAX_AHEAD`` ahead of the server's clock."""
    return messages_create(actor=actor, conversation_id=conversation_id, messages=[fields])[0]


def messages_create(*, actor: User, conversation_id: str, messages: list[dict]) -> list[Message]:
    """Messages of a conversation, in order, all or none (at most ``MAX_MESSAGES_AT_ONCE``): each
    as ``message_create`` takes it, every one checked before any is written, and written under
    the conversation's lock, so another writer's messages come before or after them, never
    between (an agent's turn: its call, the call's output, the answer)."""
    require_service_principal(actor)
    if not isinstance(messages, list) or not messages:
        raise InvalidInput("messages must be a non-empty list.", code=ErrorCode.INVALID_MESSAGES)
    if len(messages) > MAX_MESSAGES_AT_ONCE:
        raise TooLarge(f"At most {MAX_MESSAGES_AT_ONCE} messages at once.")
    made = [_new_message(**fields) for fields in messages]
    with transaction.atomic(durable=True):
        conversation = (
            conversations_visible(user=actor).select_for_update(of=("self",)).filter(pk=conversation_id).first()
        )
        if conversation is None:
            raise NotFound("Conversation not found.")
        runs: dict[str, Any] = {}  # id → the conversation's run, or None
        for message, _calls, run_id in made:
            if run_id:
                if run_id not in runs:
                    runs[run_id] = conversation.runs.filter(pk=run_id).first()
                if runs[run_id] is None:
                    raise NotFound("Run not found in this conversation.")
                message.run = runs[run_id]
        for message, calls, _run_id in made:
            message.conversation = conversation
            message.save(force_insert=True)
            ToolCall.objects.bulk_create(
                [ToolCall(message=message, conversation=conversation, **fields) for fields in calls]
            )
        conversation.save(update_fields=["updated_at"])
        for message, _calls, _run_id in made:
            indexing.on_message_created(message, conversation)
    return [message for message, _calls, _run_id in made]


def _new_message(
    *,
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
) -> tuple[Message, list[dict], str | None]:
    """A message checked and built (not saved), its tool calls' fields, and its run's id."""
    if sent_at is not None and (
        not isinstance(sent_at, datetime)
        or timezone.is_naive(sent_at)
        or sent_at > timezone.now() + SENT_AT_MAX_AHEAD
        or not shown_everywhere(sent_at)  # the year 1 at its first hours: before every zone's calendar
    ):
        raise InvalidInput(
            "sent_at must be a date and time with a time zone, not in the future.", code=ErrorCode.INVALID_SENT_AT
        )
    if role not in MessageRole.values:
        raise InvalidInput(f"role must be one of {', '.join(MessageRole.values)}.", code=ErrorCode.INVALID_ROLE)
    if type not in MessageType.values:
        raise InvalidInput(f"type must be one of {', '.join(MessageType.values)}.", code=ErrorCode.INVALID_TYPE)
    if not isinstance(content, str):
        raise InvalidInput("content must be a string.", code=ErrorCode.INVALID_CONTENT)
    clean_text(content, field="content")
    if utf8_len(content) > MAX_MESSAGE_CONTENT_BYTES:
        raise TooLarge(f"content is larger than {MAX_MESSAGE_CONTENT_BYTES} bytes.")
    tool_calls = validate_json_container(
        tool_calls,
        field="tool_calls",
        code=ErrorCode.INVALID_TOOL_CALLS,
        kind=list,
        max_bytes=MAX_TOOL_CALLS_PER_MESSAGE * MAX_TOOL_CALL_FIELD_BYTES,
    )
    if len(tool_calls) > MAX_TOOL_CALLS_PER_MESSAGE:
        raise TooLarge(f"at most {MAX_TOOL_CALLS_PER_MESSAGE} tool calls per message.")
    calls = [_tool_call_fields(call) for call in tool_calls]
    message = Message(
        role=role,
        type=type,
        content=content,
        metadata=validate_json_container(
            metadata, field="metadata", code=ErrorCode.INVALID_METADATA, kind=dict, max_bytes=MAX_MESSAGE_JSON_BYTES
        ),
        attachments=validate_json_container(
            attachments,
            field="attachments",
            code=ErrorCode.INVALID_ATTACHMENTS,
            kind=list,
            max_bytes=MAX_MESSAGE_JSON_BYTES,
        ),
        images=validate_json_container(
            images, field="images", code=ErrorCode.INVALID_IMAGES, kind=list, max_bytes=MAX_MESSAGE_JSON_BYTES
        ),
        feedback=validate_json_container(
            feedback, field="feedback", code=ErrorCode.INVALID_FEEDBACK, kind=dict, max_bytes=MAX_MESSAGE_JSON_BYTES
        ),
        sent_at=sent_at,
    )
    return message, calls, run_id


def _require_bool(value, name: str, *, code: ErrorCode) -> None:
    if not isinstance(value, bool):
        raise InvalidInput(f"{name} must be true or false.", code=code)


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
        raise InvalidInput(
            f"status must be one of {', '.join(ConversationStatus.values)}.", code=ErrorCode.INVALID_STATUS
        )
    if no_memory is not None:
        _require_bool(no_memory, "no_memory", code=ErrorCode.INVALID_NO_MEMORY)
    with transaction.atomic(durable=True):
        conversation = (
            conversations_visible(user=actor).select_for_update(of=("self",)).filter(pk=conversation_id).first()
        )
        if conversation is None:
            raise NotFound("Conversation not found.")
        fields: list[str] = []
        if title is not None:
            conversation.title, fields = (
                _short_text(title, "title", 300, code=ErrorCode.INVALID_TITLE),
                [*fields, "title"],
            )
        if status is not None:
            conversation.status, fields = status, [*fields, "status"]
        if no_memory is not None and no_memory != conversation.no_memory:
            conversation.no_memory, fields = no_memory, [*fields, "no_memory"]
        if fields:
            conversation.save(update_fields=[*fields, "updated_at"])
        if no_memory:
            # Runs of the chat not yet extracted are never extracted, even if the mode is
            # turned off before the worker gets to them.
            conversation.runs.filter(auto_memory_processed_at__isnull=True).update(not_remembered=True)
    return conversation


def _tool_call_fields(call) -> dict:
    if not isinstance(call, dict):
        raise InvalidInput("each tool call must be a JSON object.", code=ErrorCode.INVALID_TOOL_CALLS)
    unknown = set(call) - {"name", "input", "output", "status", "error"}
    if unknown:
        raise InvalidInput(
            f"unknown tool call fields: {', '.join(sorted(unknown))}.", code=ErrorCode.INVALID_TOOL_CALLS
        )
    call_input = call.get("input") or {}
    if not isinstance(call_input, (dict, list)):
        raise InvalidInput("tool call input must be a JSON object or array.", code=ErrorCode.INVALID_TOOL_CALLS)
    validate_json_value(call_input, field="tool call input")
    if json_size(call_input) > MAX_TOOL_CALL_FIELD_BYTES:
        raise TooLarge(f"tool call input is larger than {MAX_TOOL_CALL_FIELD_BYTES} bytes.")
    output = call.get("output")
    if output is not None and not isinstance(output, str):
        output = json.dumps(output, ensure_ascii=False)
    fields = {
        "name": _short_text(call.get("name"), "tool call name", 200, code=ErrorCode.INVALID_TOOL_CALLS, required=True),
        "input": call_input,
        "output": _short_text(output, "tool call output", MAX_TOOL_CALL_FIELD_BYTES, code=ErrorCode.INVALID_TOOL_CALLS),
        "status": _short_text(call.get("status"), "tool call status", 32, code=ErrorCode.INVALID_TOOL_CALLS),
        "error": _short_text(
            call.get("error"), "tool call error", MAX_TOOL_CALL_FIELD_BYTES, code=ErrorCode.INVALID_TOOL_CALLS
        ),
    }
    return fields
