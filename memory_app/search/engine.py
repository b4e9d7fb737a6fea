"""The retrieval engine: rank the documents of some scopes for a query, by words (BM25), by
meaning (embedding similarity) or both (reciprocal rank fusion).

Callers pass only scopes the caller may read (derived from who is asking, never from the
request alone), get back ``(ref, score)`` pairs best first, and load their rows with their own
visibility queryset filtered to those refs, inside one SQL query.

Lexical
    Okapi BM25 (scaled by the share of query terms a document holds) with the statistics of
    the searched scopes: document count and average length
    from ``SearchScope``, document frequency per term counted in the word index (exactly up to
    ``DF_CAP`` documents per term; beyond that the term is common and counts as ``DF_CAP``).
    Candidates are read term by term from the postings index, at most ``POSTINGS_BUDGET``
    postings in all, the newest first for a term too common to read whole: rare terms, which
    decide a ranking, are read completely.
Dense
    Cosine similarity between the query vector and the scopes' document vectors of the current
    model: exactly, with numpy over a per-process cache kept in step with each scope's
    ``version`` and bounded in bytes (``MEMORY_VECTOR_CACHE_BYTES``); or, for searches over
    more documents than that suits, by pgvector's HNSW index in PostgreSQL
    (``memory_app.search.vectorstore``). Documents not embedded yet are not in this ranking;
    the result says how many.
Hybrid
    Reciprocal rank fusion of both rankings (``RRF_K``), each taken ``depth`` deep.
"""

import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings
from django.db import connection

from config.metrics import VECTOR_CACHE_BYTES, observe_search
from memory_app.search import vectorstore
from memory_app.search.analysis import query_terms
from memory_app.search.embeddings import DTYPE, background_similarity, get_provider
from memory_app.search.models import SearchDocument, SearchPosting, SearchScope

MODES = ("hybrid", "lexical", "dense")
BM25_K1 = 1.2
BM25_B = 0.75
RRF_K = 60
COORD_WEIGHT = 0.5
DF_CAP = 20000
POSTINGS_BUDGET = 6000
MIN_TERM_POSTINGS = 300
MAX_DEPTH = 200


@dataclass
class Ranked:
    ref: str
    score: float


@dataclass
class Result:
    hits: list[Ranked]
    terms: list[str]
    mode: str
    not_embedded: int = 0
    warnings: list[str] = field(default_factory=list)

    @property
    def refs(self) -> list[str]:
        return [hit.ref for hit in self.hits]


def default_mode() -> str:
    return getattr(settings, "MEMORY_SEARCH_MODE", "hybrid")


def _scopes(keys: list[str]) -> list[tuple[int, int, int, int]]:
    """``(id, docs, total_length, version)`` of the existing scopes among ``keys``."""
    if not keys:
        return []
    return list(
        SearchScope.objects.filter(key__in=sorted(set(keys))).values_list("id", "docs", "total_length", "version")
    )


def _table(model) -> str:
    return model._meta.db_table


def _postings(scope_ids: list[int], terms: list[str]) -> tuple[dict[str, list[tuple]], dict[str, int]]:
    """Postings ``(document id, tf, length)`` per term (bounded) and each term's document frequency."""
    per_term = max(MIN_TERM_POSTINGS, POSTINGS_BUDGET // max(len(terms), 1))
    marks = ",".join("%s" for _ in scope_ids)
    table = _table(SearchPosting)
    parts, params = [], []
    for i, term in enumerate(terms):
        parts.append(
            f"SELECT * FROM (SELECT {i} AS t, document_id, tf, length FROM {table} "
            f"WHERE scope_id IN ({marks}) AND term = %s ORDER BY document_id DESC LIMIT %s) AS p{i}"
        )
        params += [*scope_ids, term, per_term + 1]
    found: dict[str, list[tuple]] = {term: [] for term in terms}
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(parts), params)
        for t, doc_id, tf, length in cursor.fetchall():
            found[terms[t]].append((doc_id, tf, length))
    df = {}
    for term, rows in found.items():
        if len(rows) <= per_term:
            df[term] = len(rows)
            continue
        rows.pop()  # the extra row only told that there are more
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT COUNT(*) FROM (SELECT 1 FROM {table} WHERE scope_id IN ({marks}) AND term = %s LIMIT %s) AS c",
                [*scope_ids, term, DF_CAP],
            )
            df[term] = cursor.fetchone()[0]
    return found, df


