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

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings

from config.metrics import observe_search
from memory_app.search import dense as dense_module
from memory_app.search import lexicon, vectorstore
from memory_app.search.analysis import MAX_QUERY_TERMS, match_spans, query_terms
from memory_app.search.background import is_chinese
from memory_app.search.dense import dense_rank, question_like
from memory_app.search.embeddings import (
    EmbeddingProvider,
    embed_query_soon,
    get_provider,
    term_vectors_soon,
)
from memory_app.search.lexical import lexical_rank, scopes_and_postings
from memory_app.search.models import SearchDocument
from memory_app.search.vectorcache import exact_vector_limit, vector_cache

MODES = ("hybrid", "lexical", "dense")
RRF_K = 60
COVERAGE_POWER = 2.0  # score-aware fusion (``fuse``); 0: plain reciprocal rank fusion
MAX_DEPTH = 200
LEXICAL_ALONE = 0.99
LEXICAL_SLACK = 0.0
# Where the floors are calibrated, a document found by words that holds less than
# ``LEXICAL_ALONE`` of the query's weight is kept only if it is close to matching by meaning
# (``LEXICAL_SLACK``) and, in a scope whose gates the query does not clear or where it is no
# nearer the query than the query's nearest background questions are (``dense.dense_rank``'s
# ``gated``: by meaning, it does not answer it), holds at least ``LEXICAL_GATED`` of it:
# 离心机是怎么工作的 ("how does a centrifuge work") is not answered by 我的工作是牙医 ("my work
# is dentistry"), whose one shared word is about a tenth of the question's weight, while the
# memory that answers 下雨天怎么上班 ("how do I get to work when it rains") holds over 30 % of it
# (docs/search.md, "Words held to the gates, and the nearest questions"). None: such documents
# are kept as in any other scope.
LEXICAL_GATED: float | None = 0.3
# The query's words in the other language (``lexicon.translate``) are searched as a second word
# query, and for keywords (no function word) of at most ``DENSE_TRANSLATION_WORDS`` content words
# the model embeds the query followed by them (docs/search.md, "Across languages"): a word alone does not carry its
# meaning across languages in e5 ("peanuts" and 我对花生过敏), a question does, and the dictionary's
# other senses only blur it.
TRANSLATE_QUERIES = True
DENSE_TRANSLATION_WORDS = 2
# At most this many of the translations follow the query in the text the model embeds, taken in
# turn from each word's best: the model's time grows with the text's tokens (a question of two
# words with eight translations took ~45 ms to embed against ~15 ms as asked), the later senses
# blur the vector (two were better than four on the development set, docs/search.md), and the
# word ranking searches them all anyway.
DENSE_TRANSLATIONS = 2
# A word of the query that at least this share of the searched documents holds (and at least
# ``COMMON_TERM_MIN_DOCS`` of them) is common there: the meaning ranking takes the model's
# ``common_term_weight`` of the query's share along it (``dense._ranking_vector``; at most
# ``COMMON_TERMS`` such words, in the text the model embeds). In a chat's extracted statements
# nearly every one names its two people, and a question's "Mia" weighs as much as what it asks
# about her. The words' own ranking already weighs such a word little (idf); this is the same
# for the meaning (docs/search.md, "Common words"). A search by meaning only counts the
# query's words for it.
COMMON_TERM_SHARE = 0.2
COMMON_TERM_MIN_DOCS = 10
COMMON_TERMS = 3


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


def embed_query_early(query: str, *, across_languages: bool = False) -> bool:
    """Start embedding a search's query (its meaning ranking's text, as ``rank`` will ask for
    it) before the search runs; the search takes the vector under way. Only for a provider that
    works beside the caller (e5 on a helper thread, a remote service): False otherwise."""
    provider = get_provider()
    if provider.in_process or not query.strip():
        return False
    embed_query_soon(provider, query, across_languages=across_languages, early=True)
    return True


def search_early(query: str, *, floor: bool) -> bool:
    """``embed_query_early`` for a ``search`` (or ``rank``) of ``query`` with ``floor`` and no
    ``dense_query`` that is about to run in the default mode: the text and the vector's kind
    that search will ask the model for. Nothing is read; False when nothing was started (a
    words-only mode, an empty query, a model that runs in the caller's thread)."""
    if default_mode() == "lexical":
        return False
    provider = get_provider()
    return embed_query_early(meaning_text(query, query, floor, provider)[3], across_languages=floor)


