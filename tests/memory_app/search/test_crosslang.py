"""Searches across languages and searches that find nothing (docs/search.md, "Across languages" and
"Nothing matches"), with the e5 model: a word in one language finds the memory written in the
other, nonsense and unrelated questions answer empty in the lists, the memory home (notes lines
included) and ``/api/memory/search`` (which returns its closest items only when asked, and says
so), another user's memories never appear, a question unrelated to everything searched answers
empty, and a statement close to any question gives way to the one that answers (docs/search.md,
"Background level")."""

import json
from pathlib import Path

import numpy as np
import pytest

from memory_app.home.search import SearchHit, home_search
from memory_app.memories import services
from memory_app.notes import services as notes_services
from memory_app.search import background, dense, engine, lexicon, vectorcache
from memory_app.search.embedder import embed_pending
from tests.factories import ChatBindingFactory

SESSION = "milky:private:39001"
MEMORIES = [
    "我对花生过敏。",
    "我不喜欢吃香菜，点菜时别放。",
    "I drink coffee every morning.",
    "Keeps antihistamine tablets in the backpack.",
    "Likes spicy food, the hotter the better.",
    "每天尽量喝两升水。",
    "We have a dog called Lucky.",
    "宠物医院就在隔壁街。",
    "I'm learning to play the violin.",
    "我的工作是牙医。",
    "Usually works from home on Fridays.",
    "我在攒钱买相机。",
]
NOTES = "- Answer in the language I write in.\n- 代码示例请用 Python。\n- Use the metric system.\n"


@pytest.fixture
def bilingual(e5, alice, svc):
    """alice's memories in both languages, as user memories and as items of her chat, and her notes file."""
    ChatBindingFactory(chat_key=SESSION, user=alice)
    for text in MEMORIES:
        services.memory_create(actor=alice, tier="user", kind="fact", content=text)
        engine_item(svc, text)
    notes_services.workspace_file_write(user=alice, name="MEMORY.md", content=NOTES)
    home_search(user=alice, query="warm up")  # indexes the notes lines
    embed_pending()
    return alice


def engine_item(svc, text):
    from memory_app.scoped.services import scoped_item_create

    return scoped_item_create(actor=svc, kind="fact", content=text, session_id=SESSION)[0]


def listed(api, user, query):
    response = api(user).get("/api/users/me/memories", {"q": query})
    assert response.status_code == 200, response.content
    return [row["content"] for row in response.json()["results"]]


