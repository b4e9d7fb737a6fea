"""Scoped items stay usable when parts fail: a bad session in a dreaming round, an
embedding service that is down, an item that moved scope before it was archived."""

import socket

import pytest
from django.core.management import call_command

from config.errors import NotFound
from memory_app.memories import services
from memory_app.memories.models import Memory, Status
from memory_app.scoped.consolidation import dream_round
from memory_app.scoped.context import scoped_items
from memory_app.scoped.services import scoped_item_create
from tests.factories import AgentRunFactory, ConversationFactory, MessageFactory, UserFactory

pytestmark = pytest.mark.django_db

A = "milky:private:10001"
B = "milky:private:20002"


def history(session, owner, text):
    conversation = ConversationFactory(owner=owner, session_key=session)
    MessageFactory(conversation=conversation, content=text)
    return conversation


def closed_port_url():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there any more: connections are refused at once
    return f"http://127.0.0.1:{port}/v1"


def test_dream_round_reports_a_bad_session_and_dreams_the_others(svc):
    owner = UserFactory()
    history("milky:private", owner, "I prefer tea.")  # malformed key stored by a runtime
    history(A, owner, "I prefer window seats.")
    results = dream_round(limit=10)
    assert set(results) == {"milky:private", A}
    assert results["milky:private"].code == "invalid_session_key"
    assert list(Memory.objects.values_list("scope_id", "content")) == [(A, "I prefer window seats.")]


def test_context_falls_back_to_keyword_search_when_embeddings_are_down(svc, alice, settings):
    scoped_item_create(actor=svc, session_id=A, kind="preference", content="I drink oolong tea")
    scoped_item_create(actor=svc, session_id=B, kind="preference", content="I drink black tea")
    settings.MEMORY_EMBEDDING_PROVIDER = "openai"
    settings.MEMORY_EMBEDDING_URL = closed_port_url()
    run = AgentRunFactory(user=alice, conversation=ConversationFactory(owner=alice, session_key=A))
    text = scoped_items(run=run, query="tea")[0]
    assert "oolong" in text and "black tea" not in text


def test_archive_pinned_to_a_scope_refuses_a_row_that_moved(svc):
    item, _ = scoped_item_create(actor=svc, session_id=A, kind="preference", content="I like jazz")
    with pytest.raises(NotFound):
        services.memory_archive(actor=svc, memory_id=item.pk, tier="chat", scope_id=B)
    assert Memory.objects.get(pk=item.pk).status == Status.ACTIVE
    assert services.memory_archive(actor=svc, memory_id=item.pk, tier="chat", scope_id=A)


def test_memory_worker_embeds_missing_vectors_and_survives_a_provider_outage(svc, settings, capsys):
    from memory_app.search.models import SearchDocument

    scoped_item_create(actor=svc, session_id=A, kind="preference", content="I like jazz")
    SearchDocument.objects.update(model="", vector=None)
    call_command("memory_worker", "--once", "--embeddings")
    assert "embeddings: 1 document(s) embedded" in capsys.readouterr().out
    assert SearchDocument.objects.exclude(vector=None).count() == 1
    settings.MEMORY_EMBEDDING_PROVIDER = "openai"
    settings.MEMORY_EMBEDDING_URL = closed_port_url()
    call_command("memory_worker", "--once", "--embeddings")
    assert "provider unavailable" in capsys.readouterr().out


def _all_scoped_text():
    from memory_app.scoped.models import MemoryCandidate

    rows = list(Memory.objects.values_list("content", "evidence", "metadata"))
    rows += list(MemoryCandidate.objects.values_list("content", "evidence", "reason"))
    return repr(rows)


def test_consolidation_never_writes_a_secret_into_shared_or_chat_memory(api, svc, alice):
    from memory_app.scoped.consolidation import consolidate_turn

    consolidate_turn(
        actor=svc,
        session_id=A,
        messages=[
            {"role": "user", "content": "We decided the staging database password is hunter2secret for everyone."},
            {"role": "user", "content": "I prefer the token ghp_1234567890abcdefghijklmnopqrstuvwxyzAB in CI."},
            {"role": "user", "content": "We decided that alerts go to oncall@example.com from now on."},
            {"role": "user", "content": "I prefer mail to me@example.com for reports."},
        ],
    )
    stored = _all_scoped_text()
    assert "hunter2secret" not in stored and "1234567890abcdefghij" not in stored
    assert "oncall@example.com" not in stored  # global: contact details removed
    assert "me@example.com" in stored  # the user's own chat keeps it
    response = api(alice).post(
        "/api/memory/search", {"query": "staging database password", "session_id": "milky:10001"}, format="json"
    )
    assert response.status_code == 200
    assert "hunter2secret" not in response.content.decode()


@pytest.mark.parametrize("bad", ["tea\x00time", "tea\ud800time"])
def test_consolidation_service_refuses_nul_and_surrogates(svc, bad):
    from config.errors import InvalidInput
    from memory_app.scoped.consolidation import consolidate_turn
    from memory_app.scoped.models import MemoryCandidate

    with pytest.raises(InvalidInput):
        consolidate_turn(actor=svc, session_id=A, messages=[{"role": "user", "content": f"I prefer {bad}."}])
    assert not Memory.objects.exists() and not MemoryCandidate.objects.exists()
