"""The shared text analysis of every search (``memory_app.search.analysis``)."""

import pytest

from memory_app.search.analysis import match_spans, query_terms, stem, term_counts, text_runs
from memory_app.search.embeddings import _MODEL_RUNS


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("billing", "bill"),
        ("notes", "note"),
        ("boxes", "box"),
        ("decided", "decid"),
        ("decides", "decid"),
        ("databases", "databas"),
        ("database", "databas"),
        ("running", "run"),
        ("string", "string"),
        ("class", "class"),
    ],
)
def test_english_words_are_stemmed_with_snowball(word, expected):
    assert stem(word) == expected


def test_query_terms_are_distinct_capped_and_cover_cjk():
    assert query_terms("Meeting notes, meeting NOTES") == ["meet", "note"]
    assert query_terms("ｐｏｓｔｇｒｅｓ") == query_terms("postgres")  # NFKC
    assert query_terms("咖") == ["咖"]
    assert "数据" in query_terms("我们用什么数据库") and "我们" not in query_terms("我们用什么数据库")
    assert query_terms("the of and ?!") == []
    assert len(query_terms(" ".join(f"word{i}" for i in range(40)))) == 24


def test_document_terms_count_occurrences_and_cjk_characters():
    counts = term_counts("Decided: we decided on PostgreSQL 17. 我喜欢咖啡")
    assert counts["decid"] == 2 and counts["postgresql"] == 1 and counts["17"] == 1
    assert counts["咖啡"] == 1 and counts["咖"] == 1  # bigram and character
    assert "我" not in counts and "we" not in counts  # function character, stop word
    assert "x" * 65 not in term_counts("x" * 65)  # not a word: a hash or a blob


def test_one_character_query_matches_a_document_character_term():
    assert set(query_terms("咖")) <= set(term_counts("我每天早上喝咖啡"))
    assert not set(query_terms("咖")) & set(term_counts("我喝茶"))


def test_match_spans_mark_whole_words_and_cjk_bigrams():
    text = "We decided: PostgreSQL databases! 我最喜欢喝绿茶"
    spans = match_spans(text, query_terms("decide database 喜欢"))
    assert [text[a:b] for a, b in spans] == ["decided", "databases", "喜欢"]
    assert match_spans("location", query_terms("cat")) == []


def test_the_hashed_embedding_model_keeps_its_own_character_split():
    # Part of the stored vectors' model: a rare CJK extension character is a word run there,
    # whatever the search tokenizer does with it.
    assert list(text_runs("𠮷野家", runs=_MODEL_RUNS)) == [(False, "𠮷"), (True, "野家")]
    assert list(text_runs("𠮷野家")) == [(True, "𠮷野家")]
