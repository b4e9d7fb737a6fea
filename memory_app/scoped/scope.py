"""Chat/global scope rules (docs/scoped-memory.md): the one place that decides where a scoped item lives.

- A typed session (``milky:private:10001[:lane…]``) has the chat scope of its address;
  an untyped legacy session (``milky:10001``) only has the global scope.
- The kind decides which of the two a new item belongs to: personal kinds to the chat, the
  rest (shared knowledge) to global. A legacy session writes everything to global.
- Consent (``chat_write_placement``): what a typed chat says is shared with everyone only after
  review. An item of a global kind learned in a typed chat is written to that chat, pending,
  until an operator approves its candidate — unless the deployment sets
  ``MEMORY_CHAT_TO_GLOBAL=direct`` (the original routing: straight to global).
"""

from dataclasses import dataclass

from django.conf import settings

from identity_app.session_keys import ChatAddress, SessionKey
from memory_app.memories.models import GLOBAL_SCOPE_ID, Tier

SCOPE_TYPE_GLOBAL = Tier.GLOBAL.value
SCOPE_TYPE_CHAT = Tier.CHAT.value

CHAT_SCOPED_KINDS = frozenset({"preference", "fact", "task"})

GLOBAL_SCOPE = (SCOPE_TYPE_GLOBAL, GLOBAL_SCOPE_ID)

# Top-level evidence/metadata keys that scope migration reads as clues to an item's chat
# (docs/scoped-memory.md, scope migration runbook). Only the system sets them (``source_session_id`` = the real session);
# a caller or an extractor may never supply them.
SESSION_CLUE_KEYS = ("session_id", "source_session_id", "created_from_session_id", "requester_session_id")
ADDRESS_CLUE_KEYS = (
    "chat_address",
    "source_chat_address",
    "created_from_chat_address",
    "target_chat_address",
    "from_chat_address",
)
MESSAGE_CONTEXT_KEY = "message_context"
SCOPE_CLUE_KEYS = frozenset({*SESSION_CLUE_KEYS, *ADDRESS_CLUE_KEYS, MESSAGE_CONTEXT_KEY})


def chat_scope_id(address: ChatAddress) -> str:
    return address.chat_key


def resolve_scope_from_session(session_id: str) -> tuple[str, str]:
    """(scope_type, scope_id) of a session. Raises InvalidSessionKey for malformed keys."""
    key = SessionKey.parse(session_id)
    if key.address.is_typed:
        return SCOPE_TYPE_CHAT, chat_scope_id(key.address)
    return GLOBAL_SCOPE


def scope_for_kind(kind: str) -> str:
    return SCOPE_TYPE_CHAT if kind in CHAT_SCOPED_KINDS else SCOPE_TYPE_GLOBAL


def write_scope(*, session_id: str, kind: str) -> tuple[str, str]:
    """Where an item of ``kind`` learned in ``session_id`` is written."""
    session_scope = resolve_scope_from_session(session_id)
    if scope_for_kind(kind) == SCOPE_TYPE_CHAT and session_scope[0] == SCOPE_TYPE_CHAT:
        return session_scope
    return GLOBAL_SCOPE


def cascade_scopes(session_id: str) -> list[tuple[str, str]]:
    """Scopes searched for a session, in priority order: own chat first, then global."""
    session_scope = resolve_scope_from_session(session_id)
    if session_scope[0] == SCOPE_TYPE_CHAT:
        return [session_scope, GLOBAL_SCOPE]
    return [GLOBAL_SCOPE]


CHAT_TO_GLOBAL_DIRECT = "direct"


def chat_to_global_needs_review() -> bool:
    return settings.MEMORY_CHAT_TO_GLOBAL != CHAT_TO_GLOBAL_DIRECT


@dataclass(frozen=True)
class Placement:
    """Where an item learned in a session is written now (``scope``), where its kind says it
    belongs (``target``), and the typed chat it was learned in (``source_chat_key``, empty for a
    legacy session). ``pending``: written to its chat, to be shared with everyone on approval."""

    scope: tuple[str, str]
    target: tuple[str, str]
    source_chat_key: str

    @property
    def pending(self) -> bool:
        return self.scope != self.target


def chat_write_placement(*, session_id: str, kind: str, reviewed: bool = False) -> Placement:
    """The placement of an item of ``kind`` learned in ``session_id``. ``reviewed``: an operator
    has approved it (the admin's review is the consent)."""
    target = write_scope(session_id=session_id, kind=kind)
    session_scope = resolve_scope_from_session(session_id)
    chat_key = session_scope[1] if session_scope[0] == SCOPE_TYPE_CHAT else ""
    if target[0] == SCOPE_TYPE_GLOBAL and chat_key and not reviewed and chat_to_global_needs_review():
        return Placement(scope=session_scope, target=target, source_chat_key=chat_key)
    return Placement(scope=target, target=target, source_chat_key=chat_key)
