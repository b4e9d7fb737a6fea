"""Search of chat/global items: keyword (``fts``), ``vector`` and ``hybrid``, and the scope
cascade (docs/scoped-memory.md) shared by all three.

Every query carries its scope filter inside the SQL; nothing is fetched across scopes and
filtered afterwards. Terms, ranking and fusion are the shared engine's (``memory_app.search``).

Keyword search
    Candidates are the scope's active rows containing any query term — SQLite: the FTS5
    ``trigram`` index for terms of three or more characters plus ``LIKE`` for shorter ones;
    PostgreSQL: ``ILIKE`` served by the ``pg_trgm`` GIN index — pre-ordered by how many (and
    how long) terms they contain and capped, then ranked by ``ranking.bm25_scores``.

Vector search
    Cosine similarity between the query vector and the scope's stored vectors of the current
    provider/model (``vectors.nearest``).

Hybrid
    Reciprocal rank fusion of the keyword and vector rankings of the same scope.
"""

import dataclasses
from dataclasses import dataclass

from django.db import connection

from config.validation import clean_text
from memory_app.memories.models import Memory, Status
from memory_app.scoped.scope import cascade_scopes
from memory_app.search.analysis import query_terms
from memory_app.search.embeddings import EmbeddingProvider, get_provider
from memory_app.search.index import FTS_TABLE
from memory_app.search.ranking import bm25_scores, rrf_fuse
from memory_app.search.vectors import nearest

MODES = ("fts", "vector", "hybrid")
MAX_LIMIT = 50
MAX_QUERY_CHARS = 1000
CANDIDATE_CAP = 400


@dataclass
class Hit:
    id: str
    content: str
    kind: str
    scope_type: str
    scope_id: str
    score: float

    def as_dict(self) -> dict:
        return {
            "id": self.id,
            "content": self.content,
            "kind": self.kind,
            "scope_type": self.scope_type,
            "scope_id": self.scope_id,
            "score": round(float(self.score), 6),
        }


