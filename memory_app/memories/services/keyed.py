"""The store: memories addressed by namespace and key (docs/integrations.md)."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from config.errors import Conflict, NotFound, PermissionDenied
from identity_app.models import User
from memory_app.memories import derived
from memory_app.memories.errors import ErrorCode
from memory_app.memories.keys import STORE_EVIDENCE, store_namespace_encode, validate_store_key
from memory_app.memories.models import (
    Memory,
    Origin,
    Status,
)
from memory_app.memories.services.rules import (
    require_write,
    scope_for_create,
    validate_new,
    with_older_versions,
)
from memory_app.memories.services.supersede import supersede_locked

KEYED_CREATED, KEYED_REPLACED, KEYED_UNCHANGED, KEYED_REFRESHED = "created", "replaced", "unchanged", "refreshed"
KEYED_ATTEMPTS = 20


@dataclass(frozen=True)
class KeyedWrite:
    memory: Memory
    outcome: str  # KEYED_CREATED, KEYED_REPLACED, KEYED_UNCHANGED or KEYED_REFRESHED


def _store_evidence(evidence: dict, *, first: Memory | None) -> dict:
    """What a keyed version records of its key: when the key was first written (its first
    version's time, carried from version to version)."""
    kept = dict(evidence.get(STORE_EVIDENCE) or {}) if isinstance(evidence.get(STORE_EVIDENCE), dict) else {}
    if first is not None:
        previous = first.evidence.get(STORE_EVIDENCE) if isinstance(first.evidence, dict) else None
        since = previous.get("created_at") if isinstance(previous, dict) else None
        kept["created_at"] = since if isinstance(since, str) else first.created_at.isoformat()
    return {**evidence, STORE_EVIDENCE: kept} if kept else evidence


def _without_since(evidence) -> object:
    """Evidence without the key's first write time, which ``_store_evidence`` carries along."""
    if not isinstance(evidence, dict) or not isinstance(evidence.get(STORE_EVIDENCE), dict):
        return evidence
    store = {name: value for name, value in evidence[STORE_EVIDENCE].items() if name != "created_at"}
    return {**evidence, STORE_EVIDENCE: store}


def memory_put_keyed(
    *,
    actor: User,
    tier: str,
    namespace: Sequence[str],
    key: str,
    content: str,
    kind: str,
    metadata: dict | None = None,
    evidence: dict | None = None,
    expires_at: datetime | str | None = None,
    project_id: str | None = None,
    scope_id: str | None = None,
    for_user: User | None = None,
    origin: str = Origin.API,
    content_guard: Callable[[str], None] | None = None,
    adopt_id: str | None = None,
) -> KeyedWrite:
    """Write the memory a scope holds under ``namespace`` and ``key``: created when the key is
    new (or its memory has expired: that one is forgotten first), a correction (a new version,
    the key kept) when its content, kind or metadata changes, its expiry set in place when only
    that changes, nothing when nothing does. The create and write rules are those of
    ``memory_create`` and ``memory_supersede``. Two writers of one new key make one memory: the
    key's unique constraint refuses the second insert, which then corrects the first.
    ``adopt_id``: when the key is new, a memory of the scope written without a key (addressed by
    its id until now) is the one corrected, and its new version takes the key."""
    encoded = store_namespace_encode(namespace)
    key = validate_store_key(key)
    content, kind, expiry, metadata, evidence = validate_new(
        content=content,
        kind=kind,
        tier=tier,
        expires_at=expires_at,
        metadata=metadata,
        evidence=evidence,
        origin=origin,
        content_guard=content_guard,
    )
    # Each refused insert means another writer of the key committed first: take turns until
    # this write lands on the version they left (bounded; one writer commits per round).
    for attempt in range(1, KEYED_ATTEMPTS + 1):
        try:
            with transaction.atomic():
                return _put_keyed_locked(
                    actor=actor,
                    tier=tier,
                    encoded=encoded,
                    key=key,
                    values={"content": content, "kind": kind, "metadata": metadata, "expires_at": expiry},
                    evidence=evidence,
                    origin=origin,
                    scope=scope_for_create(
                        actor=actor, tier=tier, project_id=project_id, scope_id=scope_id, for_user=for_user
                    ),
                    for_user=for_user,
                    adopt_id=adopt_id,
                )
        except IntegrityError:
            if attempt == KEYED_ATTEMPTS:
                raise Conflict("The key was written concurrently; try again.", code=ErrorCode.CONFLICT) from None
    raise AssertionError("unreachable")


def _put_keyed_locked(
    *,
    actor: User,
    tier: str,
    encoded: str,
    key: str,
    values: dict,
    evidence: dict,
    origin: str,
    scope: dict,
    for_user: User | None,
    adopt_id: str | None,
) -> KeyedWrite:
    in_scope = Q(scope_type=tier, scope_id=scope["scope_id"])
    existing = (
        Memory.objects.select_for_update()
        .filter(in_scope, store_namespace=encoded, store_key=key, status=Status.ACTIVE)
        .first()
    )
    if existing is None and adopt_id:
        existing = (
            Memory.objects.select_for_update()
            .filter(in_scope, pk=adopt_id, store_namespace="", store_key="", status=Status.ACTIVE)
            .first()
        )
    now = timezone.now()
    if existing is not None and existing.is_expired(now):
        # An expired key is gone for its reader: the new write starts it again.
        require_write(actor=actor, memory=existing, action="forget", for_user=for_user)
        doomed = with_older_versions([existing.pk], within=in_scope)
        derived.on_memories_deleted(doomed)
        Memory.objects.filter(pk__in=doomed).delete()
        existing = None
    if existing is None:
        memory = Memory(
            scope_type=tier,
            origin=origin,
            evidence=_store_evidence(evidence, first=None),
            created_by=actor if actor and actor.is_authenticated else None,
            store_namespace=encoded,
            store_key=key,
            **values,
            **scope,
        )
        memory.save(force_insert=True)
        derived.on_memories_written(created=[memory])
        return KeyedWrite(memory=memory, outcome=KEYED_CREATED)
    require_write(actor=actor, memory=existing, action="supersede", for_user=for_user)
    same = all(getattr(existing, name) == values[name] for name in ("content", "kind", "metadata"))
    kept = _store_evidence(evidence, first=existing)
    same_evidence = _without_since(existing.evidence) == _without_since(kept)
    if same and same_evidence and existing.expires_at == values["expires_at"]:
        return KeyedWrite(memory=existing, outcome=KEYED_UNCHANGED)
    if same:
        # Only the expiry or what the store keeps of the key moved (a time to live, or whether
        # the value held a kind or is indexed, written again): the same version, in place.
        # An adopted memory (written without a key, put to by its id) takes the key here too.
        Memory.objects.filter(pk=existing.pk).update(
            expires_at=values["expires_at"], evidence=kept, updated_at=now, store_namespace=encoded, store_key=key
        )
        existing.expires_at, existing.evidence, existing.updated_at = values["expires_at"], kept, now
        existing.store_namespace, existing.store_key = encoded, key
        return KeyedWrite(memory=existing, outcome=KEYED_REFRESHED)
    new = supersede_locked(
        actor=actor,
        old=existing,
        kind=values["kind"],
        content=values["content"],
        origin=origin,
        metadata=values["metadata"],
        evidence=_store_evidence(evidence, first=existing),
        source_thread_id=None,
        source_chat_key=None,
        expires_at=values["expires_at"],
        paused=existing.paused,  # a new value is a correction: a paused memory stays paused
    )
    if (new.store_namespace, new.store_key) != (encoded, key):  # an adopted memory takes the key
        Memory.objects.filter(pk=new.pk).update(store_namespace=encoded, store_key=key)
        new.store_namespace, new.store_key = encoded, key
    return KeyedWrite(memory=new, outcome=KEYED_REPLACED)


def memories_expiry_extend(*, actor: User, memories: Sequence[Memory], minutes_of: Callable[[Memory], float | None]):
    """Move the expiry of ``memories`` to now plus ``minutes_of(memory)`` minutes, in place (a
    time to live refreshed by reading, docs/integrations.md), for the rows ``actor`` may change;
    the others, and rows whose ``minutes_of`` is None, stay as they are. One statement per
    distinct time to live."""
    now = timezone.now()
    by_minutes: dict[float, list[str]] = {}
    allowed: dict[tuple[str, str], bool] = {}
    for memory in memories:
        minutes = minutes_of(memory)
        if minutes is None or memory.status != Status.ACTIVE or memory.is_expired(now):
            continue
        scope = (memory.scope_type, memory.scope_id)
        if scope not in allowed:
            try:
                require_write(actor=actor, memory=memory, action="supersede", for_user=memory.owner)
                allowed[scope] = True
            except (NotFound, PermissionDenied):
                allowed[scope] = False
        if allowed[scope]:
            by_minutes.setdefault(float(minutes), []).append(memory.pk)
    for minutes, ids in by_minutes.items():
        Memory.objects.filter(pk__in=ids, status=Status.ACTIVE).update(
            expires_at=now + timedelta(minutes=minutes), updated_at=now
        )
    return sum(len(ids) for ids in by_minutes.values())
