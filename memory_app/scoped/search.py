"""Search of chat/global items: keyword (``fts``), ``vector`` and ``hybrid``, and the scope
cascade (seed N §3.3) shared by all three.

Every query carries its scope filter inside the SQL; nothing is fetched across scopes and
filtered afterwards.

Keyword search
    The query is split into terms: words of Latin-script text (stop words dropped, light
    suffix stemming) and, for Chinese/Japanese/Korean, overlapping character bigrams (a
    one- or two-character run is a term by itself, so ``咖啡`` works). Candidates are the
    scope's active rows containing any term — SQLite: the FTS5 ``trigram`` index for terms
    of three or more characters plus ``LIKE`` for shorter ones; PostgreSQL: ``ILIKE``
    served by the ``pg_trgm`` GIN index — pre-ordered by how many (and how long) terms they
    contain and capped. They are then ranked by BM25 (k1=1.2, b=0.75) with document
    frequencies taken over the candidate set, times the share of query terms covered, plus
    a bonus when the whole query occurs verbatim. A natural-language question therefore
    finds rows that share its content words, not only rows containing it as a substring.

Vector search
    Cosine similarity between the query vector and the scope's stored vectors of the
    current provider/model, in numpy (with pgvector, where installed, in SQL). Only the scope's ids are read on each query; the
    vectors (immutable per stored row) are cached per process and scope.

Hybrid
    Reciprocal rank fusion of the keyword and vector rankings of the same scope:
    ``score = Σ 1 / (60 + rank)`` over the two lists (rank from 1).
"""

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
from django.db import connection

from config.validation import clean_text
from memory_app.memories.models import Memory, Status
from memory_app.scoped.scope import cascade_scopes
from memory_app.search import pgvector
from memory_app.search.embeddings import EmbeddingProvider, from_bytes, get_provider, text_runs
from memory_app.search.models import MemoryEmbedding

MODES = ("fts", "vector", "hybrid")
MAX_LIMIT = 50
MAX_QUERY_CHARS = 1000
MAX_TERMS = 24
CANDIDATE_CAP = 400
RRF_K = 60
BM25_K1 = 1.2
BM25_B = 0.75
FTS_TABLE = "memory_scoped_fts"

STOP_WORDS = frozenset(
    """a about above after again all also am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each few for from
    further had has have having he her here hers him his how i if in into is it its itself just
    me more most my no nor not now of off on once only or other our ours out over own please
    same she should so some such than that the their theirs them then there these they this
    those through to too under until up us very was we were what when where which while who
    whom why will with would you your yours tell know remember anything something""".split()
)
# Chinese function characters: a bigram made only of these carries no topic.
ZH_STOP_CHARS = frozenset("的了是我你他她它们这那哪个吗呢吧啊在有和就都也要会对把被给让什么怎样为啥谁吧呀嘛")
_SUFFIXES = ("ingly", "edly", "ing", "ies", "ied", "es", "ed", "ly", "s")


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


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: -len(suffix)]
            if suffix in ("ies", "ied"):
                stem += "y"
            return stem
    return word


def query_terms(text: str) -> list[str]:
    """Distinct search terms of ``text``, in order (see the module docstring)."""
    terms: list[str] = []
    for is_cjk, run in text_runs(text):
        if is_cjk:
            if len(run) <= 2:
                pieces = [run]
            else:
                pieces = [run[i : i + 2] for i in range(len(run) - 1)]
                pieces = [p for p in pieces if not set(p) <= ZH_STOP_CHARS]
        else:
            if run in STOP_WORDS or (len(run) < 2 and not run.isdigit()):
                continue
            pieces = [_stem(run)]
        for piece in pieces:
            if piece not in terms:
                terms.append(piece)
    return terms[:MAX_TERMS]


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