def _fts_phrase(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _keyword_candidates(scope: tuple[str, str], terms: list[str], cap: int) -> list[tuple]:
    """(id, content, kind) of active rows of ``scope`` containing any term, best first."""
    scope_type, scope_id = scope
    like_params = [f"%{t}%" for t in terms]  # terms are word characters: no LIKE wildcards
    if connection.vendor == "postgresql":
        # Terms without letter case (Chinese, digits) use LIKE, several times cheaper than
        # ILIKE on UTF-8 text; both are served by the pg_trgm GIN index from three characters.
        ops = ["LIKE" if t.upper() == t.lower() else "ILIKE" for t in terms]
        match_sql = " OR ".join(f"m.content {op} %s" for op in ops)
        match_params = like_params
    else:
        ops = ["LIKE"] * len(terms)  # SQLite's LIKE ignores ASCII case
        long_terms = [t for t in terms if len(t) >= 3]
        clauses, match_params = [], []
        if long_terms:
            clauses.append(
                f"m.id IN (SELECT memory_id FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s "
                "AND scope_type = %s AND scope_id = %s)"
            )
            match_params += [" OR ".join(_fts_phrase(t) for t in long_terms), scope_type, scope_id]
        for term in terms:
            if len(term) < 3:
                # FTS5 trigrams cannot match fewer than three characters; LIKE within the scope can.
                clauses.append("m.content LIKE %s")
                match_params.append(f"%{term}%")
        match_sql = " OR ".join(clauses)
    # Pre-order (only matters when more than ``cap`` rows match): longer terms weigh more.
    pre_order = " + ".join(
        f"(CASE WHEN m.content {op} %s THEN {len(t)} ELSE 0 END)" for op, t in zip(ops, terms, strict=True)
    )
    sql = (
        "SELECT m.id, m.content, m.kind FROM memory_app_memory m "
        f"WHERE m.scope_type = %s AND m.scope_id = %s AND m.status = %s AND ({match_sql}) "
        f"ORDER BY ({pre_order}) DESC, m.created_at DESC LIMIT %s"
    )
    params = [scope_type, scope_id, Status.ACTIVE, *match_params, *like_params, cap]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def keyword_search(*, scope: tuple[str, str], query: str, limit: int) -> list[Hit]:
    terms = query_terms(query)
    if not terms or limit <= 0:
        return []
    rows = _keyword_candidates(scope, terms, CANDIDATE_CAP)
    scores = bm25_scores([row[1] for row in rows], terms, query)
    ranked = sorted((pair for pair in zip(scores, rows, strict=True) if pair[0] > 0), key=lambda p: p[0], reverse=True)
    return [
        Hit(id=row[0], content=row[1], kind=row[2], scope_type=scope[0], scope_id=scope[1], score=score)
        for score, row in ranked[:limit]
    ]


def _hits_for(scope: tuple[str, str], scored_ids: list[tuple[str, float]]) -> list[Hit]:
    """Hits for ids, re-checked against the items' *current* scope and status."""
    ids = [mid for mid, _ in scored_ids]
    rows = {
        row[0]: row
        for row in Memory.objects.filter(
            pk__in=ids, scope_type=scope[0], scope_id=scope[1], status=Status.ACTIVE
        ).values_list("id", "content", "kind")
    }
    return [
        Hit(id=mid, content=rows[mid][1], kind=rows[mid][2], scope_type=scope[0], scope_id=scope[1], score=score)
        for mid, score in scored_ids
        if mid in rows
    ]


def vector_search(
    *, scope: tuple[str, str], query: str, limit: int, provider: EmbeddingProvider | None = None, query_vector=None
) -> list[Hit]:
    if limit <= 0 or not query.strip():
        return []
    provider = provider or get_provider()
    if query_vector is None:
        query_vector = provider.embed([query])[0]
    return _hits_for(scope, nearest(scope=scope, query_vector=query_vector, provider=provider, limit=limit))


def hybrid_search(
    *, scope: tuple[str, str], query: str, limit: int, provider: EmbeddingProvider | None = None, query_vector=None
) -> list[Hit]:
    if limit <= 0:
        return []
    depth = max(limit * 3, 20)
    keyword = keyword_search(scope=scope, query=query, limit=depth)
    vector = vector_search(scope=scope, query=query, limit=depth, provider=provider, query_vector=query_vector)
    by_id = {hit.id: hit for hit in [*vector, *keyword]}
    fused = rrf_fuse([[hit.id for hit in keyword], [hit.id for hit in vector]])[:limit]
    return [dataclasses.replace(by_id[mid], score=score) for mid, score in fused]


def search_scope(*, scope: tuple[str, str], query: str, limit: int, mode: str, provider=None, query_vector=None):
    if mode == "fts":
        return keyword_search(scope=scope, query=query, limit=limit)
    if mode == "vector":
        return vector_search(scope=scope, query=query, limit=limit, provider=provider, query_vector=query_vector)
    if mode == "hybrid":
        return hybrid_search(scope=scope, query=query, limit=limit, provider=provider, query_vector=query_vector)
    raise ValueError(f"unknown mode {mode!r}")


def cascade_search(*, scopes: list[tuple[str, str]], query: str, limit: int, mode: str) -> list[Hit]:
    """Search ``scopes`` in order; each later scope only fills the budget the earlier left."""
    clean_text(query, field="query")
    provider = get_provider() if mode in ("vector", "hybrid") else None
    query_vector = provider.embed([query])[0] if provider is not None and query.strip() else None
    results: list[Hit] = []
    seen: set[str] = set()
    for scope in scopes:
        remaining = limit - len(results)
        if remaining <= 0:
            break
        for hit in search_scope(
            scope=scope, query=query, limit=remaining, mode=mode, provider=provider, query_vector=query_vector
        ):
            if hit.id not in seen:
                seen.add(hit.id)
                results.append(hit)
    return results[:limit]


def session_search(*, session_id: str, query: str, limit: int, mode: str) -> list[Hit]:
    """The cascade for a session: own chat first, global fills the rest; legacy → global."""
    return cascade_search(scopes=cascade_scopes(session_id), query=query, limit=limit, mode=mode)
