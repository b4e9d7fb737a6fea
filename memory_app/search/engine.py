"""The retrieval engine: rank the documents of some scopes for a query, by words (BM25), by
meaning (embedding similarity) or both (reciprocal rank fusion).

Callers pass only scopes the caller may read (derived from who is asking, never from the
request alone), get back ``(ref, score)`` pairs best first, and load their rows with their own
visibility queryset filtered to those refs, inside one SQL query.

Lexical
    Okapi BM25 (scaled by the share of query terms a document holds) with the statistics of
    the searched scopes: document count and average length
    from ``SearchScope``, document frequency per term counted in the word index (exactly up to
    ``_df_cap`` documents per term: ``DF_CAP``, less when a question has many terms, so that a
    search counts at most ``DF_BUDGET`` index entries; beyond that the term is common and counts
    as the cap).
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
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from django.conf import settings
from django.db import connection
from django.db.models import Model
from numpy.typing import ArrayLike

from config.metrics import VECTOR_CACHE_BYTES, observe_search
from memory_app.search import lexicon, vectorstore
from memory_app.search.analysis import MAX_QUERY_TERMS, query_terms
from memory_app.search.embeddings import (
    DTYPE,
    EmbeddingProvider,
    background_queries,
    background_similarity,
    embed_query_soon,
    get_provider,
    is_chinese,
    language_direction,
    without_language,
)
from memory_app.search.models import SearchDocument, SearchPosting, SearchScope

MODES = ("hybrid", "lexical", "dense")
BM25_K1 = 1.2
BM25_B = 0.75
RRF_K = 60
COVERAGE_POWER = 2.0  # score-aware fusion (``fuse``); 0: plain reciprocal rank fusion
COORD_WEIGHT = 0.5
DF_CAP = 20000
# Index entries a search reads to count document frequencies, over all its terms: a Chinese
# sentence is ten or more bigrams, each up to DF_CAP entries in a scope of a million documents,
# and counting them was most of the word ranking's time there (docs/search.md, "At scale").
# Only scopes with more documents than a term's cap are affected.
DF_BUDGET = 40000
DF_MIN_CAP = 2000
POSTINGS_BUDGET = 6000
MIN_TERM_POSTINGS = 300
ORDERED_SCOPES = 4  # up to this many scopes, a term's postings are read one index range per scope
MAX_DEPTH = 200
# Searches that filter (a list's ``q``, the memory home, ``/api/memory/search``): what matches at
# all (docs/search.md, "Nothing matches"). A document matches by meaning when its similarity to
# the query, less the query's background similarity, is above what the background queries
# (``BACKGROUND_QUERIES``) of the query's language score for that document (the
# ``BACKGROUND_QUANTILE`` of them, plus ``BACKGROUND_MARGIN``), and above the model's
# ``match_floor``. A document found by words holds most of the query's weight (``LEXICAL_ALONE``
# of its idf mass), or is close to matching by meaning too (``LEXICAL_SLACK``).
BACKGROUND_QUANTILE = 0.9
BACKGROUND_MARGIN = 0.01
LEXICAL_ALONE = 0.99
LEXICAL_SLACK = 0.0
# The query's words in the other language (``lexicon.translate``) are searched as a second word
# query, and for keywords (no function word) of at most ``DENSE_TRANSLATION_WORDS`` content words
# the model embeds the query followed by them (docs/search.md, "Across languages"): a word alone does not carry its
# meaning across languages in e5 ("peanuts" and 我对花生过敏), a question does, and the dictionary's
# other senses only blur it.
TRANSLATE_QUERIES = True
DENSE_TRANSLATION_WORDS = 2
# ``across="auto"`` (``/api/memory/search``): the query vector is taken across languages only
# when at least this share of the searched documents is in the other language than the query
# (docs/search.md, "Nothing matches"); a one-language chat keeps the model's own vector.
ACROSS_AUTO = "auto"
MIXED_SHARE = 0.1


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


def _table(model: type[Model]) -> str:
    table: str = model._meta.db_table
    return table


def _per_term(terms: list[str]) -> int:
    return max(MIN_TERM_POSTINGS, POSTINGS_BUDGET // max(len(terms), 1))


def _df_cap(terms: list[str]) -> int:
    return max(DF_MIN_CAP, min(DF_CAP, DF_BUDGET // max(len(terms), 1)))


def _scopes_and_postings(
    keys: list[str], terms: list[str]
) -> tuple[list[tuple[int, int, int, int]], dict[str, list[tuple]], dict[str, int]]:
    """The scopes among ``keys`` (``(id, docs, total_length, version)``), the postings
    ``(document id, tf, length)`` of each term in them (at most ``_per_term`` per term, the
    newest first) and each term's document frequency (exact up to ``_df_cap``): one statement."""
    keys = sorted(set(keys))
    found: dict[str, list[tuple]] = {term: [] for term in terms}
    if not keys:
        return [], found, dict.fromkeys(terms, 0)
    per_term, df_cap = _per_term(terms), _df_cap(terms)
    postings, scope_table = _table(SearchPosting), _table(SearchScope)
    in_scopes = "scope_id IN (SELECT id FROM s)"
    parts = ["SELECT -1 AS t, id AS a, docs AS b, total_length AS c, version AS d FROM s"]
    params: list = list(keys)
    for i, term in enumerate(terms):
        if len(keys) <= ORDERED_SCOPES:
            # One range of the (scope, term, document) index per scope, its id given as a value
            # (a scalar subquery), so the newest postings come first and the read stops at the
            # limit; with ``scope_id IN (…)`` the planner read every posting of a common term
            # and sorted them (docs/search.md, "At scale").
            ranges = " UNION ALL ".join(
                f"SELECT * FROM (SELECT document_id, tf, length FROM {postings} "
                f"WHERE scope_id = (SELECT id FROM s WHERE key = %s) AND term = %s "
                f"ORDER BY document_id DESC LIMIT %s) AS r{i}_{j}"
                for j in range(len(keys))
            )
            for key in keys:
                params += [key, term, per_term]
            parts.append(
                f"SELECT * FROM (SELECT {i} AS t, document_id AS a, tf AS b, length AS c, 0 AS d FROM ({ranges}) "
                f"AS u{i} ORDER BY document_id DESC LIMIT %s) AS p{i}"
            )
            params += [per_term]
        else:
            parts.append(
                f"SELECT * FROM (SELECT {i} AS t, document_id AS a, tf AS b, length AS c, 0 AS d FROM {postings} "
                f"WHERE {in_scopes} AND term = %s ORDER BY document_id DESC LIMIT %s) AS p{i}"
            )
            params += [term, per_term]
        # The document frequency, counted only as far as the cap (a common term counts as that).
        parts.append(
            f"SELECT -2, {i}, (SELECT COUNT(*) FROM (SELECT 1 FROM {postings} WHERE {in_scopes} AND term = %s "
            f"LIMIT %s) AS c{i}), 0, 0"
        )
        params += [term, df_cap]
    marks = ",".join("%s" for _ in keys)
    sql = f"WITH s AS (SELECT id, key, docs, total_length, version FROM {scope_table} WHERE key IN ({marks})) " + (
        " UNION ALL ".join(parts)
    )
    scopes, df = [], dict.fromkeys(terms, 0)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for t, a, b, c, d in cursor.fetchall():
            if t == -1:
                scopes.append((a, b, c, d))
            elif t == -2:
                df[terms[a]] = b
            else:
                found[terms[t]].append((a, b, c))
    scopes.sort()
    return scopes, found, df


