"""An OpenAI Agents SDK session kept by the memory service (docs/integrations.md, "OpenAI
Agents SDK").

A session is a conversation of one user, found again from any process by its ``session_id``
(the conversation's ``external_id``). Each item is one message: a user's or an assistant's
text is a text message, which the history tools search (``search_thread_messages``) and
forgetting removes; tool calls, their outputs and other items are kept with their type, never
shown to those tools. Every item comes back exactly as it was added.

    session = MemorySession.from_env("support-42", user="alice")  # a service key
    result = await Runner.run(agent, "Hi!", session=session)
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
from collections.abc import Awaitable
from typing import Any, TypeVar

from agents.memory.session import SessionABC
from agents.memory.session_settings import SessionSettings, coerce_session_settings, resolve_session_limit

from memsvc.aio import AsyncClient
from memsvc.client import PAGE_SIZE
from memsvc.errors import NotFound
from memsvc.integrations._messages import (
    calls_of,
    checked_session_id,
    conversation_lookup,
    found_in,
    kept_whole,
    metadata_fits,
    refuse_oversize,
    unpacked,
)

__all__ = ["MemorySession"]

T = TypeVar("T")


async def settled(operation: Awaitable[T]) -> T:
    """``operation`` run to its end even when its caller is cancelled meanwhile, the cancellation
    raised once it has ended (its outcome, when the caller was not cancelled). A session's write
    cut short would leave it half done: the first of an ``add_items``' calls without the next (a
    function call kept without its output, which the model then refuses). The cancellation does
    not undo the write: a cancelled ``pop_item`` has removed its item, which it does not return.
    The SDK's own sessions wait the same way since 0.25
    (``agents.memory.session.await_session_mutation``, used where the SDK has it)."""
    task = asyncio.ensure_future(operation)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as error:
            cancelled = cancelled or error
    if cancelled is not None:
        if not task.cancelled():
            task.exception()  # retrieved: its outcome goes with the cancellation, unreported
        raise cancelled
    return task.result()


try:
    from agents.memory.session import await_session_mutation as _settled
except ImportError:  # the SDK before 0.25
    _settled = settled

ITEM = "openai_agents_item"  # metadata key: the item, its text left out (it is the content)
TEXT_AT = "openai_agents_text_at"  # where in the item its text goes back
PACKED = "openai_agents_item_packed"  # what JSON text cannot hold exactly: packed (integrations/_messages.py)
WHOLE = "openai_agents_item_json"  # the item too large for metadata: its JSON is the content
TEXT_PARTS = ("input_text", "output_text", "text")


def _text_path(item: dict[str, Any]) -> list[Any] | None:
    """Where an item holds its one text: a message's string content or its single text part,
    a function call's arguments, a call's output."""
    kind = item.get("type", "message")
    if kind == "message" or ("role" in item and "type" not in item):
        content = item.get("content")
        if isinstance(content, str):
            return ["content"]
        if isinstance(content, list):
            texts = [i for i, part in enumerate(content) if isinstance(part, dict) and part.get("type") in TEXT_PARTS]
            if len(texts) == 1 and isinstance(content[texts[0]].get("text"), str):
                return ["content", texts[0], "text"]
        return None
    for name in ("arguments", "output"):
        if isinstance(item.get(name), str):
            return [name]
    return None


def _get(item: Any, path: list[Any]) -> Any:
    for step in path:
        item = item[step]
    return item


def _set(item: Any, path: list[Any], value: Any) -> None:
    for step in path[:-1]:
        item = item[step]
    item[path[-1]] = value


def _role_and_type(item: dict[str, Any]) -> tuple[str, str]:
    kind = item.get("type", "message")
    if kind == "message" or ("role" in item and "type" not in item):
        role = item.get("role")
        if role in ("user", "assistant"):
            return role, "text"
        return "system", "text"  # system, developer
    if kind in ("function_call", "computer_call", "file_search_call", "web_search_call", "custom_tool_call"):
        return "assistant", "tool_call"
    if kind.endswith("_output"):
        return "tool", "tool_result"
    return "assistant", "event"  # reasoning, compaction …


def encode(item: dict[str, Any]) -> dict[str, Any]:
    """An item as a message: role, type, content and what is needed to give it back whole. An
    item holding a NUL, which the service stores in no text, is kept as its JSON (the NUL
    escaped); one that JSON text cannot hold exactly (a lone surrogate, NaN) is kept packed
    (``_messages.packed``); each comes back the same."""
    role, kind = _role_and_type(item)
    whole, must = kept_whole(item, role, kind, packed_key=PACKED, whole_key=WHOLE)
    if must:
        return whole
    path = _text_path(item)
    text = _get(item, path) if path else ""
    if set(item) == {"role", "content"} and path == ["content"] and role == item["role"]:
        return {"role": role, "type": kind, "content": text, "metadata": {}}
    skeleton = copy.deepcopy(item)
    if path:
        _set(skeleton, path, None)
    metadata = {ITEM: skeleton, TEXT_AT: path}
    if not metadata_fits(metadata):
        return whole
    return {"role": role, "type": kind, "content": text, "metadata": metadata}


def decode(message: dict[str, Any]) -> dict[str, Any]:
    """A message written by ``encode`` (or by anyone: a plain ``{"role", "content"}``)."""
    metadata = message.get("metadata") or {}
    if metadata.get(PACKED):
        return unpacked(message["content"])
    if metadata.get(WHOLE):
        return json.loads(message["content"])
    if isinstance(metadata.get(ITEM), dict):
        item = copy.deepcopy(metadata[ITEM])
        if metadata.get(TEXT_AT):
            _set(item, metadata[TEXT_AT], message["content"])
        return item
    return {"role": message["role"], "content": message["content"]}


class MemorySession(SessionABC):
    """The Agents SDK's ``Session`` over a conversation of ``user`` (a service principal's key:
    conversations are written by agent runtimes for their users)."""

    def __init__(
        self,
        session_id: str,
        *,
        user: str,
        base_url: str | None = None,
        token: str | None = None,
        client: AsyncClient | None = None,
        title: str | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        timeout: float = 30.0,
    ):
        if client is None and base_url is None:
            raise ValueError("MemorySession needs the service's base_url (or a client).")
        self.session_id = checked_session_id(session_id)
        self.user = user
        self.title = title
        # The SDK's own sessions take a dict too ({"limit": 20}).
        self.session_settings = (
            SessionSettings() if session_settings is None else coerce_session_settings(session_settings)
        )
        self._client = client or AsyncClient(base_url or "", token, timeout=timeout)
        self._conversation_id: str | None = None

    @classmethod
    def from_env(cls, session_id: str, *, user: str, **kwargs: Any) -> MemorySession:
        """``MEMSVC_URL`` and ``MEMSVC_TOKEN``, as ``memsvc.Client.from_env``."""
        return cls(session_id, user=user, base_url=os.environ["MEMSVC_URL"], token=os.environ["MEMSVC_TOKEN"], **kwargs)

    async def close(self) -> None:
        await self._client.close()

    async def conversation_id(self) -> str:
        """The conversation this session is (made on first use, then found again)."""
        if self._conversation_id is None:
            conversation = await self._client.create_conversation(
                self.user, external_id=self.session_id, title=self.title or self.session_id
            )
            self._conversation_id = conversation["id"]
        return self._conversation_id

    async def _found(self) -> str | None:
        """The conversation this session is, if it was made already: reads of a session nothing
        was added to make no empty conversation in the user's list."""
        if self._conversation_id is None:
            self._conversation_id = found_in(
                await self._client.list_conversations(**conversation_lookup(self.user, self.session_id))
            )
        return self._conversation_id

    async def _page(self, conversation: str, page: int, size: int, ordering: str) -> dict[str, Any]:
        return await self._client.list_messages(
            conversation, fields="full", ordering=ordering, page=page, page_size=size
        )

    async def get_items(self, limit: int | None = None) -> list[Any]:
        limit = resolve_session_limit(limit, self.session_settings)
        conversation = await self._found()
        if limit == 0 or conversation is None:
            return []
        newest_first = limit is not None and limit > 0
        size = min(PAGE_SIZE, limit) if newest_first else PAGE_SIZE  # type: ignore[type-var]
        found: list[dict[str, Any]] = []
        page = 1
        while True:
            data = await self._page(conversation, page, size, "-created_at" if newest_first else "created_at")
            found.extend(data["results"])
            if not data.get("next") or (newest_first and len(found) >= limit):  # type: ignore[operator]
                break
            page += 1
        if newest_first:
            found = list(reversed(found[:limit]))
        return [decode(message) for message in found]

    async def add_items(self, items: list[Any]) -> None:
        if not items:
            return
        messages = [encode(dict(item)) for item in items]
        refuse_oversize(messages, "Item")
        await _settled(self._add(messages))

    async def _add(self, messages: list[dict[str, Any]]) -> None:
        conversation = await self.conversation_id()
        # As few calls as the service's limits allow (a call all or none, and no other writer's
        # items between its own: a reasoning item and the one after it stay together).
        for group in calls_of([{**m, "metadata": m["metadata"] or None} for m in messages]):
            await self._client.add_messages(conversation, group)

    async def pop_item(self) -> Any | None:
        """The newest item, removed; None only when the session is empty. A newest item that
        another session object popped meanwhile is gone: the next newest is taken (each such
        round is an item fewer, so this ends)."""
        return await _settled(self._pop())

    async def _pop(self) -> Any | None:
        conversation = await self._found()
        if conversation is None:
            return None
        while True:
            data = await self._page(conversation, 1, 1, "-created_at")
            if not data["results"]:
                return None
            newest = data["results"][0]
            try:
                await self._client.forget_message(conversation, newest["id"])
            except NotFound:
                continue  # popped by someone else meanwhile: take the next newest
            return decode(newest)

    async def clear_session(self) -> None:
        conversation = await self._found()
        if conversation is not None:
            await _settled(self._client.forget_messages(conversation))
