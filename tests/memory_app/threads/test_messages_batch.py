"""``POST /api/conversations/{id}/messages/batch``: several messages in order, all or none, with
no other writer's between them; the same checks as one message, each before any is written."""

import threading

import pytest
from django.db import connection

from memory_app.search.models import SearchDocument
from memory_app.threads import services
from memory_app.threads.models import Message, ToolCall

pytestmark = pytest.mark.django_db


def _conversation(client, username="alice") -> str:
    return client.post("/api/conversations", {"user": username, "title": "t"}, format="json").json()["id"]


def _batch(client, conversation_id, messages):
    return client.post(f"/api/conversations/{conversation_id}/messages/batch", {"messages": messages}, format="json")


def _stored(conversation_id) -> list[tuple[str, str]]:
    return list(Message.objects.filter(conversation_id=conversation_id).order_by("id").values_list("role", "content"))


def test_messages_are_written_in_order_and_answered(api, svc, alice):
    client = api(svc)
    conversation_id = _conversation(client)
    turn = [
        {"role": "user", "content": "what's the weather in Kyoto?"},
        {
            "role": "assistant",
            "type": "tool_call",
            "content": "",
            "tool_calls": [{"name": "weather", "input": {"city": "Kyoto"}}],
        },
        {"role": "tool", "type": "tool_result", "content": "18°C", "metadata": {"call_id": "c1"}},
        {"role": "assistant", "content": "It is 18°C and sunny in Kyoto."},
    ]
    response = _batch(client, conversation_id, turn)
    assert response.status_code == 201, response.content
    results = response.json()["results"]
    assert [(m["role"], m["content"]) for m in results] == [(m["role"], m["content"]) for m in turn]
    assert _stored(conversation_id) == [(m["role"], m["content"]) for m in turn]
    assert ToolCall.objects.filter(message_id=results[1]["id"]).count() == 1
    text_ids = [str(m["id"]) for m in results if m["type"] == "text"]
    assert SearchDocument.objects.filter(ref__in=text_ids).count() == 2  # indexed as one by one


@pytest.mark.parametrize(
    ("bad", "status"),
    [
        ({"role": "wizard", "content": "x"}, 400),
        ({"role": "user", "content": "nul \u0000"}, 400),
        ({"role": "user", "content": "x" * (256 * 1024 + 1)}, 400),
        ({"role": "user", "content": "x", "surprise": 1}, 400),
        ({"role": "user", "content": "x", "run_id": "run_not_here"}, 404),
    ],
)
def test_one_bad_message_writes_none_of_them(api, svc, alice, bad, status):
    client = api(svc)
    conversation_id = _conversation(client)
    response = _batch(client, conversation_id, [{"role": "user", "content": "first"}, bad])
    assert response.status_code == status, response.content
    assert _stored(conversation_id) == []


def test_how_many_at_once_and_who_may(api, svc, alice, bob):
    client = api(svc)
    conversation_id = _conversation(client)
    one = {"role": "user", "content": "x"}
    assert _batch(client, conversation_id, []).status_code == 400
    assert _batch(client, conversation_id, [one] * (services.MAX_MESSAGES_AT_ONCE + 1)).status_code == 400
    assert _batch(api(alice), conversation_id, [one]).status_code == 403  # a user's own key writes none
    assert _batch(api(bob), conversation_id, [one]).status_code == 403
    assert _batch(client, "conv_nowhere", [one]).status_code == 404
    assert _stored(conversation_id) == []
    assert _batch(client, conversation_id, [one] * services.MAX_MESSAGES_AT_ONCE).status_code == 201


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_two_writers_at_once_do_not_interleave(svc, alice):
    conversation = services.conversation_create(actor=svc, username="alice", title="t")
    errors = []

    def write(name):
        try:
            services.messages_create(
                actor=svc,
                conversation_id=conversation.pk,
                messages=[{"role": "user", "content": f"{name} {n}"} for n in range(20)],
            )
        except Exception as error:  # reported below
            errors.append(error)
        finally:
            connection.close()

    writers = [threading.Thread(target=write, args=(name,)) for name in "abcd"]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    assert errors == []
    names = [content.split()[0] for _, content in _stored(conversation.pk)]
    runs = [name for i, name in enumerate(names) if i == 0 or names[i - 1] != name]
    assert sorted(runs) == list("abcd")  # each writer's twenty together