def lexical_rank(
    scopes: list[tuple],
    terms: list[str],
    depth: int,
    postings: dict[str, list[tuple]],
    df: dict[str, int],
    coverage: dict[int, float] | None = None,
    absent: dict[str, float] | None = None,
) -> list[tuple[int, float]]:
    """``(document id, BM25 score)`` best first, from ``_scopes_and_postings``. ``coverage``,
    if given, receives each ranked document's share of the query's idf mass (the weight of the
    query's words it holds, a term found nowhere weighing most: 0 to 1); ``absent``, if given,
    the terms found nowhere in the scopes with their idf, and ``""`` the whole idf mass."""
    n_docs = sum(s[1] for s in scopes)
    if not terms or not n_docs:
        return []
    avg_len = max(sum(s[2] for s in scopes) / n_docs, 1.0)
    parts, total_idf = [], 0.0
    for i, term in enumerate(terms):
        rows = postings.get(term) or []
        freq = max(df.get(term, 0), len(rows))
        idf = math.log(1 + (n_docs - freq + 0.5) / (freq + 0.5))
        total_idf += idf
        if absent is not None and not freq:
            absent[term] = idf
        if rows:
            block = np.asarray(rows, dtype=np.float64).reshape(-1, 3)
            parts.append((i, idf, block))
    if not parts:
        return []
    # Every posting at once (numpy): its document, its BM25 share, its term's idf.
    doc_col = np.concatenate([block[:, 0] for _, _, block in parts]).astype(np.int64)
    tf = np.concatenate([block[:, 1] for _, _, block in parts])
    length = np.concatenate([block[:, 2] for _, _, block in parts])
    idf_col = np.concatenate([np.full(len(block), idf) for _, idf, block in parts])
    share = idf_col * tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * length / avg_len))
    docs, slot = np.unique(doc_col, return_inverse=True)
    # float64 with weights (numpy's stub types every bincount as intp, so the array type is widened)
    scores: np.ndarray = np.bincount(slot, weights=share, minlength=len(docs))
    matched = np.bincount(slot, minlength=len(docs))
    mass = np.bincount(slot, weights=idf_col, minlength=len(docs))
    # Coordination: a document with more of the question's words beats one with a single
    # rare word (idf is noisy in small scopes, and questions carry several content words).
    scores *= 1 - COORD_WEIGHT + COORD_WEIGHT * matched / len(terms)
    k = min(depth, len(docs))
    # Best first; equal scores: the newer document (higher id) first.
    order = np.lexsort((-docs, -scores))[:k]
    ranked = [(int(docs[j]), float(scores[j])) for j in order]
    if absent is not None:
        absent[""] = total_idf
    if coverage is not None and total_idf > 0:
        coverage.update((int(docs[j]), float(mass[j] / total_idf)) for j in order)
    return ranked


