"""Ranking shared by every search: BM25 over candidate texts and reciprocal rank fusion.

BM25 (k1=1.2, b=0.75) counts each term where it occurs in the normalised text (word terms at
the start of a word, CJK bigrams anywhere; see ``analysis.count_occurrences``), with lengths in
characters and document frequencies over the candidates given. The score is then scaled by the share of query terms
the text covers, and a text that contains the whole query verbatim gets a bonus, so a
natural-language question ranks texts sharing its content words, not only exact substrings.
"""

import math
from collections.abc import Hashable, Iterable, Sequence

from memory_app.search.analysis import count_occurrences, normalize

BM25_K1 = 1.2
BM25_B = 0.75
RRF_K = 60
VERBATIM_BONUS = 1.0


def bm25_scores(texts: Sequence[str], terms: list[str], query: str) -> list[float]:
    """One score per text (0.0 when it contains no term)."""
    if not texts or not terms:
        return [0.0] * len(texts)
    lowered = [" ".join(normalize(text).split()) for text in texts]
    counts = [{t: count_occurrences(text, t) for t in terms} for text in lowered]
    n_docs = len(lowered)
    lengths = [max(len(text), 1) for text in lowered]
    avg_len = sum(lengths) / n_docs
    df = {t: sum(1 for tfs in counts if tfs[t]) for t in terms}
    idf = {t: math.log(1 + (n_docs - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
    whole = " ".join(normalize(query).split())
    verbatim = whole if len(whole) >= 2 else None
    scores = []
    for text, tfs, length in zip(lowered, counts, lengths, strict=True):
        score, covered = 0.0, 0
        norm = BM25_K1 * (1 - BM25_B + BM25_B * length / avg_len)
        for term in terms:
            tf = tfs[term]
            if not tf:
                continue
            covered += 1
            score += idf[term] * tf * (BM25_K1 + 1) / (tf + norm)
        if not covered:
            scores.append(0.0)
            continue
        score *= 0.5 + 0.5 * covered / len(terms)
        if verbatim is not None and count_occurrences(text, verbatim):
            score += VERBATIM_BONUS
        scores.append(score)
    return scores


def rrf_fuse(rankings: Iterable[Sequence[Hashable]], *, k: int = RRF_K) -> list[tuple[Hashable, float]]:
    """Reciprocal rank fusion: ``score = Σ 1 / (k + rank)`` over the rankings (rank from 1);
    best first, ties in order of first appearance."""
    fused: dict[Hashable, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
    return sorted(fused.items(), key=lambda pair: pair[1], reverse=True)
