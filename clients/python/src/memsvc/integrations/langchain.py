"""A LangChain retriever over the memory service (docs/integrations.md, "LangChain").

    retriever = MemoryRetriever.from_env(user="alice", k=5)   # MEMSVC_URL, MEMSVC_TOKEN
    docs = retriever.invoke("what does Alice eat?")           # Documents, best first

It searches one user's own memories (``user``) or one project's (``project``), with the
store's search (docs/integrations.md, "The store"): the ``k`` memories that match best, by
words and meaning, then the newest others.
"""

from __future__ import annotations

import os
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, PrivateAttr

from memsvc.aio import AsyncClient
from memsvc.client import Client

__all__ = ["MemoryRetriever"]

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
