"""LangChain over the memory service (docs/integrations.md, "LangChain").

    retriever = MemoryRetriever.from_env(user="alice", k=5)   # MEMSVC_URL, MEMSVC_TOKEN
    docs = retriever.invoke("what does Alice eat?")           # Documents, best first

    history = MemoryChatMessageHistory.from_env("support-42", user="alice")  # a service key
    client, aclient = memsvc.Client.from_env(), memsvc.AsyncClient.from_env()  # shared by the histories
    RunnableWithMessageHistory(chain, lambda sid: MemoryChatMessageHistory(sid, user="alice", client=client, aclient=aclient))

The retriever searches one user's own memories (``user``) or one project's (``project``), with
the store's search (docs/integrations.md, "The store"): the ``k`` memories that match best, by
words and meaning, then the newest others. The chat message history is a conversation of one
user, found again from any process by its ``session_id`` (the conversation's ``external_id``);
each message comes back exactly as it was added.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, ChatMessage, message_to_dict, messages_from_dict
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, PrivateAttr

from memsvc.aio import AsyncClient
from memsvc.client import PAGE_SIZE, Client
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

__all__ = ["MemoryChatMessageHistory", "MemoryRetriever"]

MAX_K = 200


class MemoryRetriever(BaseRetriever):
    """``base_url`` and ``token`` as for ``memsvc.Client``; ``user`` (a username: yourself with
    your own key, or a user a service key acts for) or ``project`` (a project id); ``k``
    documents per query (``invoke(query, k=…)`` changes it for one call)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    base_url: str
    token: str | None = None
    user: str | None = None
    project: str | None = None
    k: int = 5
    timeout: float = 30.0
    _client: Client | None = PrivateAttr(default=None)
    _aclient: AsyncClient | None = PrivateAttr(default=None)

    @classmethod
    def from_env(
        cls, *, user: str | None = None, project: str | None = None, k: int = 5, **kwargs: Any
    ) -> MemoryRetriever:
        """``MEMSVC_URL`` and ``MEMSVC_TOKEN``, as ``memsvc.Client.from_env``."""
        return cls(
            base_url=os.environ["MEMSVC_URL"],
            token=os.environ["MEMSVC_TOKEN"],
            user=user,
            project=project,
            k=k,
            **kwargs,
        )

    def _namespace(self) -> list[str]:
        if (self.user is None) == (self.project is None):
            raise ValueError("Give either user or project.")
        return ["users", self.user] if self.user is not None else ["projects", str(self.project)]

    def _op(self, query: str, k: int | None) -> list[dict[str, Any]]:
        k = self.k if k is None else k
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise ValueError(f"k is an integer from 1 to {MAX_K}.")
        return [{"op": "search", "namespace_prefix": self._namespace(), "query": query, "limit": k}]

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> MemoryRetriever:
        """A copy with the same settings and connections of its own (made when first used):
        open connections and their locks cannot be copied, and LangChain copies retrievers."""
        copied = self.model_copy()
        copied._client = None
        copied._aclient = None
        return copied

    def _sync_client(self) -> Client:
        if self._client is None:
            self._client = Client(self.base_url, self.token, timeout=self.timeout)
        return self._client

    def _async_client(self) -> AsyncClient:
        if self._aclient is None:
            self._aclient = AsyncClient(self.base_url, self.token, timeout=self.timeout)
        return self._aclient

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None, **kwargs: Any
    ) -> list[Document]:
        (found,) = self._sync_client().store_batch(self._op(query, k))
        return [_document(item) for item in found]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None, **kwargs: Any
    ) -> list[Document]:
        (found,) = await self._async_client().store_batch(self._op(query, k))
        return [_document(item) for item in found]


def _document(item: dict[str, Any]) -> Document:
    """A memory as a document: its text, and in ``metadata`` its id, key, namespace, kind,
    ``score`` (None for the newest others after the ranked ones), when it was written and the
    rest of its value (``value``)."""
    value = item["value"]
    text = value["content"] if isinstance(value.get("content"), str) else item["text"]
    metadata = {
        "id": item["id"],
        "key": item["key"],
        "namespace": item["namespace"],
        "kind": item.get("kind"),
        "score": item.get("score"),
        "created_at": item["created_at"],
        "value": {name: field for name, field in value.items() if name != "content"},
    }
    return Document(page_content=text, metadata=metadata, id=item["id"])


