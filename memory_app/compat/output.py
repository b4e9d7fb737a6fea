"""What the mem0-compatible API answers: memories, events and history in the shapes mem0's
clients read (docs/integrations.md, "Shapes"), with this service's own fields beside them."""

from datetime import timedelta

from memory_app.compat.query import EVIDENCE_KEY
from memory_app.compat.services import ENTITY_TAGS, Event, content_hash
from memory_app.memories.models import Memory

# Fields a caller may ask for (``fields``); ``id`` always comes.
MEMORY_FIELDS = (
    "id",
    "memory",
    "user_id",
    "agent_id",
    "run_id",
    "app_id",
    "metadata",
    "categories",
    "hash",
    "created_at",
    "updated_at",
    "expiration_date",
    "immutable",
    "score",
    "kind",
    "status",
    "expires_at",
    "expired",
    "paused",
    "superseded_by",
)


def _iso(moment) -> str | None:
    return moment.isoformat() if moment is not None else None


def tags_of(memory: Memory) -> dict:
    tags = memory.evidence.get(EVIDENCE_KEY) if isinstance(memory.evidence, dict) else None
    return tags if isinstance(tags, dict) else {}


def memory_out(memory: Memory, *, score: float | None = None, fields: list[str] | None = None) -> dict:
    """A memory as mem0 gives one; ``expiration_date`` is the last day it holds (UTC)."""
    tags = tags_of(memory)
    out: dict[str, object] = {
        "id": memory.pk,
        "memory": memory.content,
        "user_id": memory.owner.get_username() if memory.owner is not None else None,
        **{name: tags.get(name) for name in ENTITY_TAGS},
        "metadata": memory.metadata or None,
        "categories": [],
        "hash": content_hash(memory.content),
        "created_at": _iso(memory.created_at),
        "updated_at": _iso(memory.updated_at),
        "expiration_date": (
            (memory.expires_at - timedelta(microseconds=1)).date().isoformat() if memory.expires_at else None
        ),
        "immutable": False,
        "kind": memory.kind,
        "status": memory.status,
        "expires_at": _iso(memory.expires_at),
        "expired": memory.expired,
        "paused": memory.paused,
        "superseded_by": memory.superseded_by_id,
    }
    if score is not None:
        out["score"] = score
    if fields:
        out = {name: value for name, value in out.items() if name == "id" or name in fields}
    return out


def event_out(event: Event) -> dict:
    out = {"id": event.memory.pk, "memory": event.memory.content, "event": event.event}
    if event.previous_id:
        out["previous_memory"] = event.previous
        out["previous_id"] = event.previous_id
    return out


def history_out(chain: list[Memory]) -> list[dict]:
    """The supersede chain as mem0's history: the first version an ADD, each later one an UPDATE
    of the one before."""
    entries: list[dict[str, object]] = []
    previous: Memory | None = None
    for version in chain:
        entries.append(
            {
                "id": version.pk,
                "memory_id": version.pk,
                "old_memory": previous.content if previous else None,
                "new_memory": version.content,
                "event": "UPDATE" if previous else "ADD",
                "user_id": version.owner.get_username() if version.owner is not None else None,
                "metadata": version.metadata or None,
                "input": [],
                "categories": [],  # as on a memory: this service keeps no categories
                "created_at": _iso(version.created_at),
                "updated_at": _iso(version.updated_at),
            }
        )
        previous = version
    return entries
