"""``lexicon.knows_a_word``: whether a query holds a word the bilingual dictionary can read, the
signal that gates a query of made-up words more strictly (``dense.UNKNOWN_GATE_QUANTILE``)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_app.search import lexicon


@pytest.mark.parametrize(
    "query",
    [
        "peanuts",  # a word of the translations (plural folded or not)
        "coriander",
        "cofee",  # one letter from "coffee": a typo of a known word
        "violn",
        "Where does Grace live?",  # function words: a question
        "我喜欢喝什么",
        "花生",
        "xyzzy plugh",  # "plugh" is one letter from "plug"
    ],
)
def test_words_of_the_dictionary_and_their_typos_are_known(query):
    assert lexicon.knows_a_word(query)


@pytest.mark.parametrize(
    "query",
    [
        "tofanu tuhuniben",  # made-up words
        "bumon hogipex pavula",
        "qwzx",  # too short to be read as a typo, and no word
        "кофе",  # scripts the dictionary does not read
        "λεμόνι",
        "2024",  # no letters
        "#%& *",
        "",
    ],
)
def test_made_up_words_other_scripts_and_no_letters_are_not(query):
    assert not lexicon.knows_a_word(query)


@given(st.text(max_size=80), st.sampled_from(["tea", "violin", "what", "咖啡"]))
def test_whatever_surrounds_a_known_word_the_text_is_known_and_nothing_raises(text, word):
    lexicon.knows_a_word(text)
    assert lexicon.knows_a_word(f"{text} {word} {text}")
