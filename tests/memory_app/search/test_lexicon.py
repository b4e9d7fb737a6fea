"""``lexicon.read_words``: which words of a query are words (of the bilingual dictionary, typos of
its English ones, or common words of the languages of ``WORD_LANGUAGES``), the signal that gates
a query of made-up words more strictly (``lexicon.mostly_unread``, ``dense.UNKNOWN_GATE_QUANTILE``)."""

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_app.search import lexicon


@pytest.mark.parametrize(
    "query",
    [
        "peanuts",  # a word of the translations (plural folded or not)
        "coriander",
        "babysit",  # a common English word the dictionary's translations lack
        "cofee",  # one letter from "coffee": a typo of a known word
        "violn",
        "Where does Grace live?",  # function words: a question
        "我喜欢喝什么",
        "花生",
        "茶",  # a character common as a word of its own
        "Kaffee",  # common words of other languages, accents and case folded
        "Geburtstag",
        "кофе",
        "λεμόνι",
        "Straße",
        "café",
    ],
)
def test_words_typos_and_common_words_of_other_languages_are_known(query):
    known, unknown, _ = lexicon.read_words(query)
    assert known >= 1 and not unknown
    assert not lexicon.mostly_unread(query)


@pytest.mark.parametrize(
    "query",
    [
        "tofanu tuhuniben",  # made-up words
        "qwzx",  # too short to be read as a typo, and no word
        "факпф жщыэ",  # made-up words of another alphabet
        "嵼殦",  # characters no word is made of
        "M9H",  # letters of a code: no word
        "2024",  # no letters
        "#%& *",
        "",
    ],
)
def test_made_up_words_rare_characters_and_no_letters_are_not(query):
    assert lexicon.read_words(query)[0] == 0
    assert lexicon.mostly_unread(query)


@pytest.mark.parametrize(
    ("query", "counts"),
    [
        ("tenith paveti rudijawuk", (1, 2, 0)),  # "tenith" is a typo of "tenth"; the rest made up
        ("who can babysit", (1, 0, 2)),
        ("what is qzvrt plor", (1, 1, 2)),  # "plor": one letter from "plot"
        ("我的胆固醇高吗", (2, 0, 3)),
    ],
)
def test_read_words_counts_known_unknown_and_function_words(query, counts):
    assert lexicon.read_words(query) == counts


def test_a_query_is_mostly_unread_when_at_most_half_its_words_are_words():
    assert lexicon.read_words("xyzzy plugh") == (1, 1, 0)  # "plugh" is one letter from "plug"
    assert lexicon.mostly_unread("xyzzy plugh")
    assert lexicon.mostly_unread("tenith paveti rudijawuk")
    assert lexicon.mostly_unread("bumon hogipex pavula")  # one of them a word somewhere
    assert lexicon.mostly_unread("what is qzvrt plor")  # function words do not count
    assert not lexicon.mostly_unread("jelonarex violin coffee")


WORDS = st.sampled_from(["tea", "violin", "Kaffee", "咖啡"])


@given(st.text(max_size=80), st.lists(WORDS, min_size=1, max_size=4))
def test_whatever_text_words_added_to_it_are_read_and_never_make_it_less_read(text, words):
    known, unknown, function = lexicon.read_words(text)
    more = lexicon.read_words(f"{text} {' '.join(words)}")
    assert more[0] >= known + len(words) and more[1] == unknown and more[2] == function
    if not lexicon.mostly_unread(text):
        assert not lexicon.mostly_unread(f"{text} {' '.join(words)}")


def _fold_by_definition(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(c))


@given(st.text(max_size=40) | st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=40))
def test_folding_is_casefold_then_decomposition_without_combining_marks_whatever_the_text(text):
    """``_fold`` skips the decomposition where it changes nothing (ASCII, or text that decomposes to
    ASCII): the same result as the definition, for any text."""
    assert lexicon._fold(text) == _fold_by_definition(text)


@pytest.mark.parametrize("word", ["Straße", "CAFÉ", "İstanbul", "ǅemal", "ﬁne", "Ёлка", "Ωmega", "K"])
def test_folding_the_letters_where_case_and_decomposition_are_not_one_to_one(word):
    assert lexicon._fold(word) == _fold_by_definition(word)


def test_the_folding_table_keeps_at_most_its_size_whatever_the_queries_bring():
    """Every character a query brings is folded right, but the table of characters seen stays
    bounded (a process serves anyone's queries)."""
    text = "".join(
        chr(code) for code in range(0x0300, 0x0300 + 3 * lexicon.COMBINING_TABLE_SIZE) if chr(code).isprintable()
    )
    assert lexicon._fold(text) == _fold_by_definition(text)
    assert len(lexicon._WITHOUT_COMBINING_MARKS) <= lexicon.COMBINING_TABLE_SIZE
