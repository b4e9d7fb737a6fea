"""The export of the memory home (docs/home.md): all of it as one versioned JSON document.
The import (``services.home_import``) reads the format these constants name."""

from datetime import datetime

from django.conf import settings
from django.db.models import Q, QuerySet

from config.errors import DomainError
from identity_app.models import User
from identity_app.selectors import profile_get, projects_with_my_role
from memory_app.automemory.models import AUTO_MEMORY_DEFAULTS
from memory_app.automemory.selectors import auto_memory_log_for, auto_memory_settings_get
from memory_app.home.provenance import Provenance, provenance_data, provenance_for
from memory_app.home.reads import read_data, read_views
from memory_app.home.sources import EXPORT_MAX_MEMORIES, MAX_CHATS, MAX_PROJECTS, home_memories
from memory_app.memories.models import Memory, Tier
from memory_app.notes.selectors import user_settings_get, workspace_file_get
from memory_app.notes.workspace import WORKSPACE_FILES
from memory_app.reads.models import ItemKind, MemoryRead
from memory_app.scoped.selectors import bound_chats

EXPORT_FORMAT = "memory-service-export"
EXPORT_VERSION = 2  # 2: the profile's language and every auto-memory setting; version 1 files are still read
EXPORT_READABLE_VERSIONS = (1, 2)
EXPORT_LOG_ENTRIES = 500
EXPORT_ITEM_KEYS = (
    "id",
    "kind",
    "content",
    "status",
    "origin",
    "origin_label",
    "created_at",
    "updated_at",
    "expires_at",
    "paused",
    "expired",
    "replaces",
    "superseded_by",
    "source_thread_id",
    "metadata",
    "evidence",
    "provenance",
)


def export_item(memory: Memory, prov: Provenance) -> dict:
    return {
        "id": memory.pk,
        "kind": memory.kind,
        "content": memory.content,
        "status": memory.status,
        "origin": memory.origin,
        "origin_label": memory.origin_label,
        "created_at": memory.created_at.isoformat(),
        "updated_at": memory.updated_at.isoformat(),
        "expires_at": memory.expires_at.isoformat() if memory.expires_at else None,
        "paused": memory.paused,
        # Kept until it is purged, but no longer true: agents have stopped seeing it.
        "expired": memory.expired,
        "replaces": prov.replaces or None,
        "superseded_by": memory.superseded_by_id,
        "source_thread_id": memory.source_thread_id,
        "metadata": memory.metadata,
        "evidence": memory.evidence,
        "provenance": provenance_data(prov),
    }


def home_export(*, user: User, now: datetime) -> dict:
    """All of the home as one versioned JSON document (docs/home.md): profile, switches,
    notes files, the memories of every source with their provenance (bounded), and the
    user's latest auto-memory log entries."""
    profile = profile_get(user=user)
    auto = auto_memory_settings_get(user=user)
    budget = EXPORT_MAX_MEMORIES
    truncated = False

    def rows(qs: QuerySet[Memory]) -> list[Memory]:
        nonlocal budget, truncated
        taken = list(qs.order_by("-created_at", "-id")[: budget + 1]) if budget > 0 else []
        if len(taken) > budget or (budget <= 0 and qs.exists()):
            truncated = True
        taken = taken[:budget]
        budget -= len(taken)
        return taken[::-1]  # oldest first, as a chain reads

    memories = home_memories(user=user)
    mine = rows(memories.filter(scope_type=Tier.USER))
    chat_keys = _chat_keys(user)
    chats = [(key, rows(memories.filter(scope_type=Tier.CHAT, scope_id=key))) for key in chat_keys]
    shared = [(key, rows(memories.filter(scope_type=Tier.GLOBAL, source_chat_key=key))) for key in chat_keys]
    projects = list(projects_with_my_role(user=user).order_by("name", "id")[:MAX_PROJECTS])
    project_rows = [(p, rows(memories.filter(scope_type=Tier.PROJECT, project=p))) for p in projects]
    everything = [
        *mine,
        *(m for _key, r in chats for m in r),
        *(m for _key, r in shared for m in r),
        *(m for _p, r in project_rows for m in r),
    ]
    prov = provenance_for(user=user, memories=everything)

    def items(found: list[Memory]) -> list[dict]:
        return [export_item(m, prov[m.pk]) for m in found]

    notes: dict[str, str | dict | None] = {}
    for name in WORKSPACE_FILES:
        try:
            file = workspace_file_get(user=user, name=name)
            notes[name] = file.content if file.exists else None
        except DomainError as exc:
            notes[name] = {"error": exc.message}
    log = list(auto_memory_log_for(user=user)[:EXPORT_LOG_ENTRIES])
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "exported_at": now.isoformat(),
        "user": {
            "username": user.get_username(),
            "display_name": profile.display_name,
            "timezone": profile.timezone,
            "language": profile.language,
            "preferences": profile.preferences,
        },
        "settings": {
            "enable_memory": user_settings_get(user=user).enable_memory,
            "auto_memory": {name: getattr(auto, name) for name in AUTO_MEMORY_DEFAULTS},
        },
        "notes_files": notes,
        "memories": {
            "user": items(mine),
            "projects": [
                {"id": p.pk, "name": p.name, "role": p.my_role, "memories": items(found)} for p, found in project_rows
            ],
            "chats": [{"chat_key": key, "memories": items(found)} for key, found in chats],
            "shared": [{"chat_key": key, "memories": items(found)} for key, found in shared if found],
        },
        "auto_memory_log": [
            {
                "id": e.pk,
                "run_id": e.run_ref,
                "project_id": e.project_id_ref,
                "outcome": e.outcome,
                "gate": e.gate,
                "reason": e.reason,
                "memory_id": e.memory_id,
                "content": e.content,
                "created_at": e.created_at.isoformat(),
            }
            for e in log
        ],
        "reads": _export_reads(user),
        "truncated": truncated,
    }


EXPORT_READS = 5000


def _export_reads(user) -> dict:
    """Who read what, newest first, at most ``EXPORT_READS`` rows: the reads of the home's
    memories, of the notes-file versions and of the conversation messages (docs/home.md).
    Import ignores this section."""
    home_refs = home_memories(user=user).values("pk")
    qs = (
        MemoryRead.objects.filter(
            Q(item_kind=ItemKind.MEMORY, item_ref__in=home_refs)
            | Q(user=user, item_kind__in=[ItemKind.NOTES, ItemKind.MESSAGE])
        )
        .select_related("principal", "token")
        .order_by("-at", "-id")
    )
    rows = list(qs[: EXPORT_READS + 1])
    views = read_views(user=user, reads=rows[:EXPORT_READS], with_items=False)
    return {
        "items": [{**read_data(view), "kind": row.item_kind} for row, view in zip(rows, views, strict=False)],
        "truncated": len(rows) > EXPORT_READS,
        "retention_days": settings.MEMORY_READS_RETENTION_DAYS,
    }


def _chat_keys(user) -> list[str]:
    return list(bound_chats(user=user).values_list("chat_key", flat=True)[:MAX_CHATS])
