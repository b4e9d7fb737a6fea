"""The shared text analysis and BM25 of every search (``memory_app.search``)."""

import pytest

from memory_app.search.analysis import query_terms, stem, text_runs
from memory_app.search.embeddings import _MODEL_RUNS
from memory_app.search.ranking import bm25_scores, rrf_fuse


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("billing", "bill"),
        ("notes", "note"),
        ("boxes", "box"),
        ("companies", "compan"),
        ("quickly", "quick"),
        ("string", "string"),
        ("apply", "apply"),
        ("early", "early"),
        ("speed", "speed"),
        ("class", "class"),
    ],
)
def test_stemming_only_removes_a_suffix_and_keeps_short_words(word, expected):
    assert stem(word) == expected
    assert word.startswith(stem(word))  # a stem is a prefix, so SQL substring prefilters find it


def test_query_terms_are_distinct_capped_and_cover_cjk():
    assert query_terms("Meeting notes, meeting NOTES") == ["meet", "note"]
    assert query_terms("ｐｏｓｔｇｒｅｓ") == query_terms("postgres")  # NFKC
    assert query_terms("咖") == ["咖"]
    assert "数据" in query_terms("我们用什么数据库") and "我们" not in query_terms("我们用什么数据库")
    assert query_terms("the of and ?!") == []
    assert len(query_terms(" ".join(f"word{i}" for i in range(40)))) == 24


def test_word_terms_match_at_word_starts_only():
    texts = ["The application location is set to Berlin", "My cat is called Mochi", "Release 2025-05-01"]
    scores = bm25_scores(texts, query_terms("cat"), "cat")
    assert scores[0] == 0.0 and scores[1] > 0
    assert bm25_scores(texts, query_terms("5"), "5") == [0.0, 0.0, 0.0]
    assert bm25_scores(["决定用PostgreSQL 17"], query_terms("postgresql"), "postgresql")[0] > 0


def test_cjk_terms_match_inside_runs():
    coffee, tea = bm25_scores(["我每天早上喝咖啡", "我喝茶"], query_terms("咖"), "咖")
    assert coffee > 0 and tea == 0.0


def test_more_terms_covered_and_the_verbatim_query_rank_higher():
    texts = ["weekly report", "report", "the report goes out weekly"]
    scores = bm25_scores(texts, query_terms("weekly report"), "weekly report")
    assert scores[0] > scores[2] > scores[1] > 0


def test_rrf_fuses_rankings_by_reciprocal_rank():
    fused = dict(rrf_fuse([["a", "b"], ["b", "c"]], k=60))
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert rrf_fuse([["a", "b"], ["b", "c"]])[0][0] == "b"


def test_the_hashed_embedding_model_keeps_its_own_character_split():
    # Part of the stored vectors' model: a rare CJK extension character is a word run there,
    # whatever the search tokenizer does with it.
    assert list(text_runs("𠮷野家", runs=_MODEL_RUNS)) == [(False, "𠮷"), (True, "野家")]
    assert list(text_runs("𠮷野家")) == [(True, "𠮷野家")]