def vector_cache_bytes() -> int:
    return int(getattr(settings, "MEMORY_VECTOR_CACHE_BYTES", 200 * 1024 * 1024))


def exact_vector_limit(dim: int) -> int:
    """Documents per search whose vectors fit in the per-process cache for exact ranking."""
    return vector_cache_bytes() // (dim * DTYPE.itemsize + 16 + REF_BYTES)  # + id and recipe stamp


REF_BYTES = 120  # about what a cached key or ref (a tuple or a short string in a dict) costs


class _Entry(NamedTuple):
    """The cached vectors of one scope, as of ``version`` of the scope."""

    version: int
    model: str
    ids: np.ndarray  # document ids, one per row of ``matrix``
    matrix: np.ndarray
    # (document id, text hash, recipe) per row, where an id may be handed out again (SQLite)
    keys: list[tuple[int, str, int]] | None
    # else the id and recipe of each row as one number (``_stamps``)
    stamps: np.ndarray | None
    refs: dict[int, str]  # every document id of the scope (embedded or not) → its ref
    total: np.ndarray  # the sum of the rows of ``matrix`` (float64): the scope's share of the mean vector

    @property
    def nbytes(self) -> int:
        """About what the entry holds: its ids and vectors, a key per vector (SQLite) or a stamp
        and a ref per document of the scope."""
        keys = len(self.keys) * REF_BYTES if self.keys is not None else 0
        stamps = self.stamps.nbytes if self.stamps is not None else 0
        return self.ids.nbytes + self.matrix.nbytes + self.total.nbytes + keys + stamps + len(self.refs) * REF_BYTES


def _stamps(ids: ArrayLike, recipes: ArrayLike) -> np.ndarray:
    """A document's id and the recipe of its vector as one int64 (ids stay far below 2**47)."""
    return (np.asarray(ids, dtype=np.int64) << 16) | np.asarray(recipes, dtype=np.int64)


class _ScopeRow(NamedTuple):
    """A document of the scope as ``_VectorCache.entry`` reads it (no vector)."""

    id: int
    text_hash: str
    ref: str
    model: str
    recipe: int


