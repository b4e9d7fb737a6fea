"""Common words: a word of the query that many of the searched documents hold (a name every
statement of a chat's extraction carries) weighs less in the meaning ranking, as it already does
in the words' (idf): the query loses the model's ``common_term_weight`` of its share along the
word's vector (``dense._ranking_vector``, ``engine.common_words``; docs/search.md, "Common
words"). Which documents match is unchanged; only their order."""

import logging

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from memory_app.search import dense, embeddings, engine, lexical
from memory_app.search.embeddings import HashedNgramEmbedding, to_bytes
from memory_app.search.index import Row, documents_sync, vectors_store

pytestmark = pytest.mark.django_db

DIM = 16
NAME, ANSWER, JON = 0, 1, 14  # axes: Mia's name, what the question asks, the other person's name


def _unit(*parts) -> np.ndarray:
    vector = np.zeros(DIM, dtype=np.float32)
    for axis, value in parts:
        vector[axis] = value
    return (vector / np.linalg.norm(vector)).astype(np.float32)


QUESTION_TEXT = "what did Mia adopt"
# The question leans to the name, as a short question about a person does in a small model.
QUESTION = _unit((NAME, 0.9), (ANSWER, 0.436))


class _Scripted(HashedNgramEmbedding):
    """Vectors the tests set: the question, the name alone, and every other text on an axis of
    its own language (as in test_hubs.py), so nothing else is near anything."""

    common_term_weight = 0.3
    hub_weight = 0.0  # the common word alone, not the mean's correction

    def __init__(self):
        super().__init__(dim=DIM)
        self.embedded: list[str] = []

    def embed(self, texts):
        self.embedded.extend(texts)
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for row, text in enumerate(texts):
            if text == QUESTION_TEXT:
                out[row] = QUESTION
            elif text == "Mia":
                out[row] = _unit((NAME, 1.0))
            else:
                out[row, DIM - 1 if any("\u4e00" <= ch <= "\u9fff" for ch in text) else DIM - 2] = 1.0
        return out


# Ten statements that name Mia and say little else ("Mia is feeling a bit under the weather
# today."), the one that answers, and the other person's statement of the same kind.
STATEMENTS = {
    **{f"mia-small-talk-{i}": (f"Mia small talk number {i}", _unit((NAME, 1.0), (2 + i, 0.5))) for i in range(10)},
    "mia-answer": ("Mia adopted a border collie", _unit((NAME, 0.3), (ANSWER, 0.954))),
    "jon-answer": ("Jon adopted a parrot", _unit((JON, 0.3), (ANSWER, 0.954))),
}


@pytest.fixture
def scripted(settings, monkeypatch):
    settings.MEMORY_EMBEDDING_PROVIDER = "hashed"
    settings.MEMORY_EMBEDDING_DIM = DIM
    settings.MEMORY_VECTOR_BACKEND = "numpy"
    engine.vector_cache.clear()
    embeddings._term_vectors.clear()
    provider = _Scripted()
    monkeypatch.setattr(engine, "get_provider", lambda: provider)
    yield provider
    engine.vector_cache.clear()
    embeddings._term_vectors.clear()


def _store(key: str, statements: dict, provider) -> None:
    """Each scope's own documents (a ref is one document: the same ref in another scope would move it)."""
    rows = [Row(ref=f"{key}/{ref}", scope=key, text=text) for ref, (text, _) in statements.items()]
    created = documents_sync("memory", rows)
    vectors = [(doc.pk, doc.text_hash, to_bytes(statements[doc.ref.split("/", 1)[1]][1])) for doc, _ in created]
    assert vectors_store(vectors, model=provider.model) == len(statements)


def _dense_order(key: str, **kwargs) -> list[str]:
    ranked = engine.rank(scopes=[key], query=QUESTION_TEXT, depth=60, mode="hybrid", **kwargs)
    return [ref.split("/", 1)[1] for ref, _ in ranked.dense]


