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

import copy
import json
import os
from typing import Any

from agents.memory.session import SessionABC
from agents.memory.session_settings import SessionSettings, resolve_session_limit

from memsvc.aio import AsyncClient
from memsvc.client import PAGE_SIZE
from memsvc.errors import NotFound

__all__ = ["MemorySession"]

ITEM = "openai_agents_item"  # metadata key: the item, its text left out (it is the content)
TEXT_AT = "openai_agents_text_at"  # where in the item its text goes back
WHOLE = "openai_agents_item_json"  # the item too large for metadata: its JSON is the content
METADATA_ITEM_BYTES = 12 * 1024
TEXT_PARTS = ("input_text", "output_text", "text")
POP_ATTEMPTS = 5


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
    """An item as a message: role, type, content and what is needed to give it back whole."""
    role, kind = _role_and_type(item)
    path = _text_path(item)
    text = _get(item, path) if path else ""
    if set(item) == {"role", "content"} and path == ["content"] and role == item["role"]:
        return {"role": role, "type": kind, "content": text, "metadata": {}}
    skeleton = copy.deepcopy(item)
    if path:
        _set(skeleton, path, None)
    metadata = {ITEM: skeleton, TEXT_AT: path}
    if len(json.dumps(metadata, ensure_ascii=False).encode()) > METADATA_ITEM_BYTES:
        return {"role": role, "type": kind, "content": json.dumps(item, ensure_ascii=False), "metadata": {WHOLE: True}}
    return {"role": role, "type": kind, "content": text, "metadata": metadata}


def decode(message: dict[str, Any]) -> dict[str, Any]:
    """A message written by ``encode`` (or by anyone: a plain ``{"role", "content"}``)."""
    metadata = message.get("metadata") or {}
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
        session_settings: SessionSettings | None = None,
        timeout: float = 30.0,
    ):
        if client is None and base_url is None:
            raise ValueError("MemorySession needs the service's base_url (or a client).")
        self.session_id = session_id
        self.user = user
        self.title = title
        self.session_settings = session_settings or SessionSettings()
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

    async def _page(self, page: int, size: int, ordering: str) -> dict[str, Any]:
        return await self._client.list_messages(
            await self.conversation_id(), fields="full", ordering=ordering, page=page, page_size=size
        )

    async def get_items(self, limit: int | None = None) -> list[Any]:
        limit = resolve_session_limit(limit, self.session_settings)
        if limit == 0:
            return []
        newest_first = limit is not None and limit > 0
        size = min(PAGE_SIZE, limit) if newest_first else PAGE_SIZE  # type: ignore[type-var]
        found: list[dict[str, Any]] = []
        page = 1
        while True:
            data = await self._page(page, size, "-created_at" if newest_first else "created_at")
            found.extend(data["results"])
            if not data.get("next") or (newest_first and len(found) >= limit):  # type: ignore[operator]
                break
            page += 1
        if newest_first:
            found = list(reversed(found[:limit]))
        return [decode(message) for message in found]

    async def add_items(self, items: list[Any]) -> None:
        conversation = await self.conversation_id()
        for item in items:
            encoded = encode(dict(item))
            await self._client.add_message(
                conversation,
                encoded["role"],
                encoded["content"],
                type=encoded["type"],
                metadata=encoded["metadata"] or None,
            )

    async def pop_item(self) -> Any | None:
        for _attempt in range(POP_ATTEMPTS):
            data = await self._page(1, 1, "-created_at")
            if not data["results"]:
                return None
            newest = data["results"][0]
            try:
                await self._client.forget_message(await self.conversation_id(), newest["id"])
            except NotFound:
                continue  # popped by someone else meanwhile: take the next newest
            return decode(newest)
        return None

    async def clear_session(self) -> None:
        await self._client.forget_messages(await self.conversation_id())