def _bm25_rank(rows: list[tuple], terms: list[str], query: str) -> list[tuple[float, tuple]]:
    lowered = [row[1].lower() for row in rows]
    n_docs = len(rows)
    lengths = [max(len(text), 1) for text in lowered]
    avg_len = sum(lengths) / n_docs
    df = {t: sum(1 for text in lowered if t in text) for t in terms}
    idf = {t: math.log(1 + (n_docs - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
    whole = " ".join(query.lower().split())
    scored = []
    for row, text, length in zip(rows, lowered, lengths, strict=True):
        score, covered = 0.0, 0
        for term in terms:
            tf = text.count(term)
            if not tf:
                continue
            covered += 1
            norm = BM25_K1 * (1 - BM25_B + BM25_B * length / avg_len)
            score += idf[term] * tf * (BM25_K1 + 1) / (tf + norm)
        score *= 0.5 + 0.5 * covered / len(terms)
        if len(whole) >= 2 and whole in " ".join(text.split()):
            score += 1.0
        if covered:
            scored.append((score, row))
    scored.sort(key=lambda pair: pair[0], reverse=True)
    return scored


def keyword_search(*, scope: tuple[str, str], query: str, limit: int) -> list[Hit]:
    terms = query_terms(query)
    if not terms or limit <= 0:
        return []
    rows = _keyword_candidates(scope, terms, CANDIDATE_CAP)
    if not rows:
        return []
    return [
        Hit(id=row[0], content=row[1], kind=row[2], scope_type=scope[0], scope_id=scope[1], score=score)
        for score, row in _bm25_rank(rows, terms, query)[:limit]
    ]


class _VectorCache:
    """Per-process cache of a scope's vector matrix, keyed by the ids of its stored vectors.

    A stored vector row is never updated in place, so equal key lists mean equal matrices;
    the id list itself is read fresh (scope-filtered) on every query.
    """

    def __init__(self, max_scopes: int = 64):
        self.max_scopes = max_scopes
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key, embedding_ids: tuple):
        with self._lock:
            entry = self._data.get(key)
            if entry is not None and entry[0] == embedding_ids:
                self._data.move_to_end(key)
                return entry[1], entry[2]
        return None

    def put(self, key, embedding_ids: tuple, memory_ids: list, matrix: np.ndarray):
        with self._lock:
            self._data[key] = (embedding_ids, memory_ids, matrix)
            self._data.move_to_end(key)
            while len(self._data) > self.max_scopes:
                self._data.popitem(last=False)

    def clear(self):
        with self._lock:
            self._data.clear()


vector_cache = _VectorCache()


def _scope_vectors(scope: tuple[str, str], provider: EmbeddingProvider):
    # Plain cursor: this runs on every vector query and reads the whole scope's id list
    # (an index-only scan of embedding_scope_idx on PostgreSQL); model rows cost too much here.
    # A model has one dimension; each vector's size is checked below.
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, memory_id FROM {MemoryEmbedding._meta.db_table} WHERE scope_type = %s AND scope_id = %s "
            "AND active = %s AND provider = %s AND model = %s ORDER BY id",
            [scope[0], scope[1], True, provider.name, provider.model],
        )
        pairs = [tuple(row) for row in cursor.fetchall()]
    # Keyed by (vector id, item id): item ids are never reused, so even a vector id reused
    # after a rolled-back insert (SQLite) cannot bring back a stale vector.
    embedding_ids = tuple(pairs)
    key = (connection.alias, connection.settings_dict.get("NAME"), scope, provider.name, provider.model)
    cached = vector_cache.get(key, embedding_ids)
    if cached is not None:
        return cached
    vectors = (
        dict(MemoryEmbedding.objects.filter(id__in=[p[0] for p in pairs]).values_list("id", "vector")) if pairs else {}
    )
    # Rows that vanished between the two reads (or of another dimension) are dropped.
    size = provider.dim * 4
    kept = [(eid, mid) for eid, mid in pairs if eid in vectors and len(vectors[eid]) == size]
    memory_ids = [mid for _, mid in kept]
    matrix = (
        np.vstack([from_bytes(vectors[eid], provider.dim) for eid, _ in kept])
        if kept
        else np.zeros((0, provider.dim), dtype=np.float32)
    )
    if len(kept) == len(pairs):
        vector_cache.put(key, embedding_ids, memory_ids, matrix)
    return memory_ids, matrix


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
    if pgvector.enabled():
        nearest = pgvector.nearest(scope=scope, query_vector=query_vector, provider=provider, limit=limit)
        return _hits_for(scope, [(mid, sim) for mid, sim in nearest if sim > provider.min_score])
    memory_ids, matrix = _scope_vectors(scope, provider)
    if not memory_ids:
        return []
    sims = matrix @ query_vector
    k = min(limit, len(memory_ids))
    top = np.argpartition(-sims, k - 1)[:k]
    top = top[np.argsort(-sims[top], kind="stable")]
    scored = [(memory_ids[i], float(sims[i])) for i in top if sims[i] > provider.min_score]
    return _hits_for(scope, scored)


def hybrid_search(
    *, scope: tuple[str, str], query: str, limit: int, provider: EmbeddingProvider | None = None, query_vector=None
) -> list[Hit]:
    if limit <= 0:
        return []
    depth = max(limit * 3, 20)
    keyword = keyword_search(scope=scope, query=query, limit=depth)
    vector = vector_search(scope=scope, query=query, limit=depth, provider=provider, query_vector=query_vector)
    fused: dict[str, float] = {}
    by_id: dict[str, Hit] = {}
    for ranking in (keyword, vector):
        for rank, hit in enumerate(ranking, start=1):
            fused[hit.id] = fused.get(hit.id, 0.0) + 1.0 / (RRF_K + rank)
            by_id.setdefault(hit.id, hit)
    ordered = sorted(fused.items(), key=lambda pair: pair[1], reverse=True)[:limit]
    out = []
    for mid, score in ordered:
        hit = by_id[mid]
        out.append(Hit(hit.id, hit.content, hit.kind, hit.scope_type, hit.scope_id, score))
    return out


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
