"""Creating a tiered memory (user, project, chat, global)."""

from collections.abc import Callable
from datetime import datetime

from django.db import transaction

from identity_app.models import User
from memory_app.memories import derived
from memory_app.memories.models import (
    Memory,
    Origin,
    Tier,
)
from memory_app.memories.services.rules import (
    scope_for_create,
    validate_new,
    validate_paused,
)


def memory_create(
    *,
    actor: User,
    tier: str,
    kind: str,
    content: str,
    project_id: str | None = None,
    scope_id: str | None = None,
    origin: str = Origin.API,
    metadata: dict | None = None,
    evidence: dict | None = None,
    source_thread_id: str = "",
    expires_at: datetime | str | None = None,
    source_chat_key: str = "",
    for_user: User | None = None,
    content_guard: Callable[[str], None] | None = None,
    paused: bool = False,
) -> Memory:
    """``source_chat_key``: the typed chat a chat/global item was learned in (only the scoped
    services set it, from the session key). ``for_user``: a user-tier memory of that user
    rather than of ``actor`` (``may_act_for_user``: a service principal acting for them).
    ``content_guard(content)`` may refuse the text (an adapter's secret guard) before anything
    is written. ``paused``: written paused (an import of a paused item), used by no agent until
    resumed."""
    content, kind, expires_at, metadata, evidence = validate_new(
        content=content,
        kind=kind,
        tier=tier,
        expires_at=expires_at,
        metadata=metadata,
        evidence=evidence,
        origin=origin,
        content_guard=content_guard,
    )
    paused = validate_paused(paused)
    with transaction.atomic():
        scope = scope_for_create(actor=actor, tier=tier, project_id=project_id, scope_id=scope_id, for_user=for_user)
        memory = Memory(
            scope_type=tier,
            kind=kind,
            content=content,
            origin=origin,
            metadata=metadata,
            evidence=evidence,
            source_thread_id=(source_thread_id or "")[:64],
            source_chat_key=source_chat_key if tier in (Tier.CHAT, Tier.GLOBAL) else "",
            created_by=actor if actor and actor.is_authenticated else None,
            expires_at=expires_at,
            paused=paused,
            **scope,
        )
        memory.save(force_insert=True)
        derived.on_memories_written(created=[memory])
    return memory
