"""Session keys and chat addresses (docs/scoped-memory.md).

A session key is ``platform:target_type:target_id[:lane_type:lane_id…]``, e.g.
``milky:private:10001`` or ``milky:private:10001:cron:abc``. The first three parts are the
chat address; what follows names lanes (cron job, sub-session) inside that chat, always as
``lane_type:lane_id`` pairs. A legacy key (``milky:10001``, ``milky:10001:cron:abc``) has no
target type: it is *untyped* and belongs to no chat.

Parsing is strict: a malformed key is an error, never silently treated as legacy, so a
caller can never turn a typo into a write to the shared global scope: an odd number of lane
parts (``milky:privat:10001``, ``telegram:user:5``) or a target type in the wrong letter case
(``milky:Private:10001``) is refused.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass

from config.errors import InvalidInput
from identity_app.errors import ErrorCode

MAX_SESSION_KEY_LENGTH = 200
TARGET_TYPES = frozenset({"private", "group", "channel", "guild", "thread", "dm"})
UNKNOWN_TARGET_TYPE = "unknown"

_PLATFORM = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
_SEGMENT = re.compile(r"^[A-Za-z0-9_.@+=-]{1,100}$")


# The rules of ``SessionKey.parse`` and ``ChatAddress.parse`` as regular expressions (valid in
# ECMAScript and Python) for the API schema: a typed key, or a legacy key whose second part is
# no target type in any letter case; lanes in pairs.
_PLATFORM_RE, _SEGMENT_RE = _PLATFORM.pattern[1:-1], _SEGMENT.pattern[1:-1]


def chat_key_pattern(target_types: Iterable[str] = TARGET_TYPES) -> str:
    """A chat key (no lanes) whose target type is one of ``target_types``."""
    return rf"^{_PLATFORM_RE}:(?:{'|'.join(sorted(target_types))}):{_SEGMENT_RE}$"


def _session_key_pattern() -> str:
    typed = "|".join(sorted(TARGET_TYPES))
    any_case = "|".join("".join(f"[{c}{c.upper()}]" for c in name) for name in sorted(TARGET_TYPES))
    legacy = rf"(?!(?:{any_case})(?::|$)){_SEGMENT_RE}"
    return rf"^{_PLATFORM_RE}:(?:(?:{typed}):{_SEGMENT_RE}|{legacy})(?::{_SEGMENT_RE}:{_SEGMENT_RE})*$"


SESSION_KEY_PATTERN = _session_key_pattern()


class InvalidSessionKey(InvalidInput):
    code = ErrorCode.INVALID_SESSION_KEY


@dataclass(frozen=True)
class ChatAddress:
    platform: str
    target_type: str  # one of TARGET_TYPES, or "unknown" for legacy keys
    target_id: str

    @property
    def is_typed(self) -> bool:
        return self.target_type in TARGET_TYPES

    @property
    def chat_key(self) -> str:
        if not self.is_typed:
            raise InvalidSessionKey("A legacy address has no chat key.")
        return f"{self.platform}:{self.target_type}:{self.target_id}"

    @classmethod
    def parse(cls, value: object) -> "ChatAddress":
        """Parse a chat key (exactly three parts, typed)."""
        key = SessionKey.parse(value)
        if not key.address.is_typed or key.lanes:
            raise InvalidSessionKey(f"{value!r} is not a chat key (platform:target_type:target_id).")
        return key.address


@dataclass(frozen=True)
class SessionKey:
    raw: str
    address: ChatAddress
    lanes: tuple[str, ...] = ()

    @classmethod
    def parse(cls, value: object) -> "SessionKey":
        if not isinstance(value, str):
            raise InvalidSessionKey("A session key must be a string.")
        if not value or len(value) > MAX_SESSION_KEY_LENGTH or value != value.strip():
            raise InvalidSessionKey(
                f"A session key must be 1–{MAX_SESSION_KEY_LENGTH} characters without surrounding spaces."
            )
        parts = value.split(":")
        if len(parts) < 2:
            raise InvalidSessionKey(f"{value!r} is not a session key (platform:target_type:target_id).")
        platform = parts[0]
        if not _PLATFORM.match(platform):
            raise InvalidSessionKey(f"{value!r}: invalid platform {platform!r}.")
        for part in parts[1:]:
            if not _SEGMENT.match(part):
                raise InvalidSessionKey(f"{value!r}: empty or invalid segment {part!r}.")
        if parts[1] in TARGET_TYPES:
            if len(parts) < 3:
                raise InvalidSessionKey(f"{value!r}: target type {parts[1]!r} without a target id.")
            address = ChatAddress(platform, parts[1], parts[2])
            lanes = tuple(parts[3:])
        elif parts[1].lower() in TARGET_TYPES:
            # ``milky:Private:10001`` is a typo of a typed key, not a legacy one.
            raise InvalidSessionKey(f"{value!r}: target type {parts[1]!r} must be written {parts[1].lower()!r}.")
        else:
            # Legacy ``platform:target_id[:lanes…]``: the target type is unknown.
            address = ChatAddress(platform, UNKNOWN_TARGET_TYPE, parts[1])
            lanes = tuple(parts[2:])
        if len(lanes) % 2:
            # Lanes come in (type, id) pairs; an odd tail means a mistyped or unknown target
            # type (``milky:privat:10001``, ``telegram:user:5``), never a legacy key.
            raise InvalidSessionKey(
                f"{value!r}: unknown target type or incomplete lane (lanes are lane_type:lane_id pairs)."
            )
        return cls(raw=value, address=address, lanes=lanes)
