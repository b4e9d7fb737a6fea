"""``GET /api/conversations?external_id=…``: the conversation a runtime calls by that id, found
without making one; it narrows what the caller may list and never widens it."""

import pytest

pytestmark = pytest.mark.django_db


def _listed(client, **params) -> list[str]:
    response = client.get("/api/conversations", params)
    assert response.status_code == 200, response.content
    return [c["id"] for c in response.json()["results"]]


def test_external_id_finds_the_one_conversation_and_makes_none(api, svc, alice, bob):
    client = api(svc)
    made = client.post("/api/conversations", {"user": "alice", "external_id": "s-1"}, format="json").json()["id"]
    client.post("/api/conversations", {"user": "alice", "external_id": "s-2"}, format="json")
    theirs = client.post("/api/conversations", {"user": "bob", "external_id": "s-1"}, format="json").json()["id"]
    assert _listed(client, user="alice", external_id="s-1") == [made]
    assert _listed(client, user="bob", external_id="s-1") == [theirs]
    assert _listed(client, user="alice", external_id="S-1") == []  # exact
    before = _listed(client)
    assert _listed(client, user="alice", external_id="s-9") == []
    assert _listed(client) == before  # looking made nothing
    # Another user's conversation of the same id stays out of reach.
    assert _listed(api(alice), external_id="s-1") == [made]
    assert _listed(api(bob), external_id="s-1") == [theirs]
    assert api(alice).get("/api/conversations", {"external_id": "x" * 201}).status_code == 400