def _vectors_of(doc_ids: np.ndarray, model: str, dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ids, recipes, matrix)`` of those of ``doc_ids`` that have a vector of ``model`` (PostgreSQL),
    in one statement whose results come back in binary: the vectors' bytes as stored, where
    Django's cursors (parameters bound on the client) get them as hex text to decode: the cold
    read of a user's 10,000 vectors took 141 ms this way against 326–406 ms (docs/search.md)."""
    if not len(doc_ids):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=DTYPE)
    import psycopg  # noqa: PLC0415 - only where PostgreSQL is the database

    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(
            f"SELECT id, recipe, vector FROM {_table(SearchDocument)}"
            " WHERE id = ANY(%s::bigint[]) AND model = %s AND octet_length(vector) = %s ORDER BY id",
            [doc_ids.tolist(), model, dim * np.dtype(DTYPE).itemsize],
            binary=True,
            prepare=False,  # no named statement left on the connection (a transaction pooler's)
        )
        rows = cursor.fetchall()
    ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
    recipes = np.fromiter((row[1] for row in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(row[2] for row in rows), dtype=DTYPE).reshape(len(rows), dim)
    return ids, recipes, matrix


class _VectorCache:
    """Per-process ``scope id → _Entry`` (version, model, document ids, matrix, keys, refs), least
    recently used out once the entries hold more than ``MEMORY_VECTOR_CACHE_BYTES`` (ids, vectors,
    keys and refs; the last entry stays whatever its size, while it is in use); ``refs`` maps
    every document id of the scope (embedded or not) to its ref, as of that version, so a search
    needs no statement to name its hits.

    On a version change the id list of the scope is read again (with the refs and the recipe of
    each vector); vectors already held are reused where the document and its vector's recipe are
    the same (a document's vector changes only when it is made again by a newer recipe:
    ``embedder.embed_stale``).
    """

    def __init__(self, max_bytes: int | None = None) -> None:
        self.max_bytes = max_bytes
        self._data: OrderedDict[tuple[str, object, int], _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self.bytes = 0

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self.bytes = 0
        VECTOR_CACHE_BYTES.set(0)

    @staticmethod
    def _load(doc_ids: list[int], model: str, *, with_hash: bool = False) -> Iterator[tuple[Any, ...]]:
        fields = ("id", "recipe", "text_hash", "vector") if with_hash else ("id", "recipe", "vector")
        for start in range(0, len(doc_ids), 2000):
            chunk = doc_ids[start : start + 2000]
            yield from SearchDocument.objects.filter(pk__in=chunk, model=model).values_list(*fields)

    def held(self, scope_id: int, version: int, model: str) -> _Entry | None:
        """The entry of a scope if it is current, else None (no statement)."""
        cache_key = (connection.alias, connection.settings_dict.get("NAME"), scope_id)
        with self._lock:
            entry = self._data.get(cache_key)
            if entry is not None and entry.version == version and entry.model == model:
                self._data.move_to_end(cache_key)
                return entry
        return None

    def refs(self, scope_id: int, version: int, model: str, dim: int) -> dict[int, str]:
        return self.entry(scope_id, version, model, dim).refs

    def _read_by_id(
        self, scope_id: int, model: str, dim: int, entry: _Entry | None, held_entry: _Entry | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, str], np.ndarray]:
        """A scope's new version where document ids are never handed out again (PostgreSQL
        sequences): a document's vector then changes only with its recipe (a new text is a new
        document), and its ref never. One narrow statement reads the scope's id list with each
        document's recipe and whether its vector is of ``model``; the refs only of documents above
        the highest one held (a document below it that is not held, committed late, is read with
        its ref by a second statement); only the new vectors are loaded. When nothing held went
        (the usual case: a message more) the new rows are appended to the held ones and the sum
        of the vectors is the held sum plus theirs. ``(ids, matrix, stamps, refs, total)``."""
        known = entry.refs if entry is not None else {}
        above = max(known, default=-1)
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT id, recipe, model = %s, CASE WHEN id > %s THEN ref END FROM {_table(SearchDocument)}"
                " WHERE scope_id = %s ORDER BY id",
                [model, above, scope_id],
            )
            rows = cursor.fetchall()
            ids_col, recipes_col, ours_col, refs_col = zip(*rows, strict=True) if rows else ((), (), (), ())
            present = set(ids_col)
            refs = {doc_id: ref for doc_id, ref in known.items() if doc_id in present}
            refs.update((doc_id, ref) for doc_id, ref in zip(ids_col, refs_col, strict=True) if ref is not None)
            if late := list(present - refs.keys()):
                cursor.execute(f"SELECT id, ref FROM {_table(SearchDocument)} WHERE id = ANY(%s)", [late])
                refs.update(cursor.fetchall())  # one gone meanwhile has no ref: not a hit to name
        ours = np.fromiter(ours_col, dtype=bool, count=len(rows))
        wanted_ids = np.fromiter(ids_col, dtype=np.int64, count=len(rows))[ours]
        wanted = _stamps(wanted_ids, np.fromiter(recipes_col, dtype=np.int64, count=len(rows))[ours])
        if held_entry is not None and held_entry.stamps is not None:
            keep = np.isin(held_entry.stamps, wanted)
            if keep.all():  # nothing held went: no copy
                old_ids, old_matrix, old_stamps = held_entry.ids, held_entry.matrix, held_entry.stamps
                old_total = held_entry.total
            else:
                old_ids, old_matrix = held_entry.ids[keep], held_entry.matrix[keep]
                old_stamps, old_total = held_entry.stamps[keep], None
        else:
            old_ids, old_matrix = np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
            old_stamps, old_total = np.zeros(0, dtype=np.int64), np.zeros(dim, dtype=np.float64)
        new_ids, new_recipes, added_rows = _vectors_of(np.setdiff1d(wanted_ids, old_ids), model, dim)
        if not len(new_ids):
            matrix, added = old_matrix, np.zeros(dim, dtype=np.float64)
        else:
            matrix, added = np.vstack([old_matrix, added_rows]), added_rows.sum(axis=0, dtype=np.float64)
        total = old_total + added if old_total is not None else matrix.sum(axis=0, dtype=np.float64)
        ids = np.concatenate([old_ids, new_ids])
        stamps = np.concatenate([old_stamps, _stamps(new_ids, new_recipes)])
        return ids, matrix, stamps, refs, total

    def _read_by_key(
        self, scope_id: int, model: str, dim: int, held_entry: _Entry | None
    ) -> tuple[np.ndarray, np.ndarray, list[tuple[int, str, int]], dict[int, str]]:
        """A scope's new version where an id may be handed out again (SQLite, after a rollback):
        every document's id, text hash, ref, model and recipe are read, and vectors already held
        are reused by (id, text hash, recipe). ``(ids, matrix, keys, refs)``."""
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT id, text_hash, ref, model, recipe FROM {_table(SearchDocument)} WHERE scope_id = %s ORDER BY id",
                [scope_id],
            )
            everything = [_ScopeRow(*row) for row in cursor.fetchall()]
        refs = {row.id: row.ref for row in everything}
        keys = [(row.id, row.text_hash, row.recipe) for row in everything if row.model == model]
        held = dict(zip(held_entry.keys, held_entry.matrix, strict=True)) if held_entry and held_entry.keys else {}
        missing = [key for key in keys if key not in held]
        wanted_keys = set(missing)
        for doc_id, recipe, digest, raw in self._load([k[0] for k in missing], model, with_hash=True):
            key = (doc_id, digest, recipe)
            if key in wanted_keys and raw is not None and len(raw) == dim * 4:
                held[key] = np.frombuffer(bytes(raw), dtype=DTYPE)
        keys = [key for key in keys if key in held]
        matrix = np.vstack([held[key] for key in keys]) if keys else np.zeros((0, dim), dtype=np.float32)
        ids = np.asarray([key[0] for key in keys], dtype=np.int64)
        return ids, matrix, keys, refs

    def entry(self, scope_id: int, version: int, model: str, dim: int) -> _Entry:
        current = self.held(scope_id, version, model)
        if current is not None:
            return current
        cache_key = (connection.alias, connection.settings_dict.get("NAME"), scope_id)
        with self._lock:
            entry = self._data.get(cache_key)
        held_entry = entry if entry is not None and entry.model == model else None
        if connection.vendor == "postgresql":
            ids, matrix, stamps, refs, total = self._read_by_id(scope_id, model, dim, entry, held_entry)
            keys = None
        else:
            ids, matrix, keys, refs = self._read_by_key(scope_id, model, dim, held_entry)
            stamps, total = None, matrix.sum(axis=0, dtype=np.float64)
        entry = _Entry(version, model, ids, matrix, keys, stamps, refs, total)
        limit = self.max_bytes if self.max_bytes is not None else vector_cache_bytes()
        with self._lock:
            self._data[cache_key] = entry
            self._data.move_to_end(cache_key)
            cache_bytes = sum(cached.nbytes for cached in self._data.values())
            while cache_bytes > limit and len(self._data) > 1:
                _, dropped = self._data.popitem(last=False)
                cache_bytes -= dropped.nbytes
            self.bytes = cache_bytes
        VECTOR_CACHE_BYTES.set(cache_bytes)
        return entry


