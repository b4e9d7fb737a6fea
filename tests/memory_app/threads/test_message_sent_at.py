"""``sent_at`` of a message: when it was said, as the runtime reports it (default: when stored)."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from config.errors import InvalidInput
from memory_app.threads import services
from memory_app.threads.models import Message

pytestmark = pytest.mark.django_db


def _conversation(client, username="alice"):
    response = client.post("/api/conversations", {"user": username, "title": "t"}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def _post(client, conversation_id, **body):
    return client.post(
        f"/api/conversations/{conversation_id}/messages", {"role": "user", "content": "hi", **body}, format="json"
    )


def test_sent_at_is_stored_and_shown(api, svc, alice):
    client = api(svc)
    conversation_id = _conversation(client)
    response = _post(client, conversation_id, sent_at="2023-05-14T19:30:00+02:00")
    assert response.status_code == 201, response.content
    body = response.json()
    assert datetime.fromisoformat(body["sent_at"].replace("Z", "+00:00")) == datetime(2023, 5, 14, 17, 30, tzinfo=UTC)
    assert Message.objects.get(pk=body["id"]).sent_at == datetime(2023, 5, 14, 17, 30, tzinfo=UTC)
    detail = api(alice).get(f"/api/conversations/{conversation_id}/messages/{body['id']}")
    assert detail.status_code == 200
    assert detail.json()["sent_at"] == body["sent_at"]


def test_sent_at_defaults_to_the_time_stored(api, svc, alice):
    client = api(svc)
    conversation_id = _conversation(client)
    body = _post(client, conversation_id).json()
    assert body["sent_at"] == body["created_at"]
    assert Message.objects.get(pk=body["id"]).sent_at is None


@pytest.mark.parametrize("value", ["yesterday", "2023-13-40T00:00:00Z", 12, ["2023-05-14T00:00:00Z"]])
def test_malformed_sent_at_is_refused_and_nothing_is_written(api, svc, alice, value):
    client = api(svc)
    conversation_id = _conversation(client)
    response = _post(client, conversation_id, sent_at=value)
    assert response.status_code == 400, response.content
    assert not Message.objects.filter(conversation_id=conversation_id).exists()


def test_sent_at_in_the_future_is_refused(api, svc, alice):
    client = api(svc)
    conversation_id = _conversation(client)
    later = (timezone.now() + timedelta(days=1)).isoformat()
    response = _post(client, conversation_id, sent_at=later)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_sent_at"
    assert not Message.objects.filter(conversation_id=conversation_id).exists()


def test_service_refuses_a_naive_sent_at(svc, alice):
    conversation = services.conversation_create(actor=svc, username="alice", title="t")
    with pytest.raises(InvalidInput):
        services.message_create(
            actor=svc, conversation_id=conversation.pk, role="user", content="hi", sent_at=datetime(2023, 5, 14)
        )
    assert not Message.objects.filter(conversation=conversation).exists()


def test_only_service_principals_set_sent_at(api, svc, alice):
    conversation_id = _conversation(api(svc))
    response = _post(api(alice), conversation_id, sent_at="2023-05-14T19:30:00Z")
    assert response.status_code in (403, 404)
    assert not Message.objects.filter(conversation_id=conversation_id).exists()
