"""Moving a chat or global memory to the other of those tiers (scope migration)."""

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from config.errors import Conflict, InvalidInput
from identity_app.models import User
from memory_app.memories import derived
from memory_app.memories.errors import ErrorCode
from memory_app.memories.models import (
    GLOBAL_SCOPE_ID,
    Memory,
    Tier,
)
from memory_app.memories.services.rules import (
    locked_memory,
    require_write,
    with_older_versions,
)


def memory_rescope(*, actor: User, memory_id: str, from_scope: tuple[str, str], to_scope: tuple[str, str]) -> Memory:
    """Move a chat/global memory between those two tiers (scope migration, docs/scoped-memory.md).

    The caller locks and checks the row first; this re-checks ``from_scope`` under the lock
    so a row changed since then is a Conflict, never a silent move.
    """
    if from_scope[0] not in (Tier.CHAT, Tier.GLOBAL) or to_scope[0] not in (Tier.CHAT, Tier.GLOBAL):
        raise InvalidInput("Only chat and global memories can change scope.", code=ErrorCode.INVALID_SCOPE)
    if to_scope[0] == Tier.CHAT and (not to_scope[1] or to_scope[1] == GLOBAL_SCOPE_ID):
        raise InvalidInput("A chat memory needs a chat key.", code=ErrorCode.INVALID_SCOPE)
    if to_scope[0] == Tier.GLOBAL and to_scope[1] != GLOBAL_SCOPE_ID:
        raise InvalidInput("The global scope id is __global__.", code=ErrorCode.INVALID_SCOPE)
    with transaction.atomic():
        memory = locked_memory(memory_id=memory_id, tier=None, project_id=None)
        require_write(actor=actor, memory=memory)
        if (memory.scope_type, memory.scope_id) != tuple(from_scope):
            raise Conflict("Memory changed scope concurrently.", code=ErrorCode.STALE)
        # Older versions move along, so the supersede chain (and forgetting it) stays whole.
        moving = with_older_versions([memory.pk], within=Q(scope_type=from_scope[0], scope_id=from_scope[1]))
        Memory.objects.filter(pk__in=moving).update(
            scope_type=to_scope[0], scope_id=to_scope[1], updated_at=timezone.now()
        )
        derived.on_memories_written(created=[], changed=moving)
        memory.refresh_from_db()
    return memory
