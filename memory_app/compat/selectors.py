"""The reads of the mem0-compatible API (docs/integrations.md): search, lists and entities over
the own memories of the users a key may act for (``memories_of_users``), and nothing else."""

from dataclasses import dataclass

from django.db.models import Count, Max, Min, Q, QuerySet

from identity_app.models import User
from identity_app.permissions import acting_for_users_q
from memory_app.compat.query import EVIDENCE_KEY
from memory_app.memories.derived import scope_key
from memory_app.memories.models import Memory, Tier, agent_q, live_q
from memory_app.memories.selectors import memories_of_users
from memory_app.search import engine

SEARCH_DEPTH = 50  # hits ranked for a search that no filter narrows beyond its users
MAX_ENTITIES = 1000


def memories_listed(*, actor: User, subjects: list[User], condition: Q) -> QuerySet[Memory]:
    """Live memories of ``subjects`` that ``condition`` (a parsed filter) keeps, newest first;
    paused ones are for no agent (``agent_q``), and every read here is an agent's."""
    return (
        memories_of_users(actor=actor, users=subjects)
        .filter(agent_q())
        .filter(condition)
        .order_by("-created_at", "-id")
    )


@dataclass
class Hit:
    memory: Memory
    score: float


def _similarity(mode: str, score: float, top: float, coverage: float) -> float:
    """A hit's score on mem0's scale, 0 to 1, which ``threshold`` compares with: in hybrid mode
    the fused score over the best a document can get (first in both rankings); by words alone
    the share of the query's word weight (idf) the memory holds (``coverage``: 1 when it holds
    every word, whichever hit is first); by meaning alone the score over the best hit's."""
    if mode == "hybrid":
        value = score / (2.0 / (engine.RRF_K + 1))
    elif mode == "lexical":
        value = coverage
    else:
        value = score / (top if top > 0 else 1.0)
    return round(max(0.0, min(1.0, value)), 6)


def memories_searched(
    *,
    actor: User,
    subjects: list[User],
    query: str,
    condition: Q,
    narrowed: bool,
    top_k: int,
    threshold: float | None,
    mode: str,
) -> list[Hit]:
    """The best ``top_k`` live memories of ``subjects`` for ``query`` that ``condition`` keeps,
    ranked by the retrieval engine (only those that match by word or meaning: nothing, when
    nothing does). A filter that narrows the memories ranks deeper first (``engine.MAX_DEPTH``
    hits), then keeps what it allows."""
    depth = engine.MAX_DEPTH if narrowed else max(SEARCH_DEPTH, top_k)
    rankings = engine.rank(
        scopes=[scope_key(Tier.USER, str(user.pk)) for user in subjects],
        query=query,
        depth=depth,
        mode=mode,
        floor=True,
    )
    ranked = engine.fuse(rankings)
    if not ranked:
        return []
    top = ranked[0][1]
    scores = {ref: _similarity(rankings.mode, score, top, rankings.coverage.get(ref, 0.0)) for ref, score in ranked}
    # The rows the filter keeps, put in the ranking's order here (a CASE over every ref costs
    # Django more to build than the statement takes to run).
    refs = [ref for ref, _ in ranked]
    rows = {m.pk: m for m in memories_listed(actor=actor, subjects=subjects, condition=condition).filter(pk__in=refs)}
    hits = [Hit(memory=rows[ref], score=scores[ref]) for ref in refs if ref in rows][:top_k]
    return [hit for hit in hits if threshold is None or hit.score >= threshold]


def entities(*, actor: User) -> list[dict]:
    """mem0's entities: the users whose memories this key reaches (with how many live ones), and
    the agents, runs and apps those memories were written with; each with when its first live
    memory was written and when its memories last changed."""
    mine = Memory.objects.filter(acting_for_users_q(actor, user_field="owner"), live_q(), scope_type=Tier.USER)
    counted = {"n": Count("pk"), "first": Min("created_at"), "last": Max("updated_at")}

    def entity(kind: str, name: str, row: dict) -> dict:
        return {
            "type": kind,
            "name": name,
            "total_memories": row["n"],
            "created_at": row["first"].isoformat(),
            "updated_at": row["last"].isoformat(),
        }

    found = [
        entity("user", row["owner__username"], row)
        for row in mine.values("owner__username").annotate(**counted).order_by("owner__username")[:MAX_ENTITIES]
    ]
    for kind, tag in (("agent", "agent_id"), ("run", "run_id"), ("app", "app_id")):
        path = f"evidence__{EVIDENCE_KEY}__{tag}"
        rows = (
            mine.filter(**{f"{path}__isnull": False})
            .values(path)
            .annotate(**counted)
            .order_by(path)[: MAX_ENTITIES - len(found)]
        )
        found.extend(entity(kind, row[path], row) for row in rows)
    return found