def test_the_statement_that_answers_outranks_the_ones_that_only_name_her(scripted, monkeypatch):
    _store("chat:a", STATEMENTS, scripted)
    cosines = {ref: float(vector @ QUESTION) for ref, (_, vector) in STATEMENTS.items()}
    assert min(cosines[f"mia-small-talk-{i}"] for i in range(10)) > cosines["mia-answer"] > cosines["jon-answer"]

    order = _dense_order("chat:a")
    assert order[0] == "mia-answer"
    # The rest of the name's share still tells her statement from the other person's.
    assert order.index("jon-answer") > order.index("mia-answer")
    assert "Mia" in scripted.embedded  # the word as the question writes it, embedded as a document

    monkeypatch.setattr(_Scripted, "common_term_weight", 0.0)
    plain = _dense_order("chat:a")
    assert plain.index("mia-answer") == 10  # below the ten that only name her: as by cosine
    assert set(plain) == set(order)  # the same documents match; only their order moved


def test_a_word_few_documents_hold_changes_nothing(scripted):
    """Nine statements name Mia (under ``COMMON_TERM_MIN_DOCS``), and in a larger scope under a
    fifth of them (``COMMON_TERM_SHARE``): the query is taken as it is."""
    few = {ref: STATEMENTS[ref] for ref in [*(f"mia-small-talk-{i}" for i in range(8)), "mia-answer", "jon-answer"]}
    _store("chat:few", few, scripted)
    assert _dense_order("chat:few").index("mia-answer") == 8
    assert "Mia" not in scripted.embedded

    many = {**STATEMENTS, **{f"other-{i}": (f"Jon said thing {i}", _unit((JON, 1.0), (3, 0.2))) for i in range(40)}}
    _store("chat:many", many, scripted)  # 11 of 52 hold "Mia": 21 %
    assert _dense_order("chat:many")[0] == "mia-answer"
    more = {**many, **{f"more-{i}": (f"Jon said more {i}", _unit((JON, 1.0), (4, 0.2))) for i in range(10)}}
    _store("chat:more", more, scripted)  # 11 of 62: 18 %
    assert _dense_order("chat:more").index("mia-answer") == 10


def test_the_words_vector_is_kept_for_the_next_search(scripted):
    _store("chat:a", STATEMENTS, scripted)
    _dense_order("chat:a")
    _dense_order("chat:a")
    assert scripted.embedded.count("Mia") == 1


def test_a_word_the_model_cannot_embed_leaves_the_query_as_it_is(scripted, monkeypatch, caplog):
    _store("chat:a", STATEMENTS, scripted)
    plain_embed = _Scripted.embed

    def failing(self, texts):
        if "Mia" in texts:
            raise RuntimeError("model unavailable")
        return plain_embed(self, texts)

    monkeypatch.setattr(_Scripted, "embed", failing)
    with caplog.at_level(logging.WARNING, logger="memory_app.search.dense"):
        order = _dense_order("chat:a")
    assert order.index("mia-answer") == 10  # as without the common word
    assert "common words of a query could not be embedded" in caplog.text


def test_a_search_by_meaning_only_counts_the_words_for_it(scripted, django_assert_max_num_queries):
    """A ``dense`` search (``/api/memory/search``'s ``vector``) reads no postings, but counts the
    query's words in the same one statement that reads the scopes."""
    _store("chat:a", STATEMENTS, scripted)
    engine.rank(scopes=["chat:a"], query="something else", depth=20, mode="dense")  # loads the scope's vectors
    with django_assert_max_num_queries(1) as captured:
        ranked = engine.rank(scopes=["chat:a"], query=QUESTION_TEXT, depth=20, mode="dense")
    assert ranked.dense[0][0] == "chat:a/mia-answer"
    assert ranked.lexical == []
    assert "ORDER BY document_id DESC" not in captured.captured_queries[0]["sql"]  # no postings read
    assert "Mia" in scripted.embedded


