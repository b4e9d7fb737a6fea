"""Search of chat/global items: keyword (``fts``), ``vector`` and ``hybrid``, and the scope
cascade (docs/scoped-memory.md) shared by all three.

Ranking is the retrieval engine's (``memory_app.search.engine``: BM25 with the scope's own
statistics, e5 vectors, reciprocal rank fusion) over one scope at a time; the hits are then
loaded with the scope and the "agents may use it" filter (``agent_q``: active, unexpired, not
paused) in the same SQL query, so an item that moved, was archived, expired or was paused since
it was indexed is never returned. Every caller is an agent's path (the API's search, the MCP
chat search, the run context's scoped section).
"""

from dataclasses import dataclass
from datetime import datetime

from config.validation import clean_text
from memory_app.memories.derived import scope_key
from memory_app.memories.models import Memory, agent_q
from memory_app.scoped.scope import cascade_scopes
from memory_app.search import dense, engine

MODES = ("fts", "vector", "hybrid")
ENGINE_MODES = {"fts": "lexical", "vector": "dense", "hybrid": "hybrid"}
MAX_LIMIT = 50
MAX_QUERY_CHARS = 1000


@dataclass
class Hit:
    id: str
    content: str
    kind: str
    scope_type: str
    scope_id: str
    score: float
    created_at: datetime | None = None
    expires_at: datetime | None = None
    matched: bool = True  # False: among the closest items, asked for with ``keep_best``, but no match

    def as_dict(self) -> dict:
        return {
            "id": self.id,
            "content": self.content,
            "kind": self.kind,
            "scope_type": self.scope_type,
            "scope_id": self.scope_id,
            "score": round(float(self.score), 6),
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
        }


def search_scope(
    *,
    scope: tuple[str, str],
    query: str,
    limit: int,
    mode: str,
    warnings: list | None = None,
    keep_best: bool = False,
):
    """The ``limit`` best items of one scope that agents may use (``agent_q``) that match the
    query (``engine.search``'s ``floor``: docs/search.md, "Nothing matches"); with ``keep_best``,
    the best ones whether they match or not (``Hit.matched`` False)."""
    if limit <= 0 or not query.strip():
        return []
    found = engine.search(
        scopes=[scope_key(*scope)],
        query=query,
        limit=limit,
        mode=ENGINE_MODES[mode],
        depth=limit * 2 + 10,
        floor=not keep_best,
        # Across languages where the chat mixes them (the lists' way); the model's own vector
        # over a one-language chat, which ranks better there (docs/search.md, "Nothing matches").
        across=dense.ACROSS_AUTO if not keep_best else False,
    )
    if warnings is not None:
        warnings.extend(found.warnings)
    rows = {
        row[0]: row
        for row in Memory.objects.filter(
            agent_q(), pk__in=found.refs, scope_type=scope[0], scope_id=scope[1]
        ).values_list("id", "content", "kind", "created_at", "expires_at")
    }
    hits = [
        Hit(
            id=hit.ref,
            content=rows[hit.ref][1],
            kind=rows[hit.ref][2],
            scope_type=scope[0],
            scope_id=scope[1],
            score=hit.score,
            created_at=rows[hit.ref][3],
            expires_at=rows[hit.ref][4],
            matched=not keep_best,
        )
        for hit in found.hits
        if hit.ref in rows
    ]
    return hits[:limit]


def cascade_search(
    *,
    scopes: list[tuple[str, str]],
    query: str,
    limit: int,
    mode: str,
    warnings: list | None = None,
    keep_best: bool = False,
) -> list[Hit]:
    """Search ``scopes`` in order; each later scope only fills the budget the earlier left. Only
    items that match the query are returned; with ``keep_best``, when none does, the closest
    ones instead (each ``matched`` False)."""
    clean_text(query, field="query")
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    results = _cascade(scopes=scopes, query=query, limit=limit, mode=mode, warnings=warnings, keep_best=False)
    if results or not keep_best:
        return results
    return _cascade(scopes=scopes, query=query, limit=limit, mode=mode, warnings=warnings, keep_best=True)


def _cascade(
    *, scopes: list[tuple[str, str]], query: str, limit: int, mode: str, warnings: list | None, keep_best: bool
) -> list[Hit]:
    results: list[Hit] = []
    seen: set[str] = set()
    for scope in scopes:
        remaining = limit - len(results)
        if remaining <= 0:
            break
        for hit in search_scope(
            scope=scope, query=query, limit=remaining, mode=mode, warnings=warnings, keep_best=keep_best
        ):
            if hit.id not in seen:
                seen.add(hit.id)
                results.append(hit)
    return results[:limit]


def session_search(*, session_id: str, query: str, limit: int, mode: str) -> list[Hit]:
    """The cascade for a session: own chat first, global fills the rest; legacy → global."""
    return cascade_search(scopes=cascade_scopes(session_id), query=query, limit=limit, mode=mode)