def lexical_rank(scopes: list[tuple], terms: list[str], depth: int) -> list[tuple[int, float]]:
    """``(document id, BM25 score)`` best first."""
    n_docs = sum(s[1] for s in scopes)
    if not terms or not n_docs:
        return []
    avg_len = max(sum(s[2] for s in scopes) / n_docs, 1.0)
    postings, df = _postings([s[0] for s in scopes], terms)
    scores: dict[int, float] = {}
    matched: dict[int, int] = {}
    for term, rows in postings.items():
        if not rows:
            continue
        idf = math.log(1 + (n_docs - df[term] + 0.5) / (df[term] + 0.5))
        for doc_id, tf, length in rows:
            norm = BM25_K1 * (1 - BM25_B + BM25_B * length / avg_len)
            scores[doc_id] = scores.get(doc_id, 0.0) + idf * tf * (BM25_K1 + 1) / (tf + norm)
            matched[doc_id] = matched.get(doc_id, 0) + 1
    # Coordination: a document with more of the question's words beats one with a single
    # rare word (idf is noisy in small scopes, and questions carry several content words).
    for doc_id, count in matched.items():
        scores[doc_id] *= 1 - COORD_WEIGHT + COORD_WEIGHT * count / len(terms)
    ranked = sorted(scores.items(), key=lambda pair: (-pair[1], -pair[0]))
    return ranked[:depth]


def vector_cache_bytes() -> int:
    return int(getattr(settings, "MEMORY_VECTOR_CACHE_BYTES", 200 * 1024 * 1024))


def exact_vector_limit(dim: int) -> int:
    """Documents per search whose vectors fit in the per-process cache for exact ranking."""
    return vector_cache_bytes() // (dim * DTYPE.itemsize + 8)


def _entry_bytes(entry) -> int:
    keys = entry[4]
    return entry[2].nbytes + entry[3].nbytes + (len(keys) * 120 if keys is not None else 0)