vector_cache = _VectorCache()


def embed_query_early(query: str) -> bool:
    """Start embedding a search's query (its meaning ranking's text, as ``rank`` will ask for
    it) before the search runs; the search takes the vector under way. Only for a provider that
    works beside the caller (e5 on a helper thread, a remote service): False otherwise."""
    provider = get_provider()
    if provider.in_process or not query.strip():
        return False
    embed_query_soon(provider, query, early=True)
    return True


# The mean's share along the model's language direction (``language_direction``) stays in the
# query: which language a document is in is left to the query's own vector (and, in the searches
# that filter, to ``across_languages``), not to how the searched documents happen to be split.
LANGUAGE_OUT_OF_MEAN = True


def _ranking_vector(
    query_vector: np.ndarray, mean: Callable[[], np.ndarray | None], provider: EmbeddingProvider
) -> np.ndarray:
    """What the meaning ranking orders documents by: the query vector less ``hub_weight`` times
    the mean vector of the documents ranked (``mean()``, asked only when the provider has a
    weight). The dot product of a document with it is its similarity to the query less its share
    of what all the searched documents have in common: a turn like "Mia, that's huge!" is close to
    any question about Mia's life, and to every other turn of the chat, and no longer outranks
    the one turn that says what was asked (docs/search.md, "Hubs")."""
    weight = getattr(provider, "hub_weight", 0.0)
    if not weight:
        return query_vector
    centre = mean()
    if centre is None:
        return query_vector
    if LANGUAGE_OUT_OF_MEAN:
        direction = language_direction(provider)
        centre = centre - float(centre @ direction) * direction
    return (query_vector - weight * centre).astype(DTYPE)