# --- chat message history ------------------------------------------------------------------
MESSAGE = "langchain_message"  # metadata key: the message as LangChain writes it, its text left out
PACKED = "langchain_message_packed"  # what JSON text cannot hold exactly: packed (integrations/_messages.py)
WHOLE = "langchain_message_json"  # the message too large for metadata: its JSON is the content
BY_ROLE = {"user": "human", "assistant": "ai", "system": "system"}  # a message written by anyone else
CHUNKS = {  # a streamed message's chunk is kept under its message's role
    f"{name}MessageChunk": kind
    for name, kind in (("Human", "human"), ("AI", "ai"), ("System", "system"), ("Tool", "tool"))
} | {"FunctionMessageChunk": "function", "ChatMessageChunk": "chat"}


def _role_and_type(message: dict[str, Any]) -> tuple[str, str]:
    """The service's role and type for a message as ``message_to_dict`` writes it."""
    kind, data = message["type"], message["data"]
    kind = CHUNKS.get(kind, kind)
    if kind == "human":
        return "user", "text"
    if kind == "ai":
        held_text = data.get("content") not in ("", [], None)
        return "assistant", "tool_call" if data.get("tool_calls") and not held_text else "text"
    if kind == "system":
        return "system", "text"
    if kind in ("tool", "function"):
        return "tool", "tool_result"
    if kind == "chat" and data.get("role") in ("user", "assistant", "system"):
        return data["role"], "text"
    return "assistant", "event"  # a chat message of another role, other kinds


def _text(content: Any) -> str:
    """A message's text: its content, or the text of its content's text parts."""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "\n".join(
        part if isinstance(part, str) else part["text"]
        for part in parts
        if isinstance(part, str) or (isinstance(part, dict) and isinstance(part.get("text"), str))
    )


def encode_message(message: BaseMessage) -> dict[str, Any]:
    """A LangChain message as the service's message: role, type, its text as the content, and
    the rest of it in metadata, to give it back whole. A message holding a NUL (which the
    service stores in no text), or whose rest is larger than the metadata takes, is kept as its
    JSON; one that JSON text cannot hold exactly (a lone surrogate, NaN) is kept packed
    (``_messages.packed``); each comes back the same."""
    written = message_to_dict(message)
    role, kind = _role_and_type(written)
    whole, must = kept_whole(written, role, kind, packed_key=PACKED, whole_key=WHOLE)
    if must:
        return whole
    content = written["data"].get("content")
    skeleton = copy.deepcopy(written)
    if isinstance(content, str):
        skeleton["data"]["content"] = None  # the message's content holds it
    metadata = {MESSAGE: skeleton}
    if not metadata_fits(metadata):
        return whole
    return {"role": role, "type": kind, "content": _text(content), "metadata": metadata}


def decode_message(message: dict[str, Any]) -> BaseMessage:
    """A message written by ``encode_message``, or by anyone else (the API, another library's
    adapter): a user's, an assistant's or a system message with its text, any other role a
    ``ChatMessage`` of that role."""
    metadata = message.get("metadata") or {}
    if metadata.get(PACKED):
        return messages_from_dict([unpacked(message["content"])])[0]
    if metadata.get(WHOLE):
        return messages_from_dict([json.loads(message["content"])])[0]
    written = metadata.get(MESSAGE)
    if isinstance(written, dict) and isinstance(written.get("data"), dict):
        written = copy.deepcopy(written)
        if written["data"].get("content") is None:
            written["data"]["content"] = message["content"]
        return messages_from_dict([written])[0]
    role = message["role"]
    if role in BY_ROLE:
        return messages_from_dict([{"type": BY_ROLE[role], "data": {"content": message["content"]}}])[0]
    return ChatMessage(role=role, content=message["content"])


