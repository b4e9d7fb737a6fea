"""Hubs: the meaning ranking orders documents by their similarity to the query less their share
of what all the searched documents have in common (``dense._ranking_vector``), so a turn that
is close to everything ("Mia, that's huge!") stops outranking the one that says what was asked;
which documents match at all is still decided by their cosine similarity (docs/search.md, "Hubs").
"""

from concurrent.futures import Future

import numpy as np
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from memory_app.search import dense, engine, lexical
from memory_app.search.embeddings import HashedNgramEmbedding, language_direction, to_bytes
from memory_app.search.index import Row, documents_sync, vectors_store

pytestmark = pytest.mark.django_db

DIM = 16


class _Scripted(HashedNgramEmbedding):
    """Vectors the tests set. The background texts (``BACKGROUND_TEXTS``) lie on the last two
    axes, English on one, Chinese on the other: the language direction is their difference,
    and a document or query on the other axes has no background similarity."""

    hub_weight = 0.5

    def __init__(self):
        super().__init__(dim=DIM)

    def embed(self, texts):
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row, DIM - 1 if any("\u4e00" <= ch <= "\u9fff" for ch in text) else DIM - 2] = 1.0
        return out


def _unit(*parts) -> np.ndarray:
    vector = np.zeros(DIM, dtype=np.float32)
    for axis, value in parts:
        vector[axis] = value
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def _scope(key: str, vectors: dict[str, np.ndarray], provider) -> None:
    created = documents_sync("memory", [Row(ref=ref, scope=key, text=f"text of {ref}") for ref in vectors])
    stored = vectors_store(
        [(doc.pk, doc.text_hash, to_bytes(vectors[doc.ref])) for doc, _ in created], model=provider.model
    )
    assert stored == len(vectors)


def _rank(keys: list[str], query: np.ndarray, provider, *, depth: int = 10, floor: bool = False):
    pending: Future = Future()
    pending.set_result(query)
    scopes = lexical.scopes_and_postings(keys, [])[0]
    ranked, missing = engine.dense_rank(scopes, "a question", depth, provider=provider, floor=floor, pending=pending)
    assert missing == 0
    refs = engine._refs_of(scopes, {doc_id for doc_id, _ in ranked}, provider)
    return [(refs[doc_id], score) for doc_id, score in ranked]


# Five turns of small talk along the axis every text of the chat shares (0), the answer mostly
# along its own (1); the question leans to the shared axis, as a question about the chat's
# people does: by cosine every hub (0.90) is above the answer (0.83).
QUESTION = _unit((0, 0.9), (1, 0.436))
CHAT = {
    **{f"hub{i}": _unit((0, 1.0), (2 + i, 0.05)) for i in range(5)},
    "answer": _unit((0, 0.5), (1, 0.866)),
}


@pytest.fixture
def scripted(settings):
    settings.MEMORY_EMBEDDING_PROVIDER = "hashed"
    settings.MEMORY_EMBEDDING_DIM = DIM
    settings.MEMORY_VECTOR_BACKEND = "numpy"
    engine.vector_cache.clear()
    yield _Scripted()
    engine.vector_cache.clear()


def test_the_turn_that_answers_outranks_the_turns_close_to_everything(scripted, monkeypatch):
    _scope("history:1", CHAT, scripted)
    cosines = {ref: float(vector @ QUESTION) for ref, vector in CHAT.items()}
    assert all(cosines[f"hub{i}"] > cosines["answer"] for i in range(5))

    ranked = _rank(["history:1"], QUESTION, scripted)
    assert ranked[0][0] == "answer"
    # The score is the dot product with the query less half the mean, not the cosine.
    mean = np.mean(list(CHAT.values()), axis=0)
    for ref, score in ranked:
        assert score == pytest.approx(float(CHAT[ref] @ (QUESTION - 0.5 * mean)), abs=1e-5)

    # Without the correction (a provider with no weight) the hubs come first, as by cosine.
    monkeypatch.setattr(_Scripted, "hub_weight", 0.0)
    plain = _rank(["history:1"], QUESTION, scripted)
    assert plain[-1][0] == "answer"
    assert [score for _, score in plain] == pytest.approx(sorted(cosines.values(), reverse=True), abs=1e-5)