def dense_rank(
    scopes: list[tuple],
    query: str,
    depth: int,
    *,
    provider: EmbeddingProvider,
    floor: bool = False,
    pending: Future | None = None,
    across: bool | str | None = None,
    margins: dict[int, float] | None = None,
    asked_in_chinese: bool | None = None,
) -> tuple[list[tuple[int, float]], int]:
    """``(document id, score)`` best first, and how many documents have no vector (-1: too many
    documents to compare exactly). The score is the dot product with ``_ranking_vector``: the
    cosine similarity to the query, less the document's share of the searched documents' mean
    where the provider has a ``hub_weight``. The floors are measured on the cosine similarity:
    at most the model's ``min_score`` is no match; with ``floor``, only documents that match by
    meaning: more similar to the query than its background similarity plus the model's
    ``match_floor``, and (a ``calibrated`` provider, ranked in memory) more than unrelated queries
    score for that document (``_calibrated_floors``). ``across``: the query vector is
    taken ``across_languages`` (default: as ``floor``; docs/search.md; ``ACROSS_AUTO``: where the
    searched documents mix languages, ``MIXED_SHARE``, ranked in memory). ``margins``, if given and
    the floors are calibrated, receives every embedded document's similarity less its floor
    (positive: it matches by meaning). ``asked_in_chinese``: the language of the question the
    floors compare with (default: ``query``'s, which may carry its translation).
    ``pending``: the query's embedding already under way (``embed_query_soon``, with the
    same ``across_languages``), else it is embedded here."""
    across = floor if across is None else across
    n_docs = sum(s[1] for s in scopes)
    if not n_docs or not query.strip():
        return [], 0
    if pending is None:
        pending = embed_query_soon(provider, query, across_languages=across is True)
    if vectorstore.use_pgvector(n_docs, provider, fits_in_memory=n_docs <= exact_vector_limit(provider.dim)):
        query_vector = pending.result()
        ranking_vector = _ranking_vector(
            query_vector, lambda: vectorstore.mean_vector(scopes, provider.model, provider.dim), provider
        )
        ranked = vectorstore.rank(
            [s[0] for s in scopes],
            ranking_vector,
            depth,
            model=provider.model,
            dim=provider.dim,
            similar_to=query_vector,
            above=_floor_of(query_vector, provider, floor),
        )
        missing = max(n_docs - vectorstore.embedded_count(scopes, provider.model), 0)
        return ranked, missing
    if n_docs > exact_vector_limit(provider.dim):
        return [], -1
    entries = [
        vector_cache.entry(scope_id, version, provider.model, provider.dim) for scope_id, _, _, version in scopes
    ]
    ids = np.concatenate([entry.ids for entry in entries]) if entries else np.zeros(0, dtype=np.int64)
    missing = max(n_docs - len(ids), 0)
    query_vector = pending.result()  # also when nothing is embedded: a failing provider says so
    if not len(ids):
        return [], missing
    chinese_query = is_chinese(query) if asked_in_chinese is None else asked_in_chinese
    if across == ACROSS_AUTO:
        across = _mixed_languages(entries, provider, chinese_query)
        if across:
            query_vector = without_language(provider, query_vector)
    ranking_vector = _ranking_vector(
        query_vector, lambda: np.sum([entry.total for entry in entries], axis=0) / len(ids), provider
    )
    sims = np.concatenate([entry.matrix @ ranking_vector for entry in entries])  # no copy of the matrices
    similar = sims
    if ranking_vector is not query_vector:
        similar = np.concatenate([entry.matrix @ query_vector for entry in entries])
    # The floor first, then the best: a document below it never takes the place of one above.
    threshold: float | np.ndarray = _floor_of(query_vector, provider, floor)
    if floor and getattr(provider, "calibrated", False):
        threshold = np.maximum(
            threshold,
            float(background_similarity(provider, query_vector))
            + _calibrated_floors(scopes, entries, provider, bool(across), chinese_query),
        )
        if margins is not None:
            margins.update(zip(ids.tolist(), (similar - threshold).tolist(), strict=True))
    matches = similar > threshold
    k = min(depth, int(np.count_nonzero(matches)))
    if not k:
        return [], missing
    sims = np.where(matches, sims, -np.inf)
    top = np.argpartition(-sims, k - 1)[:k]
    top = top[np.argsort(-sims[top], kind="stable")]
    return [(int(ids[i]), float(sims[i])) for i in top], missing


def _mixed_languages(entries: list[_Entry], provider: EmbeddingProvider, chinese_query: bool) -> bool:
    """Whether at least ``MIXED_SHARE`` of the documents are in the other language than the query."""
    direction = language_direction(provider)
    if not np.any(direction):
        return False
    chinese = np.concatenate([entry.matrix @ direction > 0 for entry in entries])
    other = np.count_nonzero(chinese != chinese_query)
    return bool(other >= MIXED_SHARE * len(chinese))


class _Calibration(NamedTuple):
    """What the background queries score for one scope's documents, as of a version: per
    document, the ``BACKGROUND_QUANTILE`` of its similarity less background over the English
    background queries (row 0) and over the Chinese ones (row 1)."""

    floors: np.ndarray  # (2, documents)


# Per process, least recently used out: 16 bytes a document, about 1 % of what its vector takes
# in the vector cache, but kept for scopes that cache has let go too.
CALIBRATION_BYTES = 32 * 1024 * 1024
_calibrations: OrderedDict[tuple[object, ...], _Calibration] = OrderedDict()
_calibrations_lock = threading.Lock()


def _calibration(scope: tuple[int, ...], entry: _Entry, provider: EmbeddingProvider, across: bool) -> _Calibration:
    key = (connection.alias, connection.settings_dict.get("NAME"), scope[0], entry.version, provider.model, across)
    with _calibrations_lock:
        found = _calibrations.get(key)
        if found is not None and found.floors.shape[1] == len(entry.ids):
            _calibrations.move_to_end(key)
            return found
    queries, background, chinese = background_queries(provider, across_languages=across)
    relative = entry.matrix @ queries.T - background  # (documents, background queries)
    floors = np.stack(
        [np.quantile(relative[:, chinese == group], BACKGROUND_QUANTILE, axis=1) for group in (False, True)]
    )
    found = _Calibration(floors.astype(np.float64))
    with _calibrations_lock:
        _calibrations[key] = found
        held = sum(c.floors.nbytes for c in _calibrations.values())
        while held > CALIBRATION_BYTES and len(_calibrations) > 1:
            held -= _calibrations.popitem(last=False)[1].floors.nbytes
    return found


def _calibrated_floors(
    scopes: list[tuple[int, ...]], entries: list[_Entry], provider: EmbeddingProvider, across: bool, chinese_query: bool
) -> np.ndarray:
    """Per embedded document (the rows of ``entries`` in order): how far above its background
    similarity a query must be to match it: more than the background queries of the query's
    language score for that document (``_Calibration``) by ``BACKGROUND_MARGIN``, and at least
    the model's ``match_floor``."""
    floors = np.concatenate(
        [
            _calibration(scope, entry, provider, across).floors[int(chinese_query)]
            for scope, entry in zip(scopes, entries, strict=True)
        ]
    )
    floored: np.ndarray = np.maximum(provider.match_floor, floors + BACKGROUND_MARGIN)
    return floored


