"""LangGraph's ``BaseStore`` over the memory service (docs/integrations.md, "LangGraph").

A namespace names where its memories live: ``("users", <username>, …)`` that user's own
memories, ``("projects", <project id>, …)`` a project's, ``("chats", <chat key>, …)`` a chat's
items; the labels after those two are kept with each item. A value is a dict whose ``"content"``
(a string) is the memory and whose optional ``"kind"`` its kind; its other fields come back as
given. The operations of a ``batch`` go in one request and one transaction (a batch of more
than ``MAX_OPS``: in requests of that many, in order).

    store = MemoryStore.from_env()            # MEMSVC_URL, MEMSVC_TOKEN
    store.put(("users", "alice", "prefs"), "food", {"content": "Alice likes pizza"})
    store.search(("users", "alice"), query="what does she eat?")
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base.embed import get_text_at_path

from memsvc.aio import AsyncClient
from memsvc.client import Client
from memsvc.errors import ValidationError

__all__ = ["MemoryStore"]

# Operations the service takes in one request (and one transaction); a longer batch goes in
# requests of this many, in order.
MAX_OPS = 100


class MemoryStore(BaseStore):
    """A LangGraph store whose items are memories of the service, under its rules: a namespace
    out of the key's reach is answered as one that does not exist (``memsvc.NotFound``), a
    value the service refuses raises ``memsvc.ValidationError``; ``ttl`` (minutes) sets when
    an item expires, and reads refresh it (``ttl={"refresh_on_read": False}`` to not)."""

    supports_ttl = True

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        *,
        client: Client | None = None,
        aclient: AsyncClient | None = None,
        ttl: TTLConfig | None = None,
        index: list[str] | dict[str, Any] | None = None,
        timeout: float = 30.0,
    ):
        if client is None and base_url is None:
            raise ValueError("MemoryStore needs the service's base_url (or a client).")
        self._client = client or Client(base_url or "", token, timeout=timeout)
        self._aclient = aclient or AsyncClient(self._client.base_url, self._client.token, timeout=timeout)
        self.ttl_config = ttl
        # The fields a value without a "content" string is found by (LangGraph's IndexConfig
        # "fields", e.g. ["text", "items[*].title"]); None: all of its fields. A whole IndexConfig
        # ({"dims", "embed", "fields"}) is taken for its fields: the service embeds with its own
        # model, so "dims" and "embed" have nothing to do here.
        if isinstance(index, dict):
            index = index.get("fields")
        if index is not None and (isinstance(index, str) or not all(isinstance(path, str) for path in index)):
            raise TypeError('index is a list of field paths (e.g. ["text"]) or a LangGraph IndexConfig.')
        self.index_fields = list(index) if index is not None else None

    @classmethod
    def from_env(cls, **kwargs: Any) -> MemoryStore:
        """``MEMSVC_URL`` and ``MEMSVC_TOKEN``, as ``memsvc.Client.from_env``."""
        return cls(os.environ["MEMSVC_URL"], os.environ["MEMSVC_TOKEN"], **kwargs)

    def close(self) -> None:
        self._client.close()

    async def aclose(self) -> None:
        await self._aclient.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the two methods every other one calls ------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        encoded = [_encode(op, self.index_fields) for op in ops]
        sent = [request for request in encoded if request is not None]
        results: list[Any] = []
        try:
            for start in range(0, len(sent), MAX_OPS):
                results += self._client.store_batch(sent[start : start + MAX_OPS])
        except ValidationError as error:
            raise _namespace_error(error) from error
        return _decoded(ops, encoded, results)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        encoded = [_encode(op, self.index_fields) for op in ops]
        sent = [request for request in encoded if request is not None]
        results: list[Any] = []
        try:
            for start in range(0, len(sent), MAX_OPS):
                results += await self._aclient.store_batch(sent[start : start + MAX_OPS])
        except ValidationError as error:
            raise _namespace_error(error) from error
        return _decoded(ops, encoded, results)


def _namespace_error(error: ValidationError) -> Exception:
    """A namespace the service cannot take is LangGraph's ``InvalidNamespaceError`` (still a
    ``ValueError``); any other refusal stays the client's ``ValidationError``."""
    if error.code == "invalid_namespace":
        return InvalidNamespaceError(error.message)
    return error


def _labels(namespace: tuple[str, ...]) -> list[str]:
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label or not _text_ok(label):
            raise InvalidNamespaceError(f"Invalid namespace label {label!r} in {namespace!r}.")
    return list(namespace)