class _VectorCache:
    """Per-process ``scope id → (version, model, document ids, matrix, keys)``, least recently
    used out once the entries hold more than ``MEMORY_VECTOR_CACHE_BYTES`` (ids, vectors and
    keys; the last entry stays whatever its size, while it is in use).

    On a version change only the id list of the scope is read again; vectors of documents
    already held are reused (a stored vector never changes for its document id and model).
    """

    def __init__(self, max_bytes: int | None = None):
        self.max_bytes = max_bytes
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self.bytes = 0

    def clear(self):
        with self._lock:
            self._data.clear()
            self.bytes = 0
        VECTOR_CACHE_BYTES.set(0)

    @staticmethod
    def _load(doc_ids: list[int], model: str, *, with_hash: bool = False):
        fields = ("id", "text_hash", "vector") if with_hash else ("id", "vector")
        for start in range(0, len(doc_ids), 2000):
            chunk = doc_ids[start : start + 2000]
            yield from SearchDocument.objects.filter(pk__in=chunk, model=model).values_list(*fields)

    def get(self, scope_id: int, version: int, model: str, dim: int):
        cache_key = (connection.alias, connection.settings_dict.get("NAME"), scope_id)
        with self._lock:
            entry = self._data.get(cache_key)
            if entry is not None:
                self._data.move_to_end(cache_key)
        if entry is not None and entry[0] == version and entry[1] == model:
            return entry[2], entry[3]
        # Vectors already held are reused by document id where ids are never reused
        # (PostgreSQL sequences): only the id list is read, and only new ids are loaded. SQLite
        # may hand out an id again after a rollback, so there the text hash is part of the key.
        reuse_by_id = connection.vendor == "postgresql"
        columns = "id" if reuse_by_id else "id, text_hash"
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT {columns} FROM {_table(SearchDocument)} WHERE scope_id = %s AND model = %s ORDER BY id",
                [scope_id, model],
            )
            fetched = cursor.fetchall()
        held_entry = entry if entry is not None and entry[1] == model else None
        if reuse_by_id:
            wanted = np.fromiter((row[0] for row in fetched), dtype=np.int64, count=len(fetched))
            if held_entry is not None:
                keep = np.isin(held_entry[2], wanted)
                old_ids, old_matrix = held_entry[2][keep], held_entry[3][keep]
            else:
                old_ids, old_matrix = np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
            new_ids, new_rows = [], []
            for doc_id, raw in self._load(np.setdiff1d(wanted, old_ids).tolist(), model):
                if raw is not None and len(raw) == dim * 4:
                    new_ids.append(doc_id)
                    new_rows.append(np.frombuffer(bytes(raw), dtype=DTYPE))
            ids = np.concatenate([old_ids, np.asarray(new_ids, dtype=np.int64)])
            matrix = np.vstack([old_matrix, *new_rows]) if new_rows else old_matrix
            keys = None
        else:
            keys = [(row[0], row[1]) for row in fetched]
            held = dict(zip(held_entry[4], held_entry[3], strict=True)) if held_entry is not None else {}
            missing = [key for key in keys if key not in held]
            wanted_keys = set(missing)
            for doc_id, digest, raw in self._load([k[0] for k in missing], model, with_hash=True):
                if (doc_id, digest) in wanted_keys and raw is not None and len(raw) == dim * 4:
                    held[(doc_id, digest)] = np.frombuffer(bytes(raw), dtype=DTYPE)
            keys = [key for key in keys if key in held]
            matrix = np.vstack([held[key] for key in keys]) if keys else np.zeros((0, dim), dtype=np.float32)
            ids = np.asarray([key[0] for key in keys], dtype=np.int64)
        limit = self.max_bytes if self.max_bytes is not None else vector_cache_bytes()
        with self._lock:
            self._data[cache_key] = (version, model, ids, matrix, keys)
            self._data.move_to_end(cache_key)
            total = sum(_entry_bytes(v) for v in self._data.values())
            while total > limit and len(self._data) > 1:
                _, dropped = self._data.popitem(last=False)
                total -= _entry_bytes(dropped)
            self.bytes = total
        VECTOR_CACHE_BYTES.set(total)
        return ids, matrix


vector_cache = _VectorCache()


def dense_rank(
    scopes: list[tuple], query: str, depth: int, *, provider, floor: bool = False
) -> tuple[list[tuple[int, float]], int]:
    """``(document id, cosine similarity)`` best first, and how many documents have no vector
    (-1: too many documents to compare exactly). With ``floor``, only documents that match by
    meaning: more similar to the query than its background similarity plus the model's
    ``match_floor`` (docs/search.md)."""
    n_docs = sum(s[1] for s in scopes)
    if not n_docs or not query.strip():
        return [], 0
    if vectorstore.use_pgvector(n_docs, provider, fits_in_memory=n_docs <= exact_vector_limit(provider.dim)):
        query_vector = provider.embed_query(query)
        ranked = vectorstore.rank([s[0] for s in scopes], query_vector, depth, model=provider.model, dim=provider.dim)
        missing = max(n_docs - vectorstore.embedded_count(scopes, provider.model), 0)
        return _above_floor(ranked, query_vector, provider, floor), missing
    if n_docs > exact_vector_limit(provider.dim):
        return [], -1
    query_vector = provider.embed_query(query)
    ids_parts, matrices = [], []
    for scope_id, _, _, version in scopes:
        ids, matrix = vector_cache.get(scope_id, version, provider.model, provider.dim)
        ids_parts.append(ids)
        matrices.append(matrix)
    ids = np.concatenate(ids_parts) if ids_parts else np.zeros(0, dtype=np.int64)
    missing = max(n_docs - len(ids), 0)
    if not len(ids):
        return [], missing
    sims = np.concatenate([matrix @ query_vector for matrix in matrices])  # no copy of the matrices
    k = min(depth, len(ids))
    top = np.argpartition(-sims, k - 1)[:k]
    top = top[np.argsort(-sims[top], kind="stable")]
    return _above_floor([(int(ids[i]), float(sims[i])) for i in top], query_vector, provider, floor), missing