def _floor_of(query_vector: np.ndarray, provider: EmbeddingProvider, floor: bool) -> float:
    """The cosine similarity a document must be above to match: the model's ``min_score``; with
    ``floor``, also the query's background similarity plus ``match_floor``."""
    threshold: float = provider.min_score
    if floor:
        threshold = max(threshold, float(background_similarity(provider, query_vector)) + provider.match_floor)
    return threshold


@dataclass
class Rankings:
    """Both rankings of a search, ``(ref, score)`` best first, before fusion."""

    lexical: list[tuple[str, float]]
    dense: list[tuple[str, float]]
    terms: list[str]
    mode: str
    depth: int
    not_embedded: int = 0
    warnings: list[str] = field(default_factory=list)
    coverage: dict[str, float] = field(default_factory=dict)  # ref → share of the query's idf mass
    absent: dict[str, float] = field(default_factory=dict)  # terms found nowhere → idf; "" → all terms' idf


def _refs_of(scopes: list[tuple], doc_ids: set[int], provider: EmbeddingProvider) -> dict[int, str]:
    """Refs of ``doc_ids``: from the per-process cache of the scopes' documents (no statement
    once a scope's version is held) where the in-memory path ranks them; else one query (scopes
    too large to hold, or ranked by PostgreSQL: their vectors are not loaded just for refs)."""
    n_docs = sum(s[1] for s in scopes)
    fits = n_docs <= exact_vector_limit(provider.dim)
    if fits and not vectorstore.use_pgvector(n_docs, provider, fits_in_memory=fits):
        refs: dict[int, str] = {}
        for scope_id, _, _, version in scopes:
            refs.update(vector_cache.refs(scope_id, version, provider.model, provider.dim))
        return {d: refs[d] for d in doc_ids if d in refs}
    return dict(SearchDocument.objects.filter(pk__in=doc_ids).values_list("id", "ref"))


@observe_search  # latency per mode on /metrics
def rank(
    *,
    scopes: list[str],
    query: str,
    depth: int,
    mode: str | None = None,
    floor: bool = False,
    meanwhile: Callable[[tuple[int, ...]], object] | None = None,
    dense_query: str | None = None,
    across: bool | str | None = None,
) -> Rankings:
    """Both rankings of the documents of ``scopes`` for ``query`` (each at most ``depth`` deep),
    for callers that fuse themselves (``fuse``); ``search`` does both. ``floor``: as ``search``'s.
    ``meanwhile``: the caller's work that does not need the rankings, called once the words are
    ranked and before the meaning ranking waits for the query's vector (the model embeds it on
    a helper thread meanwhile), with the versions of the scopes as read (``SearchScope.version``;
    none for a scope that does not exist); called in every mode, also when there is nothing to rank.
    ``dense_query``: the text the meaning ranking embeds, when not ``query`` (the history search
    leaves the names of speakers out of it). ``across``: the query vector is taken
    ``across_languages`` (default: as ``floor``).

    With ``floor``, the query's words in the other language (``lexicon.translate``) are ranked
    as a second word query (a document keeps the better of its two scores and coverages) and,
    for a short query (``DENSE_TRANSLATION_WORDS``), follow it in the text the model embeds; a document found
    by words that holds less than ``LEXICAL_ALONE`` of the query's weight is kept only if it is
    close to matching by meaning (``LEXICAL_SLACK``; where the floors are calibrated)."""
    mode = mode or default_mode()
    across = floor if across is None else across
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    terms = query_terms(query)
    depth = min(max(depth, 1), MAX_DEPTH)
    result = Rankings(lexical=[], dense=[], terms=terms, mode=mode, depth=depth)
    wanted_terms = terms if mode in ("lexical", "hybrid") else []
    provider = get_provider()
    # The model embeds the query on a helper thread while the words are read and ranked here.
    dense_query = query if dense_query is None else dense_query
    groups, content_words, function_words = (
        lexicon.translate_words(query) if floor and TRANSLATE_QUERIES else ([], 0, 0)
    )
    translated = " ".join(dict.fromkeys(word for group in groups for word in group))
    extra_terms = (
        [t for t in query_terms(translated) if t not in terms][:MAX_QUERY_TERMS]
        if translated and mode != "dense"
        else []
    )
    if (
        translated
        and content_words <= DENSE_TRANSLATION_WORDS
        and not function_words
        and getattr(provider, "calibrated", False)
        and dense_query.strip()
    ):
        dense_query = f"{dense_query} {translated}"
    dense_wanted = mode != "lexical" and dense_query.strip()
    pending = embed_query_soon(provider, dense_query, across_languages=across is True) if dense_wanted else None
    rows, postings, df = _scopes_and_postings(scopes, wanted_terms + extra_terms)
    coverage: dict[int, float] = {}
    lexical = (
        lexical_rank(rows, wanted_terms, depth, postings, df, coverage, result.absent) if rows and wanted_terms else []
    )
    if rows and extra_terms:
        translated_ranking = lexical_rank(rows, extra_terms, depth, postings, df)
        shares = _translation_coverage(groups, content_words, postings)
        lexical = _with_translation(lexical, coverage, translated_ranking, shares, depth)
    if meanwhile is not None:
        meanwhile(tuple(scope[3] for scope in rows))
    if not rows:
        return result
    dense: list[tuple[int, float]] = []
    margins: dict[int, float] = {}
    if pending is not None:
        dense, result.not_embedded = dense_rank(
            rows,
            dense_query,
            depth,
            provider=provider,
            floor=floor,
            pending=pending,
            across=across,
            margins=margins,
            asked_in_chinese=is_chinese(query),
        )
        if margins:
            lexical = [
                (d, score)
                for d, score in lexical
                if coverage.get(d, 0.0) >= LEXICAL_ALONE
                or margins.get(d, math.inf) > -LEXICAL_SLACK  # not embedded yet: by its words
            ]
        if result.not_embedded < 0:
            result.not_embedded = 0
            result.warnings.append(
                f"More than {exact_vector_limit(provider.dim)} items to compare by meaning: "
                "they were ranked by their words only."
            )
        elif result.not_embedded:
            result.warnings.append(
                f"{result.not_embedded} item(s) are not embedded yet: they were ranked by their words only."
            )
    refs = _refs_of(rows, {d for d, _ in [*lexical, *dense]}, provider)
    result.lexical = [(refs[d], score) for d, score in lexical if d in refs]
    result.dense = [(refs[d], score) for d, score in dense if d in refs]
    result.coverage = {refs[d]: share for d, share in coverage.items() if d in refs}
    return result