def _text_ok(label: str) -> bool:
    """Text that can be sent at all (a lone surrogate has no UTF-8 form)."""
    try:
        label.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _text(value: dict[str, Any], index: list[str] | None) -> str | None:
    """What a value without a ``content`` string is found by: the fields ``index`` names, as
    LangGraph reads a path (``"a.b"``, ``"items[*].text"``); else the service's default."""
    if not index:
        return None
    texts = [text for path in index for text in get_text_at_path(value, path)]
    return "\n".join(texts) or None


def _encode(op: Op, index_fields: list[str] | None = None) -> dict[str, Any] | None:
    if isinstance(op, GetOp):
        return {"op": "get", "namespace": _labels(op.namespace), "key": str(op.key), "refresh_ttl": op.refresh_ttl}
    if isinstance(op, PutOp):
        encoded: dict[str, Any] = {"op": "put", "namespace": _labels(op.namespace), "key": str(op.key)}
        if op.value is None:
            encoded["value"] = None
            return encoded
        value = dict(op.value)
        encoded["value"] = value
        if op.ttl is not None:
            encoded["ttl"] = op.ttl
        if op.index is False:
            encoded["index"] = False
        elif not isinstance(value.get("content"), str):
            text = _text(value, op.index if isinstance(op.index, list) else index_fields)
            if text:
                encoded["text"] = text
        return encoded
    if isinstance(op, SearchOp):
        return {
            "op": "search",
            "namespace_prefix": _labels(op.namespace_prefix),
            "query": op.query,
            "filter": op.filter,
            "limit": op.limit,
            "offset": op.offset,
            "refresh_ttl": op.refresh_ttl,
        }
    if isinstance(op, ListNamespacesOp):
        encoded = {"op": "list_namespaces", "limit": op.limit, "offset": op.offset}
        if op.max_depth is not None:
            encoded["max_depth"] = op.max_depth
        conditions = op.match_conditions or ()
        for condition in conditions:
            if condition.match_type not in ("prefix", "suffix"):
                raise ValueError(f"Unsupported match type: {condition.match_type}")
        for name in ("prefix", "suffix"):
            paths = [_labels(tuple(c.path)) for c in conditions if c.match_type == name]
            if not paths:
                continue
            merged = _all_of(paths, from_end=name == "suffix")
            if merged is None:
                return None
            encoded[name] = merged
        return encoded
    raise ValueError(f"Unknown operation {op!r}.")


def _all_of(paths: list[list[str]], *, from_end: bool) -> list[str] | None:
    """One path a namespace matches exactly when it matches every one of ``paths`` (prefixes,
    or suffixes read from the end; ``"*"`` is any one label): at each place the label they name,
    ``"*"`` where none does. None when two name different labels at one place: nothing matches."""
    merged: list[str] = []
    for path in paths:
        for place, label in enumerate(reversed(path) if from_end else path):
            if place == len(merged):
                merged.append(label)
            elif merged[place] == "*":
                merged[place] = label
            elif label not in ("*", merged[place]):
                return None
    return merged[::-1] if from_end else merged


def _item(data: dict[str, Any], *, search: bool) -> Item:
    fields = {
        "namespace": tuple(data["namespace"]),
        "key": data["key"],
        "value": data["value"],
        "created_at": datetime.fromisoformat(data["created_at"]),
        "updated_at": datetime.fromisoformat(data["updated_at"]),
    }
    if search:
        return SearchItem(score=data.get("score"), **fields)
    return Item(**fields)


def _decoded(ops: list[Op], encoded: list[dict[str, Any] | None], results: list[Any]) -> list[Result]:
    """Each operation's answer: the service's, in order, and [] for a listing nothing can match
    (its conditions disagree), which was not sent."""
    if len(results) != sum(request is not None for request in encoded):
        raise RuntimeError("The service answered another number of operations than were sent.")
    answers = iter(results)
    return [[] if request is None else _decode(op, next(answers)) for op, request in zip(ops, encoded, strict=True)]


def _decode(op: Op, result: Any) -> Result:
    if isinstance(op, GetOp):
        return None if result is None else _item(result, search=False)
    if isinstance(op, SearchOp):
        return [_item(found, search=True) for found in result]
    if isinstance(op, ListNamespacesOp):
        return [tuple(namespace) for namespace in result]
    return None
