"""What a source embeds can change between releases (a message's vector was the turn with the
one before it, and is now the mean of that and the turn alone): vectors record their source's
recipe, an older recipe's vectors keep serving, and the worker or ``refresh_embeddings`` makes
them again; the request path never does (docs/search.md, "Meaning")."""

import io

import numpy as np
import pytest
from django.core.management import call_command

from memory_app.memories import services as memory_services
from memory_app.search import embedder, engine
from memory_app.search.embeddings import from_bytes, get_provider, to_bytes
from memory_app.search.models import SearchDocument, SearchScope
from memory_app.threads import indexing
from memory_app.threads import services as thread_services
from memory_app.threads.history import history_search

pytestmark = pytest.mark.django_db


def _doc(message) -> SearchDocument:
    return SearchDocument.objects.get(source="message", ref=str(message.pk))


@pytest.fixture
def history(svc, alice, settings):
    """Two turns of alice's, the second's vector as the previous release stored it (the pair
    with the turn before, recipe 0), and one memory of hers."""
    settings.MEMORY_SEARCH_MODE = "dense"
    thread = thread_services.conversation_create(actor=svc, username="alice", title="pets")
    first = thread_services.message_create(
        actor=svc, conversation_id=thread.pk, role="user", content="We adopted a beagle"
    )
    second = thread_services.message_create(
        actor=svc, conversation_id=thread.pk, role="assistant", content="What is its name?"
    )
    memory = memory_services.memory_create(actor=alice, tier="user", kind="preference", content="I like plums")
    provider = get_provider()
    pair = provider.embed(["We adopted a beagle\nWhat is its name?"])[0]
    SearchDocument.objects.filter(pk=_doc(second).pk).update(vector=to_bytes(pair), recipe=0)
    return {"first": first, "second": second, "memory": memory, "pair": pair, "provider": provider}


def test_new_vectors_record_their_sources_recipe(history):
    assert indexing.MESSAGE_VECTOR_RECIPE >= 1
    assert _doc(history["first"]).recipe == indexing.MESSAGE_VECTOR_RECIPE
    memory_doc = SearchDocument.objects.get(ref=history["memory"].pk)
    assert memory_doc.vector is not None and memory_doc.recipe == 0  # memories never changed theirs


def test_an_older_recipes_vector_serves_until_made_again_then_is_the_current_recipes(history, alice):
    provider, second = history["provider"], history["second"]
    assert embedder.pending_count(provider=provider) == 0 and embedder.stale_count(provider=provider) == 1
    found = [hit["message_id"] for hit in history_search(user_id=alice.pk, query="What is its name?")["results"]]
    assert second.pk in found  # the old vector still ranks by meaning
    assert embedder.embed_pending(provider=provider) == 0  # what a request's process runs: nothing to do
    assert np.allclose(from_bytes(_doc(second).vector, provider.dim), history["pair"])
    version = SearchScope.objects.get(pk=_doc(second).scope_id).version

    assert embedder.embed_stale(provider=provider) == 1
    doc = _doc(second)
    alone, pair = provider.embed(["What is its name?", "We adopted a beagle\nWhat is its name?"])
    assert doc.recipe == indexing.MESSAGE_VECTOR_RECIPE and doc.model == provider.model
    assert np.allclose(from_bytes(doc.vector, provider.dim), (alone + pair) / 2, atol=1e-6)
    assert SearchScope.objects.get(pk=doc.scope_id).version != version  # cached vectors are replaced
    assert embedder.stale_count(provider=provider) == 0 and embedder.embed_stale(provider=provider) == 0
    # Nothing else was touched: the first turn and the memory keep their vectors and recipes.
    assert _doc(history["first"]).recipe == indexing.MESSAGE_VECTOR_RECIPE
    assert SearchDocument.objects.get(ref=history["memory"].pk).recipe == 0


def test_a_process_that_holds_the_old_vector_serves_the_new_one_once_it_is_made_again(history, alice):
    """Each process keeps a scope's vectors by document; the remade one has the same document id
    and model, so the cache must tell it by its recipe (it once kept the old vector until the
    process restarted)."""
    provider, second = history["provider"], history["second"]
    history_search(user_id=alice.pk, query="What is its name?")  # fills this process's cache

    def held_vector():
        scope = SearchScope.objects.get(pk=_doc(second).scope_id)
        entry = engine.vector_cache.entry(scope.pk, scope.version, provider.model, provider.dim)
        return entry.matrix[list(entry.ids).index(_doc(second).pk)]

    assert np.allclose(held_vector(), history["pair"])
    cached = engine.vector_cache.held(
        _doc(second).scope_id, SearchScope.objects.get(pk=_doc(second).scope_id).version, provider.model
    )
    assert cached is not None
    assert embedder.embed_stale(provider=provider) == 1
    alone, pair = provider.embed(["What is its name?", "We adopted a beagle\nWhat is its name?"])
    assert np.allclose(held_vector(), (alone + pair) / 2, atol=1e-6)
    assert not np.allclose(held_vector(), history["pair"])
    # The other turn's vector was reused, not read again, and is unchanged.
    first = _doc(history["first"])
    scope = SearchScope.objects.get(pk=first.scope_id)
    entry = engine.vector_cache.entry(scope.pk, scope.version, provider.model, provider.dim)
    assert np.allclose(entry.matrix[list(entry.ids).index(first.pk)], from_bytes(first.vector, provider.dim))


def test_a_vector_of_another_model_is_pending_not_stale_and_an_edit_meanwhile_is_not_overwritten(history, monkeypatch):
    provider, second = history["provider"], history["second"]
    SearchDocument.objects.filter(pk=_doc(history["first"]).pk).update(model="older-model", recipe=0)
    assert embedder.stale_count(provider=provider) == 1  # only the current model's vectors are "stale"
    assert embedder.pending_count(provider=provider) == 1
    # The text changes while the batch is embedded: its hash no longer matches, nothing is stored.
    plain = provider.embed

    def edited_meanwhile(texts):
        SearchDocument.objects.filter(pk=_doc(second).pk).update(text_hash="0" * 32)
        return plain(texts)

    monkeypatch.setattr(provider, "embed", edited_meanwhile)
    assert embedder.embed_stale(provider=provider) == 0
    assert _doc(second).recipe == 0 and np.allclose(from_bytes(_doc(second).vector, provider.dim), history["pair"])


def test_the_worker_makes_them_again_once_nothing_is_pending_and_refresh_does_too(history, svc, alice):
    provider = history["provider"]
    out = io.StringIO()
    call_command("memory_worker", "--once", "--embeddings", stdout=out)
    assert "1 document(s) embedded again (newer recipe)" in out.getvalue()
    assert embedder.stale_count(provider=provider) == 0
    # Again through refresh_embeddings, for another stale vector.
    SearchDocument.objects.filter(pk=_doc(history["first"]).pk).update(recipe=0)
    out = io.StringIO()
    call_command("refresh_embeddings", "--no-progress", stdout=out)
    assert "embedded again 1 document(s) made by an older recipe" in out.getvalue()
    assert embedder.stale_count(provider=provider) == 0
    out = io.StringIO()
    call_command("refresh_embeddings", "--no-progress", stdout=out)
    assert "embedded 0 document(s)" in out.getvalue() and "again" not in out.getvalue()