def _translation_coverage(
    groups: list[list[str]], content_words: int, postings: dict[str, list[tuple]]
) -> dict[int, float]:
    """Per document found by the query's translation: the share of the query's content words
    (``lexicon.translate_words``) one of whose translations it holds (every term of it), the
    translations of one word being alternatives."""
    held: dict[int, int] = {}
    for group in groups:
        docs: set[int] = set()
        for word in group:
            terms = query_terms(word)
            if terms:
                docs |= set.intersection(*({row[0] for row in postings.get(term) or []} for term in terms))
        for doc in docs:
            held[doc] = held.get(doc, 0) + 1
    return {doc: count / max(content_words, 1) for doc, count in held.items()}


def _with_translation(
    lexical: list[tuple[int, float]],
    coverage: dict[int, float],
    translated: list[tuple[int, float]],
    translated_coverage: dict[int, float],
    depth: int,
) -> list[tuple[int, float]]:
    """The word ranking of the query and that of its translation as one: each document keeps
    the better score and the better coverage (``coverage`` is updated)."""
    scores = dict(lexical)
    for doc, score in translated:
        scores[doc] = max(scores.get(doc, 0.0), score)
        coverage[doc] = max(coverage.get(doc, 0.0), translated_coverage.get(doc, 0.0))
    return sorted(scores.items(), key=lambda pair: (-pair[1], -pair[0]))[:depth]


def fuse(
    rankings: Rankings, *, lexical_weight: float = 1.0, coverage_power: float | None = None
) -> list[tuple[str, float]]:
    """The ranking a search returns: one of them in a single mode, their reciprocal rank
    fusion in hybrid mode (the word ranking weighted by ``lexical_weight``).

    Score-aware fusion: each document's share of the word ranking is also weighted by its
    coverage (``Rankings.coverage``) to the power ``coverage_power`` (default
    ``COVERAGE_POWER``), so a document that holds the question's weighty words keeps its full
    share and one found by a single common word adds little."""
    if rankings.mode == "lexical":
        return rankings.lexical[: rankings.depth]
    if rankings.mode == "dense":
        return rankings.dense[: rankings.depth]
    power = COVERAGE_POWER if coverage_power is None else coverage_power
    fused: dict[str, float] = {}
    for rank, (ref, _) in enumerate(rankings.lexical, start=1):
        share = rankings.coverage.get(ref, 1.0) ** power if power else 1.0
        fused[ref] = fused.get(ref, 0.0) + lexical_weight * share / (RRF_K + rank)
    for rank, (ref, _) in enumerate(rankings.dense, start=1):
        fused[ref] = fused.get(ref, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(fused.items(), key=lambda pair: pair[1], reverse=True)[: rankings.depth]


def search(
    *,
    scopes: list[str],
    query: str,
    limit: int,
    mode: str | None = None,
    depth: int | None = None,
    expand_lexical: Callable[[list[tuple[str, float]]], list[tuple[str, float]]] | None = None,
    floor: bool = False,
    across: bool | str | None = None,
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
    depth = min(max(depth or limit, limit, 1), MAX_DEPTH)
    if limit <= 0:
        return Result(hits=[], terms=query_terms(query), mode=mode)
    rankings = rank(scopes=scopes, query=query, depth=depth, mode=mode, floor=floor, across=across)
    if expand_lexical is not None and rankings.lexical:
        rankings.lexical = expand_lexical(rankings.lexical)[:depth]
    ranked = fuse(rankings)
    return Result(
        hits=[Ranked(ref=ref, score=score) for ref, score in ranked],
        terms=rankings.terms,
        mode=mode,
        not_embedded=rankings.not_embedded,
        warnings=rankings.warnings,
    )
