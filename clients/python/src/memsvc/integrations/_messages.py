"""What the adapters that keep a library's chat history as a conversation share
(``openai_agents.MemorySession``, ``langchain.MemoryChatMessageHistory``): the service's limits on
messages, and how a call's messages are cut to them."""

from __future__ import annotations

import base64
import json
from typing import Any

# An item or message is kept as a message: its text is the content, what else it holds goes
# into the message's metadata, and above METADATA_ITEM_BYTES it is kept whole (its JSON) as the
# content instead.
METADATA_ITEM_BYTES = 12 * 1024
# The service's limit on a message's content (docs/API.md): a larger one is refused before any
# message of the same call is written.
MESSAGE_CONTENT_BYTES = 256 * 1024
MESSAGES_AT_ONCE = 100  # messages the service writes in one call (POST …/messages/batch)
CALL_BYTES = 768 * 1024  # a call's JSON, below the service's 1 MiB for a request body


SESSION_ID_CHARS = 200  # a conversation's external_id


def checked_session_id(session_id: Any) -> str:
    """A session's id, which finds its conversation again (``external_id``): a non-empty string
    of at most ``SESSION_ID_CHARS``, else ``ValueError`` (an empty one would find nothing and
    start a new conversation each time)."""
    if not isinstance(session_id, str) or not session_id.strip() or len(session_id) > SESSION_ID_CHARS:
        raise ValueError(f"A session_id is a non-empty string of at most {SESSION_ID_CHARS} characters.")
    return session_id


def exact_json(value: Any) -> str | None:
    """``value``'s JSON (``ensure_ascii=False``: as compact as its text), where JSON text holds it
    exactly and as UTF-8; None where it does not: NaN or an infinity (no JSON value), a lone
    surrogate (no UTF-8; and two adjacent ones, escaped, would read back as one character).
    A NUL is escaped by JSON (``\\u0000``): the service stores no NUL in any text."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")
    except (ValueError, UnicodeEncodeError):
        return None
    return text


def holds_nul(whole: str) -> bool:
    """JSON from ``exact_json`` holds a NUL (``\\u0000``; text that holds those six characters
    is taken for one: it is kept whole all the same)."""
    return "\\u0000" in whole


def packed(value: Any) -> str:
    """``value`` that ``exact_json`` cannot write, as text the service stores: its JSON (NaN and
    lone surrogates as they are) in UTF-8 with surrogates passed, in base64."""
    return base64.b64encode(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")).decode("ascii")


def unpacked(content: str) -> Any:
    return json.loads(base64.b64decode(content).decode("utf-8", "surrogatepass"))


def kept_whole(value: Any, role: str, kind: str, *, packed_key: str, whole_key: str) -> tuple[dict[str, Any], bool]:
    """The message that keeps ``value`` whole (``role``, ``type``): packed where JSON text cannot
    hold it exactly, else its JSON (``whole_key`` in its metadata); and whether it must be kept
    so — packed, or holding a NUL, which the service stores in no text — rather than as its text
    with the rest in metadata."""
    whole = exact_json(value)
    if whole is None:
        return {"role": role, "type": kind, "content": packed(value), "metadata": {packed_key: True}}, True
    return {"role": role, "type": kind, "content": whole, "metadata": {whole_key: True}}, holds_nul(whole)


def metadata_fits(metadata: dict[str, Any]) -> bool:
    """The rest of an item or message fits the metadata (``METADATA_ITEM_BYTES``)."""
    return len(json.dumps(metadata, ensure_ascii=False).encode()) <= METADATA_ITEM_BYTES


def conversation_lookup(user: str, session_id: str) -> dict[str, Any]:
    """The ``list_conversations`` arguments that find a session's conversation without making
    one (reads of a session nothing was added to leave no empty conversation in the list)."""
    return {"user": user, "external_id": session_id, "page_size": 1}


def found_in(page: dict[str, Any]) -> str | None:
    """The conversation id in a ``list_conversations`` page of ``conversation_lookup``, if any."""
    return page["results"][0]["id"] if page["results"] else None


def refuse_oversize(messages: list[dict[str, Any]], what: str) -> None:
    """``ValueError`` before anything is written when one of ``messages`` (``what``: "Item",
    "Message") is more content than the service keeps in a message: its text, or the whole of
    it where it is kept whole."""
    for n, message in enumerate(messages):
        size = len(message["content"].encode())
        if size > MESSAGE_CONTENT_BYTES:
            raise ValueError(
                f"{what} {n} of {len(messages)} is {size} bytes as a message's content; the service keeps "
                f"at most {MESSAGE_CONTENT_BYTES}. Nothing of this call was stored."
            )


def calls_of(messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The messages in order, cut into calls of at most ``MESSAGES_AT_ONCE`` and about
    ``CALL_BYTES`` of JSON as it is sent (ASCII, as httpx writes it); one larger message is a
    call of its own."""
    calls: list[list[dict[str, Any]]] = []
    size = 0
    for message in messages:
        n = len(json.dumps(message))
        if not calls or len(calls[-1]) == MESSAGES_AT_ONCE or size + n > CALL_BYTES:
            calls.append([])
            size = 0
        calls[-1].append(message)
        size += n
    return calls
