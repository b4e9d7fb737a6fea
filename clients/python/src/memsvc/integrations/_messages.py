"""What the adapters that keep a library's chat history as a conversation share
(``openai_agents.MemorySession``, ``langchain.MemoryChatMessageHistory``): the service's limits on
messages, and how a call's messages are cut to them."""

from __future__ import annotations

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


def checked_session_id(session_id: Any) -> str:
    """A session's id, which finds its conversation again (``external_id``): a non-empty string,
    else ``ValueError`` (an empty one would find nothing and start a new conversation each time)."""
    if not isinstance(session_id, str) or not session_id.strip():
        raise ValueError("A session_id is a non-empty string.")
    return session_id


def storable(whole: str) -> bool:
    """Whether JSON (``ensure_ascii=False``) holds only text the service stores as it is: no NUL
    character (JSON writes it ``\\u0000``; a text that holds those six characters is taken for
    one, and kept whole all the same) and no lone surrogate."""
    if "\\u0000" in whole:
        return False
    try:
        whole.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def refuse_oversize(messages: list[dict[str, Any]], what: str) -> None:
    """``ValueError`` before anything is written when one of ``messages`` (``what``: "Item",
    "Message") has more text than the service keeps in a message."""
    for n, message in enumerate(messages):
        size = len(message["content"].encode())
        if size > MESSAGE_CONTENT_BYTES:
            raise ValueError(
                f"{what} {n} of {len(messages)} is {size} bytes of text; the service keeps at most "
                f"{MESSAGE_CONTENT_BYTES} a message. Nothing of this call was stored."
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