def test_the_floor_of_a_filtering_search_is_measured_on_the_cosine(scripted, monkeypatch):
    """A list's search keeps the documents more similar to the query than its background plus
    ``match_floor`` (here: 0 + 0.6): the hubs (cosine 0.90) stay although their ranking score
    is below 0.6; documents at cosine 0.22 and 0.48 go, whatever their ranking score."""
    monkeypatch.setattr(_Scripted, "match_floor", 0.6)
    chat = {**CHAT, "aside": _unit((1, 0.5), (7, 0.866))}  # cosine 0.22 with the question
    chat["lifted"] = _unit((0, 0.1), (1, 0.9), (8, 0.42))  # cosine 0.48; far from the mean
    _scope("user:1", chat, scripted)
    ranked = _rank(["user:1"], QUESTION, scripted, floor=True)
    kept = {ref for ref, _ in ranked}
    assert kept == {ref for ref, vector in chat.items() if float(vector @ QUESTION) > 0.6}
    assert kept == {*(f"hub{i}" for i in range(5)), "answer"}
    assert any(score < 0.6 for _, score in ranked)  # scores are the ranking's, the floor was not


def test_the_mean_is_of_every_searched_scope_and_leaves_the_language_direction(scripted):
    """Generated chats over up to three scopes: the order is the one the rule gives over all
    of them together (the mean of every searched vector, less its share along the model's
    language direction), the scores are that rule's, and a scope not searched counts for
    nothing."""
    direction = language_direction(scripted)
    assert direction @ _unit((DIM - 1, 1.0)) > 0.7  # Chinese background along the last axis
    counter = iter(range(10**6))

    @hypothesis_settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(
        sizes=st.lists(st.integers(1, 12), min_size=1, max_size=3),
        seed=st.integers(0, 2**32 - 1),
        depth=st.integers(1, 40),
    )
    def check(sizes, seed, depth):
        rng = np.random.default_rng(seed)
        run = next(counter)
        keys, vectors = [], {}
        for s, size in enumerate(sizes):
            key = f"history:{run}{s}"
            rows = rng.standard_normal((size, DIM)).astype(np.float32) + 1.5 * _unit((0, 1.0))
            rows /= np.linalg.norm(rows, axis=1, keepdims=True)
            scoped = {f"r{run}-{s}-{i}": row for i, row in enumerate(rows)}
            _scope(key, scoped, scripted)
            vectors.update(scoped)
            keys.append(key)
        _scope(f"history:{run}x", {f"r{run}-x": _unit((0, -1.0))}, scripted)  # not searched
        query = rng.standard_normal(DIM).astype(np.float32)
        query /= np.linalg.norm(query)
        matrix = np.stack(list(vectors.values()))
        mean = matrix.mean(axis=0)
        mean -= (mean @ direction) * direction
        expected = matrix @ (query - 0.5 * mean)
        got = _rank(keys, query, scripted, depth=depth)
        refs = list(vectors)
        floor = scripted.min_score  # at or below it: no match, whatever the ranking score
        best = [i for i in np.argsort(-expected, kind="stable") if float(matrix[i] @ query) > floor][:depth]
        assert [ref for ref, _ in got] == [refs[i] for i in best]  # the floor first, then the best
        for ref, score in got:
            assert score == pytest.approx(float(expected[refs.index(ref)]), abs=1e-5)

    check()


def test_the_floor_comes_before_the_best_are_taken(scripted, monkeypatch):
    """A document below the floor but far from the mean ranks high by the ranking score; it must
    not take the place of one above the floor: at any depth, a filtering search returns as many
    matches as there are, up to the depth."""
    monkeypatch.setattr(_Scripted, "match_floor", 0.6)
    chat = {f"hub{i}": _unit((0, 1.0), (1, 1.0), (2 + i, 0.1)) for i in range(6)}  # cosine ~0.70
    chat["answer"] = _unit((0, 1.0), (1, 1.0))
    chat.update({f"odd{i}": _unit((0, 0.57), (9 + i, 0.82)) for i in range(3)})  # cosine ~0.40
    query = _unit((0, 1.0), (1, 1.0))
    _scope("user:1", chat, scripted)
    passing = {ref for ref, vector in chat.items() if float(vector @ query) > 0.6}
    assert len(passing) == 7
    for depth in range(1, 11):
        ranked = _rank(["user:1"], query, scripted, depth=depth, floor=True)
        assert len(ranked) == min(depth, 7) and {ref for ref, _ in ranked} <= passing, depth


def test_a_named_speaker_is_favoured_whatever_the_sign_of_the_score():
    from memory_app.search import dialogue

    rows = {
        1: {"speaker": "Mia", "display_name": "", "role": "assistant"},
        2: {"speaker": "Leo", "display_name": "", "role": "assistant"},
    }
    favoured = dialogue.speaker_aware([("2", -0.05), ("1", -0.08)], rows, "what did Mia adopt?")
    assert favoured[0] == ("1", pytest.approx(-0.08 + 0.08 * dialogue.SPEAKER_WEIGHT))
    assert dialogue.speaker_aware([("2", 0.4), ("1", 0.3)], rows, "what did Mia adopt?")[0] == (
        "1",
        pytest.approx(0.3 * (1 + dialogue.SPEAKER_WEIGHT)),
    )