def searched(api, user, query, **extra):
    response = api(user).post("/api/memory/search", {"query": query, "session_id": SESSION, **extra}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_the_lexicon_translates_words_both_ways_and_nonsense_to_nothing():
    assert "花生" in lexicon.translate("peanuts").split()
    assert "香菜" in lexicon.translate("coriander").split()
    assert "coriander" in lexicon.translate("我不喜欢香菜")
    assert lexicon.translate("xyzzy plugh") == ""


@pytest.mark.django_db
def test_the_model_gets_a_keyword_query_with_at_most_two_translations_in_turn_and_a_question_as_asked():
    class Calibrated:
        calibrated = True

    def embedded(query):
        return engine.meaning_text(query, query, True, Calibrated())[3]

    assert engine.DENSE_TRANSLATIONS == 2
    word = lexicon.translate_words("landlord")[0][0]
    assert len(word) == lexicon.PER_WORD and embedded("landlord") == f"landlord {word[0]} {word[1]}"
    first, second = (group for group in lexicon.translate_words("birthday landlord")[0])
    assert embedded("birthday landlord").split()[2:] == [first[0], second[0]]
    assert embedded("when is my landlord's birthday") == "when is my landlord's birthday"
    # The word ranking searches every translation all the same.
    assert set(engine.meaning_text("birthday landlord", "birthday landlord", True, Calibrated())[2].split()) == {
        *first,
        *second,
    }


def test_an_english_word_finds_the_chinese_memory_through_the_list(api, bilingual):
    assert listed(api, bilingual, "peanuts")[:1] == ["我对花生过敏。"]
    assert listed(api, bilingual, "coriander")[:1] == ["我不喜欢吃香菜，点菜时别放。"]


@pytest.mark.django_db
def test_a_chinese_word_or_question_finds_the_english_memory(api, bilingual):
    assert listed(api, bilingual, "咖啡")[:1] == ["I drink coffee every morning."]
    shown = [hit.memory.content for hit in home_search(user=bilingual, query="我早上喝什么").hits]
    assert "I drink coffee every morning." in shown[:3]
    assert searched(api, bilingual, "小提琴")["results"][0]["content"] == "I'm learning to play the violin."


@pytest.mark.django_db
def test_a_word_in_the_memorys_own_language_is_still_found(api, bilingual):
    assert listed(api, bilingual, "花生")[:1] == ["我对花生过敏。"]
    assert listed(api, bilingual, "violin")[:1] == ["I'm learning to play the violin."]


@pytest.mark.django_db
def test_a_word_of_a_third_language_or_with_an_accent_finds_the_memory(api, bilingual):
    for word in ("Kaffee", "кофе", "café"):
        assert listed(api, bilingual, word)[:1] == ["I drink coffee every morning."], word


@pytest.mark.django_db
def test_nonsense_answers_empty_everywhere_notes_lines_included(api, bilingual):
    for query in ("xyzzy plugh", "qwpzx vbnmk", "asdfgh jkl", "blorvik tanuse"):
        assert listed(api, bilingual, query) == [], query
        assert home_search(user=bilingual, query=query).ranked == [], query
        body = searched(api, bilingual, query)
        assert body["results"] == [] and body["matched"] is True, query


@pytest.mark.django_db
def test_an_unrelated_question_answers_empty(api, bilingual):
    for query in ("How far is Neptune from the Sun?", "海王星离太阳有多远？"):
        assert listed(api, bilingual, query) == [], query
        assert home_search(user=bilingual, query=query).ranked == [], query
        assert searched(api, bilingual, query)["results"] == [], query


@pytest.mark.django_db
def test_memory_search_returns_its_closest_only_when_asked_and_says_so(api, bilingual):
    body = searched(api, bilingual, "xyzzy plugh", keep_best=True, limit=3)
    assert len(body["results"]) == 3 and body["matched"] is False
    assert any("closest" in warning for warning in body["warnings"])
    body = searched(api, bilingual, "peanuts", keep_best=True)  # something matches: as without it
    assert body["matched"] is True and body["results"][0]["content"] == "我对花生过敏。"


@pytest.mark.django_db
def test_another_users_memories_never_appear(api, e5, alice, bob):
    services.memory_create(actor=bob, tier="user", kind="fact", content="我对花生过敏。")
    services.memory_create(actor=alice, tier="user", kind="fact", content="I drink coffee every morning.")
    embed_pending()
    assert listed(api, alice, "peanuts") == []
    assert home_search(user=alice, query="peanuts").ranked == []
    assert listed(api, bob, "peanuts") == ["我对花生过敏。"]


def test_memory_search_takes_the_query_across_languages_only_where_the_documents_mix_them(e5):
    """``/api/memory/search`` (``across="auto"``): over a chat in one language the model's own
    query vector, which ranks better there; where a tenth or more is in the other language, the
    lists' vector without the language direction."""
    english = e5.embed(["I drink coffee every morning.", "We have a dog called Lucky.", "I play tennis."])
    chinese = e5.embed(["我对花生过敏。"])

    def entry(matrix):
        return vectorcache.CacheEntry(1, e5.model, np.arange(len(matrix)), matrix, None, None, {}, matrix.sum(axis=0))

    assert not dense._mixed_languages([entry(english)], e5, chinese_query=False)
    assert dense._mixed_languages([entry(np.vstack([english, chinese]))], e5, chinese_query=False)
    assert dense._mixed_languages([entry(english)], e5, chinese_query=True)


# Observations of a long chat as an extractor writes them: the small talk names the person too.
GRACE = [
    "Grace is feeling a bit under the weather today.",
    "Grace volunteers at an animal shelter (14 December 2022).",
    "On 22 October 2022, Grace is feeling a bit under the weather today.",
    "Grace's little sister got married in Porto and Grace flew there (17 February 2023).",
    "Omar told Grace that he moved into a loft downtown. Grace asked him for more details.",
    "Grace told Omar that she moved into a cottage outside town. Omar asked her for more details.",
]


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_the_statement_that_answers_outranks_small_talk_that_names_the_person(api, e5, alice, svc, mode, monkeypatch):
    ChatBindingFactory(chat_key=SESSION, user=alice)
    for text in GRACE:
        engine_item(svc, text)
    embed_pending()
    body = searched(api, alice, "Where does Grace live these days?", mode=mode, limit=3)
    assert body["results"][0]["content"] == GRACE[-1]
    assert GRACE[4] in [hit["content"] for hit in body["results"]]  # Omar's move: the same words, lower
    # Ranked by the similarity alone, the small talk comes first.
    monkeypatch.setattr(dense, "BACKGROUND_RANK_WEIGHT", 0.0)
    body = searched(api, alice, "Where does Grace live these days?", mode=mode, limit=3)
    assert body["results"][0]["content"] != GRACE[-1]


# One user of the evaluation set (bench/crosslang_gen.py): 44 memories in both languages.
CROSSLANG_USER = json.loads(
    (Path(__file__).resolve().parents[3] / "bench" / "data" / "crosslang" / "set.json").read_text(encoding="utf-8")
)["users"][0]


def crosslang_memories(user):
    """The evaluation user's 44 memories, as ``user``'s, embedded: their content by key."""
    content = {}
    for memory in CROSSLANG_USER["memories"]:
        services.memory_create(actor=user, tier="user", kind="fact", content=memory["content"])
        content[memory["key"]] = memory["content"]
    embed_pending()
    return content


def listed_with_and_without(api, user, unrelated, monkeypatch, module, lever):
    """The evaluation user's memories as ``user``'s, and the list's ``answered_and_found`` as it
    is, then with ``module.lever`` off (None)."""
    content = crosslang_memories(user)

    def search(query):
        return listed(api, user, query)

    on = answered_and_found(search, unrelated, content)
    monkeypatch.setattr(module, lever, None)
    return on, answered_and_found(search, unrelated, content)


def answered_and_found(search, unrelated, content, listed_counts=None):
    """How many of the ``unrelated`` questions ``search`` (a query → the texts it answers with)
    answers with anything, and how many of the evaluation user's own questions find their memory
    in its first three; ``listed_counts``, if given, receives how many texts each unrelated
    question listed."""
    answers = [search(query) for query in unrelated]
    if listed_counts is not None:
        listed_counts.extend(len(answer) for answer in answers)
    answered = sum(bool(answer) for answer in answers)
    own = [q for q in CROSSLANG_USER["questions"] if q["kind"] == "question"]
    found = sum(content[q["answer"]] in search(q["q"])[:3] for q in own)
    return answered, found


@pytest.mark.django_db
def test_a_question_unrelated_to_all_the_memories_answers_empty_and_a_related_one_does_not(api, e5, alice, monkeypatch):
    content = crosslang_memories(alice)
    unrelated = ["海王星离太阳有多远？", "人的头骨有多少块骨头？", "柏林墙倒塌发生在哪一年？"]
    for query in unrelated:
        assert listed(api, alice, query) == [], query
    questions = [q for q in CROSSLANG_USER["questions"] if q["kind"] == "question"][:8]
    for question in questions:
        assert content[question["answer"]] in listed(api, alice, question["q"])[:3], question["q"]
    # They clear some memory's own floor: without the gate, they answer with it. (Which of them
    # do is a matter of the last digits of the model's arithmetic, which differ between
    # processors; that one does is what shows the gate at work.)
    monkeypatch.setattr(dense, "GATE_QUANTILE", None)
    assert any(listed(api, alice, query) for query in unrelated)


NONSENSE = json.loads(
    (Path(__file__).resolve().parents[3] / "bench" / "data" / "crosslang" / "set.json").read_text(encoding="utf-8")
)["nonsense"]


@pytest.mark.django_db
def test_a_query_mostly_of_made_up_words_must_stand_out_and_a_word_with_an_accent_or_a_typo_need_not(
    api, e5, alice, monkeypatch
):
    """Made-up words, random letters and other scripts (every third generated nonsense query of
    the evaluation set) over one evaluation user's 44 memories: the strict gate of a query at most
    half of whose words are words (``lexicon.mostly_unread``) leaves nearly all of them empty;
    without it, many more answered. A word with an accent or a typo, or a
    word of another language, is a word."""
    for memory in CROSSLANG_USER["memories"]:
        services.memory_create(actor=alice, tier="user", kind="fact", content=memory["content"])
    services.memory_create(actor=alice, tier="user", kind="fact", content="I drink coffee every morning.")
    embed_pending()
    queries = [item["q"] for item in NONSENSE if item["kind"] != "named"][::3]
    answered = sum(bool(listed(api, alice, query)) for query in queries)
    for word in ("café", "cofffee", "Kaffee", "кофе"):  # a typo, a word of another language
        assert listed(api, alice, word)[:1] == ["I drink coffee every morning."], word
    monkeypatch.setattr(dense, "UNKNOWN_GATE_QUANTILE", None)
    without = sum(bool(listed(api, alice, query)) for query in queries)
    # Measured: 2 of 166 with the gate, 19 without (the last digits of the model's arithmetic
    # differ between processors, hence the room).
    assert answered <= 0.04 * len(queries) and without >= answered + 8, (answered, without)


UNRELATED = json.loads(
    (Path(__file__).resolve().parents[3] / "bench" / "data" / "crosslang" / "set.json").read_text(encoding="utf-8")
)["unrelated"]


@pytest.mark.django_db
def test_a_question_nobodys_memory_answers_must_stand_out_from_the_background_questions(api, e5, alice, monkeypatch):
    """Every other unrelated question of the evaluation set (both languages) over one evaluation
    user's 44 memories: with the stand-out gate (``dense.STAND_OUT_QUANTILE``) few answer, with
    the margin gate alone many more; the user's own questions find their memory as often. Measured
    without the margin for questions about the world, which shuts many of the same questions
    (``test_a_question_about_the_world_needs_a_memory_clearly_nearer_it_than_its_kind``)."""
    monkeypatch.setattr(dense, "IMPERSONAL_APART_MARGIN", None)
    unrelated = [item["q"] for item in UNRELATED[::2]]
    (answered, found), (without, found_without) = listed_with_and_without(
        api, alice, unrelated, monkeypatch, dense, "STAND_OUT_QUANTILE"
    )
    # Measured: 1 of 100 answers with it, 27 without; 45 of the 46 own questions found either way
    # (the last digits of the model's arithmetic differ between processors, hence the room).
    assert found >= found_without
    assert answered <= 0.1 * len(unrelated) and without >= answered + 10, (answered, without)


LATER = json.loads(
    (Path(__file__).resolve().parents[3] / "bench" / "data" / "crosslang" / "unrelated_later.json").read_text(
        encoding="utf-8"
    )
)


@pytest.mark.django_db
def test_a_memory_holding_one_word_of_a_question_its_scope_does_not_answer_is_not_listed(api, e5, alice, monkeypatch):
    """The unrelated questions written later, over one evaluation user's 44 memories: where the
    user's scope does not clear the gates, a memory found by words must hold ``LEXICAL_GATED`` of
    the question's weight (on the development set, "离心机是怎么工作的" no longer lists
    我的工作是牙医 for its one shared word). Without that rule more answer; the user's own
    questions find their memory as often."""
    unrelated = [item["q"] for item in LATER]
    (answered, found), (without, found_without) = listed_with_and_without(
        api, alice, unrelated, monkeypatch, engine, "LEXICAL_GATED"
    )
    # Measured: 5 of 100 answer with the rule, 9 without; 45 of the 46 own questions found either
    # way (the last digits of the model's arithmetic differ between processors, hence the room).
    assert found >= found_without
    assert answered <= 0.1 * len(unrelated) and without >= answered + 2, (answered, without)


@pytest.mark.django_db
def test_a_question_about_the_world_needs_a_memory_clearly_nearer_it_than_its_kind(api, e5, alice, monkeypatch):
    """The fourth and fifth sets' unrelated questions over one evaluation user's 44 memories: a
    question that refers to no one (``dense.refers_to_someone``) is answered by a memory only if
    that memory is nearer to it than its nearest background questions are by
    ``dense.IMPERSONAL_APART_MARGIN``, not the model's smaller margin. Without it more answer; the
    user's own questions (most of which say "my" or 我, some not) find their memory as often."""
    folder = Path(__file__).resolve().parents[3] / "bench" / "data" / "crosslang"
    unrelated = [
        item["q"]
        for name in ("unrelated_fourth.json", "unrelated_fifth.json")
        for item in json.loads((folder / name).read_text(encoding="utf-8"))
    ]
    (answered, found), (without, found_without) = listed_with_and_without(
        api, alice, unrelated, monkeypatch, dense, "IMPERSONAL_APART_MARGIN"
    )
    # Measured: 17 of 200 answer with it, 22 without; 45 of the 46 own questions found either way
    # (the last digits of the model's arithmetic differ between processors, hence the room).
    assert found >= found_without
    assert answered <= 0.1 * len(unrelated) and without >= answered + 3, (answered, without)


def test_a_document_found_by_words_in_a_scope_the_gates_shut_needs_that_share_of_the_query():
    """``engine._kept_by_words``: a document holding nearly all the query is kept; one below its
    floor by meaning is not; in a scope the gates shut (``gated``), only one holding
    ``LEXICAL_GATED`` of the query's weight; elsewhere, or not embedded yet, by its words."""
    margins = {1: 0.02, 2: -0.01, 3: 0.02, 4: 0.02}
    gated = {3, 4}
    share = engine.LEXICAL_GATED
    assert engine._kept_by_words(1.0, 2, margins, gated)
    assert not engine._kept_by_words(0.9, 2, margins, gated)
    assert engine._kept_by_words(0.1, 1, margins, gated)
    assert engine._kept_by_words(share, 3, margins, gated)
    assert not engine._kept_by_words(share - 0.01, 4, margins, gated)
    assert engine._kept_by_words(0.1, 5, margins, gated)  # not embedded yet


@pytest.mark.django_db
def test_a_question_to_the_home_must_stand_out_from_its_nearest_background_questions_over_all_scopes(
    e5, alice, monkeypatch
):
    """The memory home searches the evaluation user's memories and the lines of her notes file
    ("Use the metric system", "代码示例请用 Python"), each a scope with its own gates, asked the
    unrelated questions written later. A how-to question is as close to such a line as the
    background how-to questions are: its level is its similarity to the background questions
    nearest it (``dense.QUESTION_NEIGHBOURS``), not to them all, and it must stand out over all
    the scopes together too (``dense.STAND_OUT_TOGETHER``), as the background questions do at
    best over them. Without either, more answer; the user's own questions are found as often.
    And a memory or notes line no nearer the question than its nearest background questions are
    ("Use the metric system" for "How do you calculate the area of a circle?") is near it for its
    kind of question, and is not listed (``dense.NEAREST_QUESTIONS_APART``): without that test more
    are listed."""
    notes_services.workspace_file_write(user=alice, name="MEMORY.md", content="\n".join(CROSSLANG_USER["notes"]))
    home_search(user=alice, query="warm up")  # indexes the notes lines
    content = crosslang_memories(alice)
    unrelated = [item["q"] for item in LATER]
    neighbours = dense.QUESTION_NEIGHBOURS
    # Each lever alone, as measured when it came: the margin for questions about the world shuts
    # many of the same questions (its own test above).
    monkeypatch.setattr(dense, "IMPERSONAL_APART_MARGIN", None)

    def search(query):
        ranked = home_search(user=alice, query=query).ranked
        return [hit.memory.content if isinstance(hit, SearchHit) else hit.text for hit in ranked]

    listed, listed_apart = [], []
    answered, found = answered_and_found(search, unrelated, content, listed)
    monkeypatch.setattr(dense, "STAND_OUT_TOGETHER", False)
    alone, found_alone = answered_and_found(search, unrelated, content)
    monkeypatch.setattr(dense, "STAND_OUT_TOGETHER", True)
    monkeypatch.setattr(dense, "QUESTION_NEIGHBOURS", 0)  # calibrations of its own (their key)
    mean, found_mean = answered_and_found(search, unrelated, content)
    monkeypatch.setattr(dense, "QUESTION_NEIGHBOURS", neighbours)
    monkeypatch.setattr(dense, "NEAREST_QUESTIONS_APART", False)
    _, found_apart = answered_and_found(search, unrelated, content, listed_apart)
    # Measured: 9 of 100 answer, 13 without the test over all the scopes (15 before the test of
    # the nearest questions), 12 with the mean over all the background questions; 14 texts
    # listed over the 100, without the test of the nearest questions 17 on one processor and 15
    # on another (AVX-512); 45 of the 46 own questions found each way (the last digits of the
    # model's arithmetic differ between processors, hence the room).
    assert found >= max(found_alone, found_mean, found_apart)
    assert answered <= 0.15 * len(unrelated), answered
    assert alone >= answered + 3 and mean >= answered + 1, (answered, alone, mean)
    assert sum(listed_apart) > sum(listed), (sum(listed), sum(listed_apart))


def test_the_background_questions_are_none_of_the_questions_they_are_judged_by():
    """What the gates are calibrated with is not what the evaluation asks (bench/data/crosslang/:
    the set's unrelated questions, those written later, the third set written before the
    stand-out gate took ``MORE_QUESTIONS``, the fourth written before any change that followed,
    the fifth before the changes that followed the fourth, and the sixth before those that
    followed the fifth), nor one of them with other spacing or punctuation."""
    folder = Path(__file__).resolve().parents[3] / "bench" / "data" / "crosslang"
    asked = [item["q"] for item in UNRELATED]
    for name in (
        "unrelated_later.json",
        "unrelated_third.json",
        "unrelated_fourth.json",
        "unrelated_fifth.json",
        "unrelated_sixth.json",
    ):
        asked += [item["q"] for item in json.loads((folder / name).read_text(encoding="utf-8"))]
    assert len(asked) == 700

    def bare(text):
        return "".join(ch for ch in text.casefold() if ch.isalnum())

    calibrated = {bare(text) for text in background.BACKGROUND_QUERIES + background.BACKGROUND_QUESTIONS}
    assert len(background.BACKGROUND_QUESTIONS) >= 100
    assert not [text for text in asked if bare(text) in calibrated]