def meaning_text(
    query: str, dense_query: str, floor: bool, provider: EmbeddingProvider
) -> tuple[list[list[str]], int, str, str]:
    """The query's words in the other language (``lexicon.translate_words``, with ``floor``): their
    groups, the count of content words and the translation as one string; and the text the
    meaning ranking embeds, ``dense_query`` followed by the translation for a short keyword
    query (``DENSE_TRANSLATION_WORDS``)."""
    groups, content_words, function_words = (
        lexicon.translate_words(query) if floor and TRANSLATE_QUERIES else ([], 0, 0)
    )
    translated = " ".join(dict.fromkeys(word for group in groups for word in group))
    if (
        translated
        and content_words <= DENSE_TRANSLATION_WORDS
        and not function_words
        and getattr(provider, "calibrated", False)
        and dense_query.strip()
    ):
        in_turn = (word for rank in itertools.zip_longest(*groups) for word in rank if word is not None)
        dense_query = f"{dense_query} {' '.join(list(dict.fromkeys(in_turn))[:DENSE_TRANSLATIONS])}"
    return groups, content_words, translated, dense_query


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
    close to matching by meaning (``LEXICAL_SLACK``; where the floors are calibrated) and, where
    by meaning it does not answer the query (``dense_rank``'s ``gated``), holds
    ``LEXICAL_GATED`` of its weight."""
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
    groups, content_words, translated, dense_query = meaning_text(
        query, query if dense_query is None else dense_query, floor, provider
    )
    extra_terms = (
        [t for t in query_terms(translated) if t not in terms][:MAX_QUERY_TERMS]
        if translated and mode != "dense"
        else []
    )
    dense_wanted = mode != "lexical" and dense_query.strip()
    pending = embed_query_soon(provider, dense_query, across_languages=across is True) if dense_wanted else None
    common_weight: float = getattr(provider, "common_term_weight", 0.0)
    counted = terms if dense_wanted and common_weight and not wanted_terms else []  # meaning only
    rows, postings, df = scopes_and_postings(scopes, wanted_terms + extra_terms, counted=counted)
    common = common_words(dense_query, terms, df, sum(row[1] for row in rows)) if dense_wanted and common_weight else []
    common_pending = term_vectors_soon(provider, common) if common else None
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
    gated: set[int] = set()
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
            gate=_gate(query, floor, postings),
            gated=gated,
            common=common_pending,
        )
        if margins:
            lexical = [(d, score) for d, score in lexical if _kept_by_words(coverage.get(d, 0.0), d, margins, gated)]
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


def common_words(text: str, terms: list[str], df: dict[str, int], n_docs: int) -> list[str]:
    """The words of ``text`` (as written there: "Mia", 林芳) whose terms among ``terms`` are common in
    the searched documents (``COMMON_TERM_SHARE`` of ``n_docs``, ``COMMON_TERM_MIN_DOCS``), at most
    ``COMMON_TERMS``. Adjacent CJK bigrams that are each common make one word (林小芳)."""
    floor = max(COMMON_TERM_MIN_DOCS, COMMON_TERM_SHARE * n_docs)
    common = [term for term in terms if df.get(term, 0) >= floor]
    if not common:
        return []
    words = dict.fromkeys(text[start:end] for start, end in match_spans(text, common))
    return [word for word in words if word.strip()][:COMMON_TERMS]


def _kept_by_words(share: float, doc: int, margins: dict[int, float], gated: set[int]) -> bool:
    """Whether a document found by words, holding ``share`` of the query's weight, stays in a
    search whose floors are calibrated (``LEXICAL_ALONE``, ``LEXICAL_SLACK``, ``LEXICAL_GATED``);
    one not embedded yet is judged by its words."""
    if share >= LEXICAL_ALONE:
        return True
    if margins.get(doc, math.inf) <= -LEXICAL_SLACK:
        return False
    return doc not in gated or LEXICAL_GATED is None or share >= LEXICAL_GATED


def _gate(query: str, floor: bool, postings: dict[str, list[tuple]]) -> float | None:
    """The gate of a search that filters (``dense.dense_rank``'s ``gate``): a question's, or the
    stricter one of a query whose words are mostly not words (``lexicon.mostly_unread``) and none
    of which a searched document holds; none for other keywords (a word across languages must
    not need to stand out)."""
    if not floor:
        return None
    if not any(postings.values()) and lexicon.mostly_unread(query):
        return dense_module.UNKNOWN_GATE_QUANTILE
    if question_like(query):
        return dense_module.GATE_QUANTILE
    return None


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