def test_a_background_questions_level_is_its_mean_over_its_nearest_of_its_language(monkeypatch):
    """``dense._question_levels``: per background question, the mean of its ``QUESTION_NEIGHBOURS``
    highest similarities to the other questions of its language; where the language has fewer,
    the mean of those it has (never an infinity, which would turn the stand-out gate off), and
    a question alone in its language has a level of 0."""
    questions = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0], [0.6, 0.8]], dtype=np.float32)
    chinese = np.array([False, False, False, True])
    monkeypatch.setattr(dense, "background_questions", lambda provider, across_languages: (questions, chinese))
    pair = questions @ questions.T
    monkeypatch.setattr(dense, "QUESTION_NEIGHBOURS", 1)
    assert np.allclose(dense._question_levels(None, True), [pair[0, 1], pair[1, 0], pair[2, 1], 0.0])
    monkeypatch.setattr(dense, "QUESTION_NEIGHBOURS", 10)
    levels = dense._question_levels(None, True)
    assert np.all(np.isfinite(levels))
    assert np.allclose(
        levels, [(pair[0, 1] + pair[0, 2]) / 2, (pair[1, 0] + pair[1, 2]) / 2, (pair[2, 0] + pair[2, 1]) / 2, 0.0]
    )
    monkeypatch.setattr(dense, "QUESTION_NEIGHBOURS", 0)
    assert np.allclose(dense._question_levels(None, True)[:3], levels[:3])


def test_a_questions_nearest_background_questions_give_its_level_and_their_mean_vector(monkeypatch):
    """``dense._nearest_questions``: the query's mean similarity to the ``QUESTION_NEIGHBOURS``
    background questions of its language nearest to it, and the mean of their vectors (a
    document's similarity to it is its mean similarity to them); all of its language with 0, those
    it has where it has fewer, and no mean where it has none."""
    questions = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0], [0.6, 0.8]], dtype=np.float32)
    chinese = np.array([False, False, False, True])
    monkeypatch.setattr(dense, "background_questions", lambda provider, across_languages: (questions, chinese))
    query = np.array([0.96, 0.28], dtype=np.float32)
    monkeypatch.setattr(dense, "QUESTION_NEIGHBOURS", 2)
    level, near = dense._nearest_questions(None, True, query, False)
    assert level == pytest.approx((questions[0] @ query + questions[1] @ query) / 2)
    assert np.allclose(near, (questions[0] + questions[1]) / 2)
    document = np.array([0.0, 1.0], dtype=np.float32)
    assert document @ near == pytest.approx((questions[0] @ document + questions[1] @ document) / 2)
    level, near = dense._nearest_questions(None, True, query, True)
    assert level == pytest.approx(questions[3] @ query) and np.allclose(near, questions[3])
    monkeypatch.setattr(dense, "QUESTION_NEIGHBOURS", 0)
    level, near = dense._nearest_questions(None, True, query, False)
    assert level == pytest.approx(float((questions[:3] @ query).mean())) and np.allclose(
        near, questions[:3].mean(axis=0)
    )
    monkeypatch.setattr(dense, "background_questions", lambda provider, across_languages: (questions[:3], chinese[:3]))
    assert dense._nearest_questions(None, True, query, True) == (0.0, None)


def test_a_scope_whose_best_does_not_clear_its_gates_is_shut_and_all_are_when_none_stands_out_over_all():
    """``dense._gated_out``: per scope, shut when its best margin is not above its gate or its best
    stand not above its stand-out threshold; every scope when the best stand of all is not above
    the threshold over all of them."""

    class Entry:
        def __init__(self, n):
            self.ids = np.arange(n)

    entries = [Entry(2), Entry(1), Entry(2)]
    margin = np.array([0.05, -0.1, 0.01, 0.04, 0.0])
    stand = np.array([0.03, 0.0, 0.05, 0.01, 0.02])
    shut = dense._gated_out(entries, margin, stand, [0.02, 0.02, 0.02], [0.02, 0.02, 0.02], -np.inf)
    assert shut.tolist() == [False, False, True, True, True]  # the second: margin; the third: stand
    shut = dense._gated_out(entries, margin, stand, [-np.inf] * 3, [-np.inf] * 3, 0.05)
    assert shut.all()
    shut = dense._gated_out(entries, margin, stand, [-np.inf] * 3, [-np.inf] * 3, 0.049)
    assert not shut.any()