class MemoryChatMessageHistory(BaseChatMessageHistory):
    """LangChain's chat message history over a conversation of ``user`` (a service principal's
    key: conversations are written by agent runtimes for their users), found again from any
    process by ``session_id``; sync and async. ``base_url`` and ``token`` as for
    ``memsvc.Client`` (or ``client`` / ``aclient`` given)."""

    def __init__(
        self,
        session_id: str,
        *,
        user: str,
        base_url: str | None = None,
        token: str | None = None,
        client: Client | None = None,
        aclient: AsyncClient | None = None,
        title: str | None = None,
        timeout: float = 30.0,
    ):
        if base_url is None and (client is None or aclient is None):
            raise ValueError("MemoryChatMessageHistory needs the service's base_url (or both clients).")
        self.session_id = checked_session_id(session_id)
        self.user = user
        self.title = title
        self._settings = (base_url or "", token, timeout)
        # Clients given are the giver's (shared by many histories, closed by the giver); one made
        # here is made when first used, and closed by close() / aclose().
        self._given, self._agiven = client, aclient
        self._own: Client | None = None
        self._aown: AsyncClient | None = None
        self._conversation_id: str | None = None

    @classmethod
    def from_env(cls, session_id: str, *, user: str, **kwargs: Any) -> MemoryChatMessageHistory:
        """``MEMSVC_URL`` and ``MEMSVC_TOKEN``, as ``memsvc.Client.from_env``."""
        return cls(session_id, user=user, base_url=os.environ["MEMSVC_URL"], token=os.environ["MEMSVC_TOKEN"], **kwargs)

    @property
    def _client(self) -> Client:
        if self._given is not None:
            return self._given
        if self._own is None:
            base_url, token, timeout = self._settings
            self._own = Client(base_url, token, timeout=timeout)
        return self._own

    @property
    def _aclient(self) -> AsyncClient:
        if self._agiven is not None:
            return self._agiven
        if self._aown is None:
            base_url, token, timeout = self._settings
            self._aown = AsyncClient(base_url, token, timeout=timeout)
        return self._aown

    def close(self) -> None:
        """Close the connections this history opened (not those of a client it was given)."""
        if self._own is not None:
            self._own.close()

    async def aclose(self) -> None:
        if self._aown is not None:
            await self._aown.close()

    # The conversation: made by the first message added, found before (a history nothing was
    # added to answers empty and makes no conversation in the user's list).
    def _made(self) -> str:
        if self._conversation_id is None:
            made = self._client.create_conversation(self.user, external_id=self.session_id, title=self._title())
            self._conversation_id = made["id"]
        return self._conversation_id

    async def _amade(self) -> str:
        if self._conversation_id is None:
            made = await self._aclient.create_conversation(self.user, external_id=self.session_id, title=self._title())
            self._conversation_id = made["id"]
        return self._conversation_id

    def _title(self) -> str:
        return self.title or self.session_id

    def _found(self) -> str | None:
        if self._conversation_id is None:
            self._conversation_id = found_in(
                self._client.list_conversations(**conversation_lookup(self.user, self.session_id))
            )
        return self._conversation_id

    async def _afound(self) -> str | None:
        if self._conversation_id is None:
            self._conversation_id = found_in(
                await self._aclient.list_conversations(**conversation_lookup(self.user, self.session_id))
            )
        return self._conversation_id

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """Every message, oldest first."""
        conversation = self._found()
        if conversation is None:
            return []
        found: list[dict[str, Any]] = []
        page = 1
        while True:
            data = self._client.list_messages(
                conversation, fields="full", ordering="created_at", page=page, page_size=PAGE_SIZE
            )
            found.extend(data["results"])
            if not data.get("next"):
                return [decode_message(message) for message in found]
            page += 1

    async def aget_messages(self) -> list[BaseMessage]:
        conversation = await self._afound()
        if conversation is None:
            return []
        found: list[dict[str, Any]] = []
        page = 1
        while True:
            data = await self._aclient.list_messages(
                conversation, fields="full", ordering="created_at", page=page, page_size=PAGE_SIZE
            )
            found.extend(data["results"])
            if not data.get("next"):
                return [decode_message(message) for message in found]
            page += 1

    def _encoded(self, messages: Sequence[BaseMessage]) -> list[list[dict[str, Any]]]:
        """The calls that write ``messages``, in as few as the service's limits allow (a call
        all or none, and no other writer's messages between its own), or ``ValueError`` before
        anything is written for a message larger than the service keeps."""
        encoded = [encode_message(message) for message in messages]
        refuse_oversize(encoded, "Message")
        return calls_of([{**m, "metadata": m["metadata"] or None} for m in encoded])

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        calls = self._encoded(messages)
        if calls:
            conversation = self._made()
            for call in calls:
                self._client.add_messages(conversation, call)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        calls = self._encoded(messages)
        if calls:
            conversation = await self._amade()
            for call in calls:
                await self._aclient.add_messages(conversation, call)

    def clear(self) -> None:
        """Forget every message: deleted with its index entries."""
        conversation = self._found()
        if conversation is not None:
            self._client.forget_messages(conversation)

    async def aclear(self) -> None:
        conversation = await self._afound()
        if conversation is not None:
            await self._aclient.forget_messages(conversation)