def test_counted_terms_give_their_document_frequency_and_no_postings(scripted):
    _store("chat:a", STATEMENTS, scripted)
    scopes, postings, df = lexical.scopes_and_postings(["chat:a"], ["adopt"], counted=["mia", "adopt", "parrot"])
    assert df == {"adopt": 2, "mia": 11, "parrot": 1}
    assert set(postings) == {"adopt"} and len(postings["adopt"]) == 2
    assert scopes[0][1] == len(STATEMENTS)
    assert lexical.scopes_and_postings(["chat:none"], [], counted=["mia"])[2] == {"mia": 0}


@pytest.mark.parametrize(
    ("text", "terms", "df", "n_docs", "expected"),
    [
        ("What kind of pet did Mia get?", ["kind", "pet", "mia", "get"], {"mia": 30, "pet": 2}, 60, ["Mia"]),
        ("Where did Mia's sister marry?", ["mia", "sister", "marri"], {"mia": 10}, 50, ["Mia"]),
        ("What kind of pet did Mia get?", ["kind", "pet", "mia", "get"], {"mia": 9}, 12, []),  # under 10 documents
        ("What kind of pet did Mia get?", ["kind", "pet", "mia", "get"], {"mia": 19}, 100, []),  # under a fifth
        ("林小芳去烧烤会点牛肉串吗？", ["林小", "小芳", "芳去"], {"林小": 30, "小芳": 30}, 60, ["林小芳"]),
        ("a b c d e", ["b", "c", "d", "e"], {"b": 9, "c": 9, "d": 9, "e": 9}, 9, []),
        (
            "alpha beta gamma delta",
            ["alpha", "beta", "gamma", "delta"],
            dict.fromkeys(["alpha", "beta", "gamma", "delta"], 40),
            40,
            ["alpha", "beta", "gamma"],
        ),
        ("", [], {}, 0, []),
    ],
)
def test_common_words_are_the_query_s_words_as_written(text, terms, df, n_docs, expected):
    assert engine.common_words(text, terms, df, n_docs) == expected


unit_vectors = st.lists(st.floats(-1, 1, allow_nan=False), min_size=DIM, max_size=DIM).filter(
    lambda values: np.linalg.norm(values) > 0.1
)


@hypothesis_settings(max_examples=200, deadline=None)
@given(query=unit_vectors, words=st.lists(unit_vectors, min_size=1, max_size=3), weight=st.floats(0.0, 1.0))
def test_the_ranking_vector_loses_share_along_each_word_and_stays_a_unit(query, words, weight):
    class Provider(_Scripted):
        common_term_weight = weight

    provider = Provider()
    q = _unit(*enumerate(query))
    common = np.stack([_unit(*enumerate(word)) for word in words])
    vector = dense._ranking_vector(q, lambda: None, provider, common)
    assert np.all(np.isfinite(vector))
    if not weight:
        assert vector is q
        return
    assert float(np.linalg.norm(vector)) == pytest.approx(1.0, abs=1e-4)
    # With one word, the query's share along it never grows.
    single = dense._ranking_vector(q, lambda: None, provider, common[:1])
    assert abs(float(single @ common[0])) <= abs(float(q @ common[0])) + 1e-5


@hypothesis_settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=120), share=st.floats(0.0, 1.0), n_docs=st.integers(0, 10_000))
def test_common_words_of_any_text_are_at_most_three_of_its_own_substrings(text, share, n_docs):
    from memory_app.search.analysis import query_terms

    terms = query_terms(text)
    df = {term: int(share * n_docs) for term in terms}
    words = engine.common_words(text, terms, df, n_docs)
    assert len(words) <= engine.COMMON_TERMS and len(set(words)) == len(words)
    assert all(word.strip() and word in text for word in words)
    if int(share * n_docs) < max(engine.COMMON_TERM_MIN_DOCS, engine.COMMON_TERM_SHARE * n_docs):
        assert words == []
