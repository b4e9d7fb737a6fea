"""Every write to tiered memories goes through these functions, one operation per module:
``create``, ``supersede``, ``change`` (in place), ``forget`` (and purge, archive), ``move``
(scope migration), ``keyed`` (the store), and the rules they all check (``rules``). Callers
import from here."""

from memory_app.memories.services.change import (
    EXPIRY_CHANGE_COALESCE,
    NOT_GIVEN,
    NotGiven,
    memory_change,
)
from memory_app.memories.services.create import (
    memory_create,
)
from memory_app.memories.services.forget import (
    MAX_FORGET_MANY,
    PURGE_BATCH,
    memories_purge_expired,
    memory_archive,
    memory_forget,
    memory_forget_many,
)
from memory_app.memories.services.keyed import (
    KEYED_ATTEMPTS,
    KEYED_CREATED,
    KEYED_REFRESHED,
    KEYED_REPLACED,
    KEYED_UNCHANGED,
    KeyedWrite,
    memories_expiry_extend,
    memory_put_keyed,
)
from memory_app.memories.services.move import (
    memory_rescope,
)
from memory_app.memories.services.rules import (
    BOUND_USER_CHAT_ACTIONS,
    IN_PLACE,
    KEEP_EXPIRY,
    MAX_JSON_BYTES,
    forgets_as_source_chat_user,
    locked_memory,
    older_versions_q,
    require_write,
    scope_for_create,
    scope_require_write,
    staff_may_review_memories,
    validate_content,
    validate_expires_at,
    validate_kind,
    validate_paused,
    with_older_versions,
)
from memory_app.memories.services.supersede import (
    memory_supersede,
    supersede_locked,
)

__all__ = [
    "BOUND_USER_CHAT_ACTIONS",
    "EXPIRY_CHANGE_COALESCE",
    "IN_PLACE",
    "KEEP_EXPIRY",
    "KEYED_ATTEMPTS",
    "KEYED_CREATED",
    "KEYED_REFRESHED",
    "KEYED_REPLACED",
    "KEYED_UNCHANGED",
    "MAX_FORGET_MANY",
    "MAX_JSON_BYTES",
    "NOT_GIVEN",
    "PURGE_BATCH",
    "KeyedWrite",
    "NotGiven",
    "forgets_as_source_chat_user",
    "locked_memory",
    "memories_expiry_extend",
    "memories_purge_expired",
    "memory_archive",
    "memory_change",
    "memory_create",
    "memory_forget",
    "memory_forget_many",
    "memory_put_keyed",
    "memory_rescope",
    "memory_supersede",
    "older_versions_q",
    "require_write",
    "scope_for_create",
    "scope_require_write",
    "staff_may_review_memories",
    "supersede_locked",
    "validate_content",
    "validate_expires_at",
    "validate_kind",
    "validate_paused",
    "with_older_versions",
]
