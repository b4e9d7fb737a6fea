"""The meaning ranking (docs/search.md): cosine similarity of the query vector with the scopes'
document vectors, exactly from the vector cache or by pgvector's index, and what matches at all
in a search that filters: the floors calibrated per document against background queries."""

import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from typing import NamedTuple

import numpy as np
from django.db import connection

from memory_app.search import vectorstore
from memory_app.search.background import background_queries, background_questions, is_chinese
from memory_app.search.embeddings import (
    CHINESE_CHARS,
    DTYPE,
    EmbeddingProvider,
    background_similarity,
    embed_query_soon,
    language_direction,
    without_language,
)
from memory_app.search.vectorcache import CacheEntry, exact_vector_limit, vector_cache

logger = logging.getLogger(__name__)

# Searches that filter (a list's ``q``, the memory home, ``/api/memory/search``): what matches at
# all (docs/search.md, "Nothing matches"). A document matches by meaning when its similarity to
# the query, less the query's background similarity, is above what the background queries
# (``BACKGROUND_QUERIES``) of the query's language score for that document (the
# ``BACKGROUND_QUANTILE`` of them, plus ``BACKGROUND_MARGIN``), and above the model's
# ``match_floor``. A document found by words holds most of the query's weight (``LEXICAL_ALONE``
# of its idf mass), or is close to matching by meaning too (``LEXICAL_SLACK``).
# ``across="auto"`` (``/api/memory/search``): the query vector is taken across languages only
# when at least this share of the searched documents is in the other language than the query
# (docs/search.md, "Nothing matches"); a one-language chat keeps the model's own vector.
ACROSS_AUTO = "auto"
MIXED_SHARE = 0.1
BACKGROUND_QUANTILE = 0.9
BACKGROUND_MARGIN = 0.01
# In the same searches, a document's place in the ranking is its score less this share of its
# mean cosine similarity to all the background queries: a document close to any question (small
# talk that names the person, "Mia is feeling a bit under the weather today") gives way to the one
# that says what was asked. Measured with ``bench/dialogue_eval.py --part memory`` and the
# retrieval guards (docs/search.md, "Background level").
BACKGROUND_RANK_WEIGHT = 0.5
# ... and a scope matches a question (``question_like``) by meaning only if its best document
# clears its floor by more than this quantile of what the background queries of the question's
# language reach at best over that scope: each floor lets a tenth of unrelated queries through,
# and among many documents one of them nearly always does. None: no such gate.
GATE_QUANTILE: float | None = 0.85
# A query whose words are mostly not words (``lexicon.mostly_unread``: made-up words, random
# letters, rare characters, alphabets of languages not read) and none of which any searched
# document holds is gated too, at the quantile of the most that any background query reaches:
# nothing in it says what it is about, so only a document that stands out more than for every
# unrelated question matches.
UNKNOWN_GATE_QUANTILE: float | None = 1.0
# A gated query must also stand out from the questions nobody's memory answers: its best
# document's similarity less its level, its mean similarity to the nearest background questions
# of its language (``_question_level``, ``QUESTION_NEIGHBOURS``), must be above this quantile of
# what the background questions reach the same way over that scope (their best document less
# their level among the other background questions). A general-knowledge question is as close
# to those questions as they are to each other, and its best memory is no closer to it than
# theirs; a question about the person's life is further from them and nearer its memory
# (docs/search.md, "Questions nobody's memory answers" and "More questions to stand out from").
# None: no such gate.
STAND_OUT_QUANTILE: float | None = 0.8
# ... and, in a search of several scopes, stand out over all of them together: its best document
# of any scope less its question level above the same quantile of the background questions' best
# over every scope. Each scope's gate lets some unrelated questions through, and a search of many
# gives one of them more chances to.
STAND_OUT_TOGETHER = True
# A question's level (``_question_level``) is its mean similarity to this many background
# questions of its language, those nearest to it, not to all of them (0: all). A how-to question
# is as close to a notes line of how to answer ("Use the metric system") as the background how-to
# questions are, and measured against all the questions, every how-to question stands out there
# by being one; measured against its own kind, it must stand out from them. A question about the
# person's life has no near neighbours there and keeps its lead (docs/search.md, "Words held to
# the gates, and the nearest questions").
QUESTION_NEIGHBOURS = 10
# ... and each document of a gated query must be nearer to it than the query's nearest
# background questions are to that document on average, by the model's ``apart_margin``
# (``_nearest_questions``): a document close to every question of the query's kind ("Use the
# metric system" and the how-to questions) is close to the query for its kind, not for what it
# asks. It costs one more product of the documents with a vector, the mean of those questions'
# (docs/search.md, "Nearer the question than its nearest background questions"). False: no such
# test.
NEAREST_QUESTIONS_APART = True
# ... and a question that refers to no one (``refers_to_someone``: no personal pronoun, no name)
# by at least this margin, not the model's: a question about the world ("How does a heat pump
# work?", 地毯上的红酒渍怎么去除) asked of a person's memories is answered by a memory only if
# that memory is clearly nearer to it than to its kind of question, while the questions a person
# asks about their own life ("what's my major", "how sweet do I like my bubble tea") keep the
# model's margin, which they clear by less (docs/search.md, "Questions about the world"). For e5;
# None: the model's margin for every question.
IMPERSONAL_APART_MARGIN: float | None = 0.03


