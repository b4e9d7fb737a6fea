"""One item of the home, of any source: correct (supersede), change in place, forget; the
tier's write rule decides."""

from identity_app.models import User
from memory_app.home.sources import (
    home_item_get,
)
from memory_app.memories import services as memory_services
from memory_app.memories.models import (
    Memory,
    Origin,
)


def home_item_correct(
    *,
    actor: User,
    memory_id: str,
    content: str,
    kind: str | None = None,
    origin: str = Origin.API,
    expires_at=memory_services.KEEP_EXPIRY,
) -> Memory:
    """Correct (supersede) an item of the home: the tier's write rule decides (a project
    viewer gets 403; a chat item may be corrected by the user the chat is bound to).
    ``expires_at``: the new version's expiry (default: the old one's)."""
    memory = home_item_get(user=actor, memory_id=memory_id)
    return memory_services.memory_supersede(
        actor=actor,
        memory_id=memory.pk,
        tier=memory.scope_type,
        content=content,
        kind=kind,
        origin=origin,
        expires_at=expires_at,
    )


def home_item_change(*, actor: User, memory_id: str, **changes) -> Memory:
    """Change an item of the home in place (``expires_at``, ``paused``: ``memory_change``); the
    tier's write rule decides, as for correcting it (an item shared with everyone from the
    user's chat is theirs to forget, not to pause: 403)."""
    memory = home_item_get(user=actor, memory_id=memory_id)
    return memory_services.memory_change(actor=actor, memory_id=memory.pk, tier=memory.scope_type, **changes)


def home_item_forget(*, actor: User, memory_id: str) -> list[str]:
    memory = home_item_get(user=actor, memory_id=memory_id)
    return memory_services.memory_forget(actor=actor, memory_id=memory.pk, tier=memory.scope_type)
