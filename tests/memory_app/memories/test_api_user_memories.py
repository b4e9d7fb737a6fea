import pytest

from memory_app.memories.models import Memory, Status, Tier
from tests.factories import ProjectMemoryFactory, UserMemoryFactory

pytestmark = pytest.mark.django_db

BASE = "/api/users/me/memories"


def snapshot():
    return sorted(Memory.objects.values_list("id", "status", "content", "superseded_by_id"))


def test_create_and_list_own_memories(api, alice):
    client = api(alice)
    response = client.post(BASE, {"kind": "preference", "content": "Prefers tea"}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["id"].startswith("mem_")
    assert (body["scope_type"], body["scope_id"], body["status"], body["origin"]) == (
        "user",
        str(alice.pk),
        "active",
        "api",
    )
    listing = client.get(BASE).json()
    assert listing["count"] == 1
    assert [m["id"] for m in listing["results"]] == [body["id"]]


def test_trailing_slash_is_optional(api, alice):
    client = api(alice)
    assert client.get(BASE + "/").status_code == 200
    assert client.get(BASE).status_code == 200


def test_list_shows_only_own_memories(api, alice, bob):
    UserMemoryFactory(owner=bob, content="bob secret")
    mine = UserMemoryFactory(owner=alice, content="alice note")
    results = api(alice).get(BASE).json()["results"]
    assert [m["id"] for m in results] == [mine.id]


def test_list_filters_kind_status_and_search(api, alice):
    client = api(alice)
    a = UserMemoryFactory(owner=alice, kind="fact", content="Lives in Berlin")
    UserMemoryFactory(owner=alice, kind="preference", content="Likes jazz")
    old = UserMemoryFactory(owner=alice, kind="fact", content="Lives in Paris", status=Status.SUPERSEDED)
    assert [m["id"] for m in client.get(BASE, {"kind": "fact"}).json()["results"]] == [a.id]
    assert [m["id"] for m in client.get(BASE, {"status": "superseded"}).json()["results"]] == [old.id]
    assert client.get(BASE, {"status": "all"}).json()["count"] == 3
    assert [m["id"] for m in client.get(BASE, {"q": "berlin"}).json()["results"]] == [a.id]
    assert client.get(BASE, {"kind": "nonsense"}).status_code == 400


def test_list_is_paginated(api, alice):
    for i in range(7):
        UserMemoryFactory(owner=alice, content=f"memory {i}")
    page = api(alice).get(BASE, {"page_size": 5}).json()
    assert page["count"] == 7 and len(page["results"]) == 5 and page["next"]


@pytest.mark.parametrize(
    "verb,suffix,body",
    [
        ("get", "", None),
        ("delete", "", None),
        ("post", "/supersede", {"content": "hijack"}),
        ("get", "/chain", None),
    ],
)
def test_other_users_memory_is_404_on_every_verb(api, alice, mallory, verb, suffix, body):
    memory = UserMemoryFactory(owner=alice, content="alice private")
    before = snapshot()
    response = getattr(api(mallory), verb)(f"{BASE}/{memory.id}{suffix}", body, format="json")
    assert response.status_code == 404
    assert response.json() == {
        "error": {"code": "not_found", "message": "Memory not found.", "request_id": response["X-Request-ID"]}
    }
    assert snapshot() == before


@pytest.mark.parametrize(
    "verb,suffix,body",
    [
        ("get", "", None),
        ("delete", "", None),
        ("post", "/supersede", {"content": "x"}),
        ("get", "/chain", None),
    ],
)
def test_project_memory_id_is_404_under_user_routes(api, alice, project, verb, suffix, body):
    memory = ProjectMemoryFactory(project=project)
    before = snapshot()
    response = getattr(api(alice), verb)(f"{BASE}/{memory.id}{suffix}", body, format="json")
    assert response.status_code == 404
    assert snapshot() == before


def test_unknown_id_and_404_shape(api, alice):
    response = api(alice).get(f"{BASE}/mem_doesnotexist")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_supersede_builds_chain_and_second_supersede_of_old_is_409(api, alice):
    client = api(alice)
    first = client.post(BASE, {"kind": "fact", "content": "Lives in Paris"}, format="json").json()
    second = client.post(f"{BASE}/{first['id']}/supersede", {"content": "Lives in Berlin"}, format="json")
    assert second.status_code == 201
    second = second.json()
    old = Memory.objects.get(pk=first["id"])
    assert (old.status, old.superseded_by_id) == (Status.SUPERSEDED, second["id"])
    again = client.post(f"{BASE}/{first['id']}/supersede", {"content": "Lives in Rome"}, format="json")
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "not_active"
    assert Memory.objects.count() == 2
    third = client.post(
        f"{BASE}/{second['id']}/supersede", {"content": "Lives in Lisbon", "kind": "fact"}, format="json"
    ).json()
    for member in (first, second, third):
        chain = client.get(f"{BASE}/{member['id']}/chain").json()["results"]
        assert [m["id"] for m in chain] == [first["id"], second["id"], third["id"]]
    assert [m["status"] for m in chain] == ["superseded", "superseded", "active"]


def test_supersede_rejects_kind_outside_identity_tier(api, alice):
    memory = UserMemoryFactory(owner=alice)
    before = snapshot()
    response = api(alice).post(f"{BASE}/{memory.id}/supersede", {"content": "x", "kind": "task"}, format="json")
    assert response.status_code == 400
    assert snapshot() == before


def test_forget_removes_row_and_its_older_versions(api, alice):
    client = api(alice)
    first = client.post(BASE, {"kind": "fact", "content": "v1"}, format="json").json()
    second = client.post(f"{BASE}/{first['id']}/supersede", {"content": "v2"}, format="json").json()
    third = client.post(f"{BASE}/{second['id']}/supersede", {"content": "v3"}, format="json").json()
    # Forgetting a middle version forgets it and what it replaced; the newer version stays whole.
    assert client.delete(f"{BASE}/{second['id']}").status_code == 204
    assert list(Memory.objects.values_list("id", flat=True)) == [third["id"]]
    assert client.get(f"{BASE}/{third['id']}/chain").json()["results"][0]["id"] == third["id"]
    assert client.delete(f"{BASE}/{third['id']}").status_code == 204
    assert not Memory.objects.exists()
    assert client.delete(f"{BASE}/{third['id']}").status_code == 404


@pytest.mark.parametrize(
    "body",
    [
        {"kind": "preference", "content": "x" * 4001},
        {"kind": "mood", "content": "happy"},
        {"kind": "task", "content": "a task is not an identity kind"},
        {"kind": "fact", "content": ""},
        {"kind": "fact", "content": "   "},
        {"kind": "fact", "content": 42},
        {"kind": "fact", "content": ["list"]},
        {"kind": "fact"},
        {"content": "no kind"},
        {"kind": "fact", "content": "ok", "metadata": "not an object"},
        {"kind": "fact", "content": "ok", "metadata": {"big": "x" * 9000}},
        {"kind": "fact", "content": "ok", "scope_type": "global"},
        {"kind": "fact", "content": "ok", "source_thread_id": "t" * 65},
        ["not", "an", "object"],
    ],
)
def test_bad_input_is_400_and_nothing_written(api, alice, body):
    response = api(alice).post(BASE, body, format="json")
    assert response.status_code == 400, response.content
    assert set(response.json()["error"]) >= {"code", "message"}
    assert not Memory.objects.exists()


def test_malformed_json_is_400_in_error_shape(api, alice):
    response = api(alice).generic("POST", BASE, '{"kind": "fact", "content": ', content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "malformed_request"
    response = api(alice).generic(
        "POST", BASE, b'{"kind": "fact", "content": "\xff\xfe"}', content_type="application/json"
    )
    assert response.status_code == 400
    assert not Memory.objects.exists()


def test_method_not_allowed_is_json(api, alice):
    response = api(alice).put(BASE, {}, format="json")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"


def test_unknown_api_path_is_json_404(api, alice):
    response = api(alice).get("/api/no/such/thing")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_user_memory_constraint_rejects_inconsistent_rows(alice, project):
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        Memory.objects.create(
            scope_type=Tier.USER, scope_id=str(alice.pk), owner=alice, project=project, kind="fact", content="x"
        )
    with pytest.raises(IntegrityError), transaction.atomic():
        Memory.objects.create(scope_type=Tier.GLOBAL, scope_id="chat-x", kind="fact", content="x")


def test_list_query_count_does_not_grow_with_rows(api, alice, django_assert_max_num_queries):
    client = api(alice)
    for i in range(30):
        UserMemoryFactory(owner=alice, content=f"m{i}")
    with django_assert_max_num_queries(6):
        assert client.get(BASE).json()["count"] == 30
