"""``DELETE /api/conversations/{id}/messages``: at most ``MAX_FORGET_MESSAGES`` a call, the
oldest first, and how many are left; the Python client calls again until none is."""

import httpx
import memsvc
import pytest
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections

from identity_app.services import token_issue
from memory_app.search.models import SearchDocument
from memory_app.threads import services
from memory_app.threads.models import Message

pytestmark = pytest.mark.django_db


def _conversation_with(client, n: int, username="alice") -> str:
    conversation_id = client.post("/api/conversations", {"user": username, "title": "t"}, format="json").json()["id"]
    for i in range(n):
        response = client.post(
            f"/api/conversations/{conversation_id}/messages", {"role": "user", "content": f"turn {i}"}, format="json"
        )
        assert response.status_code == 201, response.content
    return conversation_id


def _documents(conversation_id) -> dict[str, int]:
    """Each message's text → the id of its index entry."""
    refs = dict(Message.objects.filter(conversation_id=conversation_id).values_list("id", "content"))
    found = SearchDocument.objects.filter(ref__in=[str(pk) for pk in refs]).values_list("ref", "id")
    return {refs[int(ref)]: pk for ref, pk in found}


def _texts(conversation_id) -> list[str]:
    return list(
        Message.objects.filter(conversation_id=conversation_id).order_by("id").values_list("content", flat=True)
    )


def test_more_than_a_call_forgets_the_oldest_and_says_how_many_are_left(api, svc, alice, monkeypatch):
    monkeypatch.setattr(services, "MAX_FORGET_MESSAGES", 3)
    client = api(svc)
    conversation_id = _conversation_with(client, 5)
    documents = _documents(conversation_id)
    first = client.delete(f"/api/conversations/{conversation_id}/messages")
    assert first.status_code == 200 and first.json() == {"forgotten": 3, "remaining": 2}
    assert _texts(conversation_id) == ["turn 3", "turn 4"]
    # The first turn left is indexed again (its vector was made with the turn before it as
    # context); the one after it is not touched.
    after = _documents(conversation_id)
    assert after["turn 3"] != documents["turn 3"] and after["turn 4"] == documents["turn 4"]
    second = client.delete(f"/api/conversations/{conversation_id}/messages")
    assert second.json() == {"forgotten": 2, "remaining": 0} and _texts(conversation_id) == []
    assert client.delete(f"/api/conversations/{conversation_id}/messages").json() == {"forgotten": 0, "remaining": 0}


def test_another_users_conversation_is_not_found_and_keeps_its_messages(api, svc, alice, bob, monkeypatch):
    monkeypatch.setattr(services, "MAX_FORGET_MESSAGES", 3)
    conversation_id = _conversation_with(api(svc), 5)
    assert api(bob).delete(f"/api/conversations/{conversation_id}/messages").status_code == 404
    assert len(_texts(conversation_id)) == 5


def test_the_client_forgets_them_all_in_as_many_calls_as_it_takes(api, svc, alice, monkeypatch):
    monkeypatch.setattr(services, "MAX_FORGET_MESSAGES", 2)
    conversation_id = _conversation_with(api(svc), 7)
    _, key = token_issue(user=svc)
    # The real client over the real application, in this process (as Django's test client
    # does, the test's database connection stays open between the requests).
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        http = httpx.Client(transport=httpx.WSGITransport(app=get_wsgi_application()), base_url="http://testserver")
        client = memsvc.Client("http://testserver", key, http=http)
        assert client.forget_messages(conversation_id) == 7
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    assert _texts(conversation_id) == []


def test_forgetting_a_turn_indexes_again_the_next_turn_past_a_tool_call(api, svc, alice):
    """The answer's vector was made with the user's turn before it, whatever tool calls sat
    between: that answer is indexed again, so the forgotten text is in no vector."""
    client = api(svc)
    conversation_id = client.post("/api/conversations", {"user": "alice", "title": "t"}, format="json").json()["id"]
    sent = client.post(
        f"/api/conversations/{conversation_id}/messages/batch",
        {
            "messages": [
                {"role": "user", "content": "My bank PIN hint is zanzibarquux"},
                {
                    "role": "assistant",
                    "type": "tool_call",
                    "content": "",
                    "tool_calls": [{"name": "lookup", "input": {}}],
                },
                {"role": "assistant", "content": "Noted, I will remember that."},
            ]
        },
        format="json",
    )
    assert sent.status_code == 201, sent.content
    said = sent.json()["results"][0]["id"]
    before = _documents(conversation_id)["Noted, I will remember that."]
    assert client.delete(f"/api/conversations/{conversation_id}/messages/{said}").status_code in (200, 204)
    assert _documents(conversation_id)["Noted, I will remember that."] != before