def _above_floor(ranked: list[tuple[int, float]], query_vector, provider, floor: bool) -> list[tuple[int, float]]:
    threshold = provider.min_score
    if floor:
        threshold = max(threshold, float(background_similarity(provider, query_vector)) + provider.match_floor)
    return [(doc_id, score) for doc_id, score in ranked if score > threshold]


def rrf_fuse(rankings: list[list], *, k: int = RRF_K) -> list[tuple]:
    """Reciprocal rank fusion: ``score = Σ 1 / (k + rank)`` over the rankings (rank from 1);
    best first, ties in order of first appearance."""
    fused: dict = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
    return sorted(fused.items(), key=lambda pair: pair[1], reverse=True)


@observe_search  # latency per mode on /metrics
def search(
    *,
    scopes: list[str],
    query: str,
    limit: int,
    mode: str | None = None,
    depth: int | None = None,
    expand_lexical: Callable[[list[tuple[str, float]]], list[tuple[str, float]]] | None = None,
    floor: bool = False,
) -> Result:
    """Rank the documents of ``scopes`` for ``query``; at most ``depth`` hits (default ``limit``).

    ``expand_lexical(ranking)`` may re-score the word ranking (``(ref, BM25 score)`` best first)
    before fusion, e.g. to let a neighbour of a hit share its score; refs it adds must belong
    to the same scopes, and callers load hits through their own visibility queryset anyway.

    ``floor``: a search that filters (a list's ``q``, the memory home) — only documents that
    hold a word of the query or match it by meaning above the model's floor; no hit at all is
    a possible answer."""
    mode = mode or default_mode()
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    terms = query_terms(query)
    depth = min(max(depth or limit, limit, 1), MAX_DEPTH)
    rows = _scopes(scopes)
    result = Result(hits=[], terms=terms, mode=mode)
    if limit <= 0 or not rows:
        return result
    lexical = lexical_rank(rows, terms, depth) if mode in ("lexical", "hybrid") else []
    dense: list[tuple[int, float]] = []
    if mode in ("dense", "hybrid"):
        dense, result.not_embedded = dense_rank(rows, query, depth, provider=get_provider(), floor=floor)
        if result.not_embedded < 0:
            result.not_embedded = 0
            result.warnings.append(
                f"More than {exact_vector_limit(get_provider().dim)} items to compare by meaning: "
                "they were ranked by their words only."
            )
        elif result.not_embedded:
            result.warnings.append(
                f"{result.not_embedded} item(s) are not embedded yet: they were ranked by their words only."
            )
    refs = dict(SearchDocument.objects.filter(pk__in={d for d, _ in [*lexical, *dense]}).values_list("id", "ref"))
    lexical_refs = [(refs[d], score) for d, score in lexical if d in refs]
    dense_refs = [(refs[d], score) for d, score in dense if d in refs]
    if expand_lexical is not None and lexical_refs:
        lexical_refs = expand_lexical(lexical_refs)[:depth]
    if mode == "lexical":
        ranked = lexical_refs
    elif mode == "dense":
        ranked = dense_refs
    else:
        ranked = rrf_fuse([[r for r, _ in lexical_refs], [r for r, _ in dense_refs]])
    result.hits = [Ranked(ref=ref, score=score) for ref, score in ranked[:depth]]
    return result
