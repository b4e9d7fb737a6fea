"""The word ranking (docs/search.md): Okapi BM25 with the statistics of the searched scopes, the
document frequencies counted in the word index up to a cap per term (``_df_cap``), and the
candidates read term by term from the postings, at most ``POSTINGS_BUDGET`` in all."""

import math

import numpy as np
from django.db import connection
from django.db.models import Model

from memory_app.search.models import SearchPosting, SearchScope

BM25_K1 = 1.2
BM25_B = 0.75
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


def _table(model: type[Model]) -> str:
    table: str = model._meta.db_table
    return table


def _per_term(terms: list[str]) -> int:
    return max(MIN_TERM_POSTINGS, POSTINGS_BUDGET // max(len(terms), 1))


def _df_cap(terms: list[str]) -> int:
    return max(DF_MIN_CAP, min(DF_CAP, DF_BUDGET // max(len(terms), 1)))


def scopes_and_postings(
    keys: list[str], terms: list[str], *, counted: list[str] | None = None
) -> tuple[list[tuple[int, int, int, int]], dict[str, list[tuple]], dict[str, int]]:
    """The scopes among ``keys`` (``(id, docs, total_length, version)``), the postings
    ``(document id, tf, length)`` of each term in them (at most ``_per_term`` per term, the
    newest first) and each term's document frequency (exact up to ``_df_cap``): one statement.
    ``counted``: more terms whose document frequency alone is wanted (a search by meaning only:
    ``engine.common_words``)."""
    keys = sorted(set(keys))
    found: dict[str, list[tuple]] = {term: [] for term in terms}
    only_counted = [term for term in dict.fromkeys(counted or []) if term not in found]
    if not keys:
        return [], found, dict.fromkeys([*terms, *only_counted], 0)
    per_term, df_cap = _per_term(terms), _df_cap([*terms, *only_counted])
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
    every = [*terms, *only_counted]
    for i, term in enumerate(every):
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
    scopes, df = [], dict.fromkeys(every, 0)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for t, a, b, c, d in cursor.fetchall():
            if t == -1:
                scopes.append((a, b, c, d))
            elif t == -2:
                df[every[a]] = b
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
    """``(document id, BM25 score)`` best first, from ``scopes_and_postings``. ``coverage``,
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
