"""Filters and ordering of ``GET /api/projects`` and ``GET /api/chat-bindings``: each filter
narrows what the caller may see and never reaches past it; a value that is not valid is a 400
naming the filter; the order is stable (ties by id); the number of queries does not grow with
the rows.

Setup: alice owns Apollo (bob a member) and is a viewer of Hermes; bob alone owns Zeus; mallory
is in none. alice's chats milky:private:1 and qq:dm:2 are bound to her, bob's milky:private:3
to him."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from identity_app.models import ChatBinding, Membership, Project, Role
from identity_app.services import token_issue
from tests.conftest import TokenClient
from tests.factories import ChatBindingFactory, MembershipFactory, ProjectFactory

pytestmark = pytest.mark.django_db

NOW = timezone.now().replace(microsecond=0)


def at(days: int):
    return NOW - timedelta(days=days)


def ids(response) -> list:
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


def dated(row, days: int):
    type(row).objects.filter(pk=row.pk).update(created_at=at(days))
    row.refresh_from_db()
    return row


@pytest.fixture
def projects(alice, bob, project):
    hermes = dated(ProjectFactory(name="Hermes"), 10)
    MembershipFactory(project=hermes, user=alice, role=Role.VIEWER)
    MembershipFactory(project=hermes, user=bob, role=Role.OWNER)
    zeus = dated(ProjectFactory(name="Zeus"), 5)
    MembershipFactory(project=zeus, user=bob, role=Role.OWNER)
    return {"apollo": dated(project, 20), "hermes": hermes, "zeus": zeus}


@pytest.fixture
def bindings(alice, bob):
    return {
        "a1": dated(ChatBindingFactory(chat_key="milky:private:1", user=alice), 3),
        "a2": dated(ChatBindingFactory(chat_key="qq:dm:2", user=alice), 2),
        "b3": dated(ChatBindingFactory(chat_key="milky:private:3", user=bob), 1),
    }


def pks(rows, *names) -> list:
    return [rows[name].pk for name in names]


def assert_400(response, name):
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid" and name in error["details"]
    assert error["message"].startswith(f"{name}: ") and error["message"].endswith(".")


# --- projects --------------------------------------------------------------------------------


def test_project_filters_narrow_alices_list(api, alice, projects):
    client = api(alice)
    get = lambda **query: ids(client.get("/api/projects", query))  # noqa: E731
    assert get() == pks(projects, "apollo", "hermes")  # by name
    assert get(name="ERM") == pks(projects, "hermes")
    assert get(name="") == get() and get(name="zeus") == []
    assert get(role="owner") == pks(projects, "apollo")
    assert get(role=["viewer", "admin"]) == pks(projects, "hermes")
    assert get(role="member") == []
    assert get(created_after=at(15).isoformat()) == pks(projects, "hermes")
    assert get(created_before=at(15).isoformat()) == pks(projects, "apollo")
    roles = {row["id"]: row["role"] for row in client.get("/api/projects", {"role": "viewer"}).json()["results"]}
    assert roles == {projects["hermes"].pk: "viewer"}


def test_project_ordering_is_stable(api, alice, projects):
    twins = [ProjectFactory(name="Hermes") for _ in range(2)]
    for twin in twins:
        MembershipFactory(project=twin, user=alice, role=Role.MEMBER)
        dated(twin, 10)
    hermes = sorted([projects["hermes"].pk, *(twin.pk for twin in twins)])
    client = api(alice)
    get = lambda ordering: ids(client.get("/api/projects", {"ordering": ordering}))  # noqa: E731
    assert get("name") == [projects["apollo"].pk, *hermes]
    assert get("-name") == [*hermes[::-1], projects["apollo"].pk]
    assert get("created_at") == [projects["apollo"].pk, *hermes]
    assert get("-created_at,name") == [*hermes, projects["apollo"].pk]
    # A field named again is ignored: its first mention decides (the schema cannot forbid it).
    assert get("name,-name") == get("name") and get("-name,name,name") == get("-name")
    pages = [
        ids(client.get("/api/projects", {"ordering": "-created_at", "page_size": 1, "page": n})) for n in (1, 2, 3, 4)
    ]
    assert [pk for page in pages for pk in page] == [*hermes[::-1], projects["apollo"].pk]


@pytest.mark.parametrize(
    "query, name",
    [
        ("role=boss", "role"),
        ("role=owner&role=", "role"),
        ("created_after=soon", "created_after"),
        ("created_before=", "created_before"),
        ("ordering=id", "ordering"),
        ("ordering=description", "ordering"),
        ("ordering=", "ordering"),
        ("name=" + "n" * 201, "name"),
    ],
)
def test_invalid_project_filters_are_400_with_a_sentence(api, alice, projects, query, name):
    assert_400(api(alice).get(f"/api/projects?{query}"), name)


@pytest.mark.parametrize(
    "query", [{}, {"name": "Zeus"}, {"role": ["owner", "admin", "member", "viewer"]}, {"ordering": "-created_at"}]
)
def test_project_filters_never_show_projects_of_others(api, alice, mallory, svc, projects, query):
    assert projects["zeus"].pk not in ids(api(alice).get("/api/projects", query))
    assert ids(api(mallory).get("/api/projects", query)) == []
    # A service principal sees its own memberships, and a limited token only those in its list.
    for project in projects.values():
        MembershipFactory(project=project, user=svc, role=Role.MEMBER)
    _, key = token_issue(user=svc, only_projects=[projects["apollo"].pk])
    assert set(ids(TokenClient(svc, key).get("/api/projects", query))) <= {projects["apollo"].pk}


def test_project_list_queries_do_not_grow_with_rows(api, alice):
    client = api(alice)
    query = {"name": "p", "role": ["owner", "member"], "ordering": "-created_at"}

    def count() -> tuple[int, int]:
        client.get("/api/users/me/profile")  # the token's last use is recorded at most once a minute
        with CaptureQueriesContext(connection) as queries:
            response = client.get("/api/projects", query)
        return len(ids(response)), len(queries)

    MembershipFactory(project=ProjectFactory(name="p0"), user=alice, role=Role.OWNER)
    small = count()
    for n in range(1, 9):
        MembershipFactory(project=ProjectFactory(name=f"p{n}"), user=alice, role=Role.OWNER if n % 2 else Role.MEMBER)
    large = count()
    assert (small[0], large[0]) == (1, 9)
    assert small[1] == large[1]


# --- chat bindings ---------------------------------------------------------------------------


def test_chat_binding_filters_narrow_alices_list(api, alice, bindings):
    client = api(alice)
    get = lambda **query: ids(client.get("/api/chat-bindings", query))  # noqa: E731
    assert get() == pks(bindings, "a1", "a2")  # by chat key
    assert get(platform="milky") == pks(bindings, "a1")
    assert get(platform="mil") == []  # the whole platform name
    assert get(target_type="dm") == pks(bindings, "a2")
    assert get(target_type="private", platform="qq") == []
    assert get(user="alice") == pks(bindings, "a1", "a2")
    assert get(created_after=at(2).isoformat()) == pks(bindings, "a2")
    assert get(created_before=at(2).isoformat()) == pks(bindings, "a1")
    assert get(ordering="-chat_key") == pks(bindings, "a2", "a1")
    assert get(ordering="-created_at") == pks(bindings, "a2", "a1")


def test_service_principal_filters_every_binding(api, svc, bindings):
    client = api(svc)
    get = lambda **query: ids(client.get("/api/chat-bindings", query))  # noqa: E731
    assert get() == pks(bindings, "a1", "b3", "a2")
    assert get(user="bob") == pks(bindings, "b3")
    assert get(platform="milky", ordering="-created_at") == pks(bindings, "b3", "a1")
    assert get(target_type="private", user="alice") == pks(bindings, "a1")
    same_day = [dated(ChatBindingFactory(chat_key=f"tg:private:{n}"), 7) for n in range(3)]
    ordered = sorted(binding.pk for binding in same_day)
    assert get(platform="tg", ordering="created_at") == ordered
    assert get(platform="tg", ordering="-created_at") == ordered[::-1]


@pytest.mark.parametrize(
    "query, name",
    [
        ("platform=Milky", "platform"),
        ("platform=milky:private", "platform"),
        ("platform=" + "m" * 33, "platform"),
        ("target_type=group", "target_type"),
        ("target_type=", "target_type"),
        ("created_after=2026-02-30T00:00:00Z", "created_after"),
        ("ordering=user", "ordering"),
        ("user=" + "u" * 151, "user"),
    ],
)
def test_invalid_chat_binding_filters_are_400_with_a_sentence(api, alice, bindings, query, name):
    assert_400(api(alice).get(f"/api/chat-bindings?{query}"), name)


@pytest.mark.parametrize(
    "query",
    [{}, {"user": "bob"}, {"platform": "milky"}, {"target_type": "private"}, {"ordering": "-created_at"}],
)
def test_chat_binding_filters_never_show_another_users_bindings(api, alice, bob, mallory, svc, bindings, query):
    assert set(ids(api(alice).get("/api/chat-bindings", query))) <= set(pks(bindings, "a1", "a2"))
    assert ids(api(mallory).get("/api/chat-bindings", query)) == []
    _, key = token_issue(user=svc, only_users=["alice"])
    assert set(ids(TokenClient(svc, key).get("/api/chat-bindings", query))) <= set(pks(bindings, "a1", "a2"))
    before = list(ChatBinding.objects.order_by("pk").values())
    assert ids(api(bob).get("/api/chat-bindings", {**query, "user": "alice"})) == []
    assert list(ChatBinding.objects.order_by("pk").values()) == before


def test_chat_binding_pages_stay_bounded(api, svc, bob):
    ChatBinding.objects.bulk_create([ChatBinding(chat_key=f"milky:private:{n}", user=bob) for n in range(100, 305)])
    body = api(svc).get("/api/chat-bindings", {"platform": "milky", "page_size": 1000}).json()
    assert body["count"] == 205 and len(body["results"]) == 200


def test_chat_binding_list_queries_do_not_grow_with_rows(api, svc):
    client = api(svc)
    query = {"platform": "milky", "target_type": "private", "ordering": "-created_at"}

    def count() -> tuple[int, int]:
        client.get("/api/users/me/profile")  # the token's last use is recorded at most once a minute
        with CaptureQueriesContext(connection) as queries:
            response = client.get("/api/chat-bindings", query)
        return len(ids(response)), len(queries)

    ChatBindingFactory(chat_key="milky:private:500")
    small = count()
    for n in range(8):
        ChatBindingFactory(chat_key=f"milky:private:{600 + n}")
        ChatBindingFactory(chat_key=f"milky:dm:{600 + n}")
    large = count()
    assert (small[0], large[0]) == (1, 9)
    assert small[1] == large[1]


def test_filtering_changes_nothing(api, alice, projects, bindings):
    before = (
        list(Project.objects.order_by("pk").values()),
        list(Membership.objects.order_by("pk").values()),
        list(ChatBinding.objects.order_by("pk").values()),
    )
    client = api(alice)
    client.get("/api/projects", {"role": "owner", "ordering": "-name"})
    client.get("/api/projects?role=boss")
    client.get("/api/chat-bindings", {"platform": "milky"})
    client.get("/api/chat-bindings?target_type=group")
    after = (
        list(Project.objects.order_by("pk").values()),
        list(Membership.objects.order_by("pk").values()),
        list(ChatBinding.objects.order_by("pk").values()),
    )
    assert after == before