# The mean's share along the model's language direction (``language_direction``) stays in the
# query: which language a document is in is left to the query's own vector (and, in the searches
# that filter, to ``across_languages``), not to how the searched documents happen to be split.
LANGUAGE_OUT_OF_MEAN = True


def _ranking_vector(
    query_vector: np.ndarray,
    mean: Callable[[], np.ndarray | None],
    provider: EmbeddingProvider,
    common: np.ndarray | None = None,
) -> np.ndarray:
    """What the meaning ranking orders documents by: the query vector less ``hub_weight`` times
    the mean vector of the documents ranked (``mean()``, asked only when the provider has a
    weight). The dot product of a document with it is its similarity to the query less its share
    of what all the searched documents have in common: a turn like "Mia, that's huge!" is close to
    any question about Mia's life, and to every other turn of the chat, and no longer outranks
    the one turn that says what was asked (docs/search.md, "Hubs").

    ``common``: the vectors of the query's words that many of the searched documents hold
    (``engine.COMMON_TERM_SHARE``), one a row: first the query loses ``common_term_weight`` of its
    share along each, and is made unit length again. In a chat's extracted statements, nearly
    every one names Mia; the question's "Mia" then no longer outweighs what it asks about her,
    while the rest of her share still tells her statements from the other person's
    (docs/search.md, "Common words")."""
    vector = query_vector
    term_weight = getattr(provider, "common_term_weight", 0.0)
    if common is not None and len(common) and term_weight:
        vector = query_vector.astype(np.float32)
        for term in common:
            vector = vector - term_weight * float(vector @ term) * term
        norm = float(np.linalg.norm(vector))
        vector = (vector / norm).astype(DTYPE) if norm > 1e-6 else query_vector
    weight = getattr(provider, "hub_weight", 0.0)
    if not weight:
        return vector
    centre = mean()
    if centre is None:
        return vector
    if LANGUAGE_OUT_OF_MEAN:
        direction = language_direction(provider)
        centre = centre - float(centre @ direction) * direction
    return (vector - weight * centre).astype(DTYPE)


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
    gate: float | None = None,
    gated: set[int] | None = None,
    common: Future | None = None,
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
    (positive: it matches by meaning), and ``gated``, if given, the embedded documents of the
    scopes whose gates the query does not clear (``gate``) and those no nearer to it than its
    nearest background questions are (``NEAREST_QUESTIONS_APART``). ``asked_in_chinese``: the language of
    the question the floors compare with (default: ``query``'s, which may carry its translation). ``gate``: the
    floors' scopes are gated too, at this quantile of the background queries' best margins (None:
    not gated; the engine: ``GATE_QUANTILE`` for a question, ``question_like``,
    ``UNKNOWN_GATE_QUANTILE`` for a query of no known word).
    ``pending``: the query's embedding already under way (``embed_query_soon``, with the
    same ``across_languages``), else it is embedded here. ``common``: the vectors of the query's
    common words under way (``embeddings.term_vectors_soon``), for the ranking only
    (``_ranking_vector``)."""
    across = floor if across is None else across
    n_docs = sum(s[1] for s in scopes)
    if not n_docs or not query.strip():
        return [], 0
    if pending is None:
        pending = embed_query_soon(provider, query, across_languages=across is True)
    if vectorstore.use_pgvector(n_docs, provider, fits_in_memory=n_docs <= exact_vector_limit(provider.dim)):
        query_vector = pending.result()
        ranking_vector = _ranking_vector(
            query_vector,
            lambda: vectorstore.mean_vector(scopes, provider.model, provider.dim),
            provider,
            _common_vectors(common),
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
        query_vector,
        lambda: np.sum([entry.total for entry in entries], axis=0) / len(ids),
        provider,
        _common_vectors(common),
    )
    sims = np.concatenate([entry.matrix @ ranking_vector for entry in entries])  # no copy of the matrices
    similar = sims
    if ranking_vector is not query_vector:
        similar = np.concatenate([entry.matrix @ query_vector for entry in entries])
    # The floor first, then the best: a document below it never takes the place of one above.
    threshold: float | np.ndarray = _floor_of(query_vector, provider, floor)
    if floor and getattr(provider, "calibrated", False):
        floors, levels, gates, stands, together = _calibrated_floors(
            scopes, entries, provider, bool(across), chinese_query, gate
        )
        needed = np.maximum(threshold, float(background_similarity(provider, query_vector)) + floors)
        level, near = _nearest_questions(provider, bool(across), query_vector, chinese_query)
        margin = similar - needed
        if margins is not None:
            margins.update(zip(ids.tolist(), margin.tolist(), strict=True))
        shut = _gated_out(entries, margin, similar - level, gates, stands, together)
        if gate is not None and near is not None and NEAREST_QUESTIONS_APART:
            apart = provider.apart_margin
            if IMPERSONAL_APART_MARGIN is not None and not refers_to_someone(query):
                apart = max(apart, IMPERSONAL_APART_MARGIN)
            shut |= similar - np.concatenate([entry.matrix @ near for entry in entries]) <= apart
        needed[shut] += 1.0
        if gated is not None:
            gated.update(ids[shut].tolist())
        threshold = needed
        sims = sims - BACKGROUND_RANK_WEIGHT * levels
    matches = similar > threshold
    k = min(depth, int(np.count_nonzero(matches)))
    if not k:
        return [], missing
    sims = np.where(matches, sims, -np.inf)
    top = np.argpartition(-sims, k - 1)[:k]
    top = top[np.argsort(-sims[top], kind="stable")]
    return [(int(ids[i]), float(sims[i])) for i in top], missing


def _common_vectors(common: Future | None) -> np.ndarray | None:
    """The common words' vectors, or none where the model could not embed them: the ranking then
    takes the query as it is, rather than failing a search for a refinement."""
    if common is None:
        return None
    try:
        vectors: np.ndarray = common.result()
    except Exception:  # the provider's error is the query's too, and reported there
        logger.warning("search: the common words of a query could not be embedded", exc_info=True)
        return None
    return vectors


def _gated_out(
    entries: list[CacheEntry],
    margin: np.ndarray,
    stand: np.ndarray,
    gates: list[float],
    stands: list[float],
    together: float,
) -> np.ndarray:
    """Which documents (the rows of ``entries`` in order) match nothing by meaning: those of a
    scope whose best document does not clear its gate (``margin``, the similarity less the floor),
    or does not stand out from the background questions (``stand``, the similarity less the
    query's question level; ``STAND_OUT_QUANTILE``), and all of them when the best of them all does
    not stand out over them all (``STAND_OUT_TOGETHER``)."""
    shut = np.zeros(len(margin), dtype=bool)
    if len(margin) and stand.max() <= together:
        shut[:] = True
        return shut
    start = 0
    for entry, scope_gate, scope_stand in zip(entries, gates, stands, strict=True):
        part = slice(start, start + len(entry.ids))
        start = part.stop
        if part.stop > part.start and (margin[part].max() <= scope_gate or stand[part].max() <= scope_stand):
            shut[part] = True
    return shut


_SOMEONE = re.compile(
    r"(?i:\b(?:i|me|my|mine|myself|you|your|yours|he|him|his|she|her|hers|they|them|their|we|us|our|ours)\b)"
    r"|[我你您他她咱俺]|(?<=[\w,;:] )[A-Z][a-z]+"
)


def refers_to_someone(query: str) -> bool:
    """Whether ``query`` names or points at a person: a personal pronoun of English or Chinese
    ("my", "she", 我, 她), or a word in title case after a word, comma or colon ("Grace",
    "Carmen": a name, or a title, counted as one). "How does a heat pump work?" and
    地毯上的红酒渍怎么去除 do not; "what is my major" and "Where does Grace live" do."""
    return _SOMEONE.search(query) is not None


def question_like(query: str) -> bool:
    """Three words or more (five Chinese characters): what the background queries are like."""
    return len(query.split()) >= 3 or len(CHINESE_CHARS.findall(query)) >= 5


def _mixed_languages(entries: list[CacheEntry], provider: EmbeddingProvider, chinese_query: bool) -> bool:
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
    background queries (row 0) and over the Chinese ones (row 1), and its mean cosine
    similarity to all of them (``levels``); per background query, by how much its best document
    clears that document's floor (``best``, negative: none does)."""

    floors: np.ndarray  # (2, documents)
    levels: np.ndarray  # (documents,)
    best: np.ndarray  # (background queries,): each one's best margin over the documents
    stands: np.ndarray  # (background questions,): each one's best similarity less its question level


# Per process, least recently used out: 24 bytes a document, about 2 % of what its vector takes
# in the vector cache, and about 2 KB a scope (the background queries' and questions' bests), but
# kept for scopes that cache has let go too.
CALIBRATION_BYTES = 32 * 1024 * 1024
_calibrations: OrderedDict[tuple[object, ...], _Calibration] = OrderedDict()
_calibrations_lock = threading.Lock()


def _calibration(scope: tuple[int, ...], entry: CacheEntry, provider: EmbeddingProvider, across: bool) -> _Calibration:
    key = (
        connection.alias,
        connection.settings_dict.get("NAME"),
        scope[0],
        entry.version,
        provider.model,
        across,
        QUESTION_NEIGHBOURS,  # the background questions' own levels
    )
    with _calibrations_lock:
        found = _calibrations.get(key)
        if found is not None and found.floors.shape[1] == len(entry.ids):
            _calibrations.move_to_end(key)
            return found
    queries, background, chinese = background_queries(provider, across_languages=across)
    similar = entry.matrix @ queries.T  # (documents, background queries)
    relative = similar - background
    floors = np.stack(
        [np.quantile(relative[:, chinese == group], BACKGROUND_QUANTILE, axis=1) for group in (False, True)]
    )
    needed = np.maximum(provider.match_floor, floors[chinese.astype(int)].T + BACKGROUND_MARGIN)
    questions = background_questions(provider, across_languages=across)[0]
    found = _Calibration(
        floors.astype(np.float64),
        similar.mean(axis=1).astype(np.float64),
        (relative - needed).max(axis=0, initial=-1.0).astype(np.float64),
        ((entry.matrix @ questions.T).max(axis=0, initial=-1.0) - _question_levels(provider, across)).astype(
            np.float64
        ),
    )
    with _calibrations_lock:
        _calibrations[key] = found
        held = sum(_nbytes(c) for c in _calibrations.values())
        while held > CALIBRATION_BYTES and len(_calibrations) > 1:
            held -= _nbytes(_calibrations.popitem(last=False)[1])
    return found


def _question_levels(provider: EmbeddingProvider, across: bool) -> np.ndarray:
    """Per background question, its mean similarity to the ``QUESTION_NEIGHBOURS`` other
    background questions of its language nearest to it (0: to all of them): how close to any such
    question it is by being one."""
    questions, chinese = background_questions(provider, across_languages=across)
    pair = questions @ questions.T
    same = chinese[:, None] == chinese[None, :]
    np.fill_diagonal(same, False)
    others = same.sum(axis=1)
    if QUESTION_NEIGHBOURS:
        # The nearest first; a language with fewer other questions than that averages those it has.
        nearest = -np.sort(-np.where(same, pair, -np.inf), axis=1)[:, :QUESTION_NEIGHBOURS]
        counted = np.minimum(others, QUESTION_NEIGHBOURS)
        taken = np.arange(nearest.shape[1])[None, :] < counted[:, None]
        levels: np.ndarray = np.where(taken, nearest, 0.0).sum(axis=1) / np.maximum(counted, 1)
    else:
        levels = (pair * same).sum(axis=1) / np.maximum(others, 1)
    return levels


def _nearest_questions(
    provider: EmbeddingProvider, across: bool, query_vector: np.ndarray, chinese_query: bool
) -> tuple[float, np.ndarray | None]:
    """The query's level, its mean similarity to the ``QUESTION_NEIGHBOURS`` background questions
    of its language nearest to it (0: to all of them), and the mean of those questions' vectors
    (None: no background question of its language): a document's similarity to that mean is its
    mean similarity to them."""
    questions, chinese = background_questions(provider, across_languages=across)
    asked = questions[chinese == chinese_query]
    if not len(asked):
        return 0.0, None
    similar = asked @ query_vector
    if QUESTION_NEIGHBOURS:
        nearest = np.argsort(-similar, kind="stable")[:QUESTION_NEIGHBOURS]
        asked, similar = asked[nearest], similar[nearest]
    return float(similar.mean()), asked.mean(axis=0).astype(DTYPE)


def _nbytes(calibration: _Calibration) -> int:
    return sum(part.nbytes for part in calibration)


def _calibrated_floors(
    scopes: list[tuple[int, ...]],
    entries: list[CacheEntry],
    provider: EmbeddingProvider,
    across: bool,
    chinese_query: bool,
    gate: float | None,
) -> tuple[np.ndarray, np.ndarray, list[float], list[float], float]:
    """Per embedded document (the rows of ``entries`` in order): how far above its background
    similarity a query must be to match it: more than the background queries of the query's
    language score for that document (``_Calibration``) by ``BACKGROUND_MARGIN``, and at least
    the model's ``match_floor``; the document's mean similarity to the background queries; and
    per scope, the gate: by how much the query's best document of that scope must clear its floor
    for any of the scope's documents to match (the ``gate`` quantile of the background queries'
    best margins; minus infinity: no gate), and by how much its best similarity less the query's
    question level must exceed (``STAND_OUT_QUANTILE`` of the background questions' own, with a
    gate only; minus infinity: none); and by how much the best similarity over all the scopes less
    the question level must exceed (the same quantile of the background questions' best over all
    of them; ``STAND_OUT_TOGETHER``, more than one scope and a gate only; minus infinity: none)."""
    calibrations = [_calibration(scope, entry, provider, across) for scope, entry in zip(scopes, entries, strict=True)]
    floors = np.concatenate([found.floors[int(chinese_query)] for found in calibrations])
    levels = np.concatenate([found.levels for found in calibrations])
    floored: np.ndarray = np.maximum(provider.match_floor, floors + BACKGROUND_MARGIN)
    gates = [-np.inf] * len(calibrations)
    stands = [-np.inf] * len(calibrations)
    together = -np.inf
    if gate is not None:
        chinese = background_queries(provider, across_languages=across)[2] == chinese_query
        gates = [max(0.0, float(np.quantile(found.best[chinese], gate))) for found in calibrations]
        if STAND_OUT_QUANTILE is not None:
            asked = background_questions(provider, across_languages=across)[1] == chinese_query
            stands = [float(np.quantile(found.stands[asked], STAND_OUT_QUANTILE)) for found in calibrations]
            if STAND_OUT_TOGETHER and len(calibrations) > 1:
                best = np.max([found.stands[asked] for found in calibrations], axis=0)
                together = float(np.quantile(best, STAND_OUT_QUANTILE))
    return floored, levels, gates, stands, together


def _floor_of(query_vector: np.ndarray, provider: EmbeddingProvider, floor: bool) -> float:
    """The cosine similarity a document must be above to match: the model's ``min_score``; with
    ``floor``, also the query's background similarity plus ``match_floor``."""
    threshold: float = provider.min_score
    if floor:
        threshold = max(threshold, float(background_similarity(provider, query_vector)) + provider.match_floor)
    return threshold
