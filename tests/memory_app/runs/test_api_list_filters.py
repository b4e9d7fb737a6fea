"""Filters and ordering of ``GET /api/conversations`` and ``GET /api/runs``: each filter narrows
the rows the caller may read and never reaches past them; a value that is not valid is a 400
naming the filter; the order is stable (ties by id); pages stay bounded; the number of queries
does not grow with the rows.

Setup: alice and bob each own look-alike conversations and runs (same titles, same kinds), so a
filter that matched bob's rows for alice would show them."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from identity_app.models import Role
from identity_app.services import token_issue
from memory_app.runs.models import AgentRun, RunKind, RunStatus
from memory_app.threads.models import Conversation
from tests.conftest import TokenClient
from tests.factories import AgentRunFactory, ConversationFactory, MembershipFactory, ProjectFactory

pytestmark = pytest.mark.django_db

NOW = timezone.now().replace(microsecond=0)


def at(days: int):
    return NOW - timedelta(days=days)


def ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


def dated(row, *, created: int, updated: int | None = None):
    type(row).objects.filter(pk=row.pk).update(
        created_at=at(created), updated_at=at(created if updated is None else updated)
    )
    row.refresh_from_db()
    return row


@pytest.fixture
def convs(alice, bob, project):
    """alice: c1 (Apollo, archived), c2 (api), c3 (deleted, cron); bob: the same three."""
    rows = {}
    for user in (alice, bob):
        name = user.username
        rows[f"{name}1"] = dated(
            ConversationFactory(owner=user, project=project, title="Billing plan", status="archived"),
            created=30,
            updated=3,
        )
        rows[f"{name}2"] = dated(
            ConversationFactory(owner=user, title="Travel plan", source="api"), created=20, updated=2
        )
        rows[f"{name}3"] = dated(
            ConversationFactory(owner=user, title="billing notes", status="deleted", source="cron"),
            created=10,
            updated=1,
        )
    return rows


@pytest.fixture
def runs(alice, bob, project):
    """For alice and bob each: r1 a completed chat run (Apollo); r2 its sub-agent (running, lease
    held); r3 a resume run in another conversation (running, lease expired); r4 a chat run with
    r1 as parent (failed). Created 40, 30, 20 and 10 days ago."""
    rows = {}
    for user in (alice, bob):
        name = user.username
        conversation = ConversationFactory(owner=user, title="work")
        r1 = AgentRunFactory(user=user, conversation=conversation, project=project, status=RunStatus.COMPLETED)
        r2 = AgentRunFactory(
            user=user,
            conversation=conversation,
            kind=RunKind.SUBAGENT,
            parent_run=r1,
            status=RunStatus.RUNNING,
            lease_expires_at=timezone.now() + timedelta(minutes=5),
        )
        r3 = AgentRunFactory(
            user=user, kind=RunKind.RESUME, status=RunStatus.RUNNING, lease_expires_at=timezone.now() - timedelta(1)
        )
        r4 = AgentRunFactory(user=user, conversation=conversation, parent_run=r1, status=RunStatus.FAILED)
        for number, (run, days) in enumerate(((r1, 40), (r2, 30), (r3, 20), (r4, 10)), start=1):
            rows[f"{name}{number}"] = dated(run, created=days)
    return rows


def pks(rows, *names) -> list[str]:
    return [rows[name].pk for name in names]


# --- conversations ---------------------------------------------------------------------------


def test_conversation_filters_narrow_alices_list(api, alice, convs, project):
    client = api(alice)
    get = lambda **query: ids(client.get("/api/conversations", query))  # noqa: E731
    assert get() == pks(convs, "alice3", "alice2", "alice1")  # newest update first
    assert get(status="archived") == pks(convs, "alice1")
    assert get(status=["archived", "deleted"]) == pks(convs, "alice3", "alice1")
    assert get(source="cron") == pks(convs, "alice3")
    assert get(source=["chat", "api"]) == pks(convs, "alice2", "alice1")
    assert get(project=project.pk) == pks(convs, "alice1")
    assert get(q="BILLING") == pks(convs, "alice3", "alice1")
    assert get(q="billing  plan") == pks(convs, "alice1")  # every word
    assert get(q="") == get() and get(q="nothing like it") == []
    assert get(created_after=at(20).isoformat()) == pks(convs, "alice3", "alice2")
    assert get(created_before=at(20).isoformat()) == pks(convs, "alice1")
    assert get(updated_after=at(2).isoformat(), updated_before=at(1).isoformat()) == pks(convs, "alice2")
    assert get(user="alice", status="deleted", source="cron", q="notes") == pks(convs, "alice3")
    Conversation.objects.filter(pk=convs["alice2"].pk).update(no_memory=True)
    Conversation.objects.filter(pk=convs["bob2"].pk).update(no_memory=True)
    assert get(no_memory="true") == pks(convs, "alice2")
    assert get(no_memory="false") == pks(convs, "alice3", "alice1")


def test_conversation_ordering_is_stable(api, alice, bob):
    alpha = dated(ConversationFactory(owner=alice, title="Alpha"), created=30, updated=3)
    twin = dated(ConversationFactory(owner=alice, title="Alpha"), created=30, updated=3)
    beta = dated(ConversationFactory(owner=alice, title="Beta"), created=20, updated=2)
    gamma = dated(ConversationFactory(owner=alice, title="Gamma"), created=10, updated=1)
    dated(ConversationFactory(owner=bob, title="Alpha"), created=30, updated=3)
    first, second = sorted([alpha.pk, twin.pk])
    client = api(alice)
    get = lambda ordering: ids(client.get("/api/conversations", {"ordering": ordering}))  # noqa: E731
    assert get("title") == [first, second, beta.pk, gamma.pk]
    assert get("-title") == [gamma.pk, beta.pk, second, first]
    assert get("created_at") == [first, second, beta.pk, gamma.pk]
    assert get("-created_at") == [gamma.pk, beta.pk, second, first]
    # Ties go by id in the direction of the last field named.
    assert get("updated_at,-created_at") == [second, first, beta.pk, gamma.pk]
    assert get("-updated_at,title") == [gamma.pk, beta.pk, first, second]


@pytest.mark.parametrize(
    "query, name",
    [
        ("status=open", "status"),
        ("status=active&status=gone", "status"),
        ("source=email", "source"),
        ("no_memory=yes", "no_memory"),
        ("no_memory=", "no_memory"),
        ("created_after=yesterday", "created_after"),
        ("updated_before=2026-13-01", "updated_before"),
        ("created_after=", "created_after"),
        ("status=", "status"),
        ("ordering=owner", "ordering"),
        ("ordering=id", "ordering"),
        ("ordering=", "ordering"),
        ("q=" + "x" * 201, "q"),
        ("project=" + "p" * 41, "project"),
        ("user=" + "u" * 151, "user"),
    ],
)
def test_invalid_conversation_filters_are_400_with_a_sentence(api, alice, convs, query, name):
    response = api(alice).get(f"/api/conversations?{query}")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid" and name in error["details"]
    assert error["message"].startswith(f"{name}: ") and error["message"].endswith(".")


@pytest.mark.parametrize(
    "query",
    [
        {},
        {"user": "bob"},
        {"q": "billing"},
        {"status": ["active", "archived", "deleted"]},
        {"source": ["chat", "api", "cron"]},
        {"created_after": "2000-01-01T00:00:00Z"},
        {"ordering": "-title"},
    ],
)
def test_conversation_filters_never_show_another_users_rows(api, alice, bob, mallory, svc, convs, project, query):
    alice_rows = set(pks(convs, "alice1", "alice2", "alice3"))
    bob_rows = set(pks(convs, "bob1", "bob2", "bob3"))
    shown = set(ids(api(alice).get("/api/conversations", query)))
    assert shown <= alice_rows and not shown & bob_rows
    assert ids(api(mallory).get("/api/conversations", query)) == []
    assert ids(api(alice).get("/api/conversations", {**query, "project": project.pk})) == [
        pk for pk in pks(convs, "alice1") if pk in shown
    ]
    # A service token limited to alice: bob's rows stay out of reach whatever it asks for.
    _, key = token_issue(user=svc, only_users=["alice"])
    limited = set(ids(TokenClient(svc, key).get("/api/conversations", query)))
    assert limited <= alice_rows
    # The unlimited service principal reads both.
    assert set(ids(api(svc).get("/api/conversations", query))) <= alice_rows | bob_rows
    assert ids(api(svc).get("/api/conversations", {"user": "bob"})) == pks(convs, "bob3", "bob2", "bob1")


def test_conversation_pages_stay_bounded_whatever_the_filter(api, alice):
    Conversation.objects.bulk_create([Conversation(owner=alice, title=f"plan {n}") for n in range(205)])
    client = api(alice)
    body = client.get("/api/conversations", {"q": "plan", "ordering": "title", "page_size": 1000}).json()
    assert body["count"] == 205 and len(body["results"]) == 200
    last = client.get("/api/conversations", {"q": "plan", "ordering": "title", "page_size": 200, "page": 2}).json()
    assert len(last["results"]) == 5
    assert not {c["id"] for c in body["results"]} & {c["id"] for c in last["results"]}


def test_conversation_list_queries_do_not_grow_with_rows(api, alice, project):
    client = api(alice)
    query = {"status": "active", "q": "plan", "ordering": "-created_at", "created_after": at(5).isoformat()}

    def count() -> tuple[int, int]:
        client.get("/api/users/me/settings")  # the token's last use is recorded at most once a minute
        with CaptureQueriesContext(connection) as queries:
            response = client.get("/api/conversations", query)
        return len(ids(response)), len(queries)

    ConversationFactory(owner=alice, project=project, title="plan 0")
    small = count()
    for n in range(1, 9):
        ConversationFactory(owner=alice, project=project if n % 2 else None, title=f"plan {n}")
    large = count()
    assert (small[0], large[0]) == (1, 9)
    assert small[1] == large[1]


# --- runs ------------------------------------------------------------------------------------


def test_run_filters_narrow_alices_list(api, alice, runs, project):
    client = api(alice)
    get = lambda **query: ids(client.get("/api/runs", query))  # noqa: E731
    assert get() == pks(runs, "alice4", "alice3", "alice2", "alice1")  # newest first
    assert get(status="running") == pks(runs, "alice3", "alice2")
    assert get(status=["completed", "failed"]) == pks(runs, "alice4", "alice1")
    assert get(kind="subagent") == pks(runs, "alice2")
    assert get(kind=["chat", "resume"]) == pks(runs, "alice4", "alice3", "alice1")
    assert get(lease_state="held") == pks(runs, "alice2")
    assert get(lease_state="expired") == pks(runs, "alice3")
    assert get(lease_state="released") == pks(runs, "alice4", "alice1")
    assert get(conversation=runs["alice1"].conversation_id) == pks(runs, "alice4", "alice2", "alice1")
    assert get(project=project.pk) == pks(runs, "alice1")
    assert get(parent_run=runs["alice1"].pk) == pks(runs, "alice4", "alice2")
    # Top-level: chat/resume without a parent; a chat run with a parent is not.
    assert get(top_level="true") == pks(runs, "alice3", "alice1")
    assert get(top_level="false") == pks(runs, "alice4", "alice2")
    assert get(created_after=at(30).isoformat(), created_before=at(10).isoformat()) == pks(runs, "alice3", "alice2")
    assert get(user="alice", kind="chat", top_level="true") == pks(runs, "alice1")
    assert get(ordering="created_at") == pks(runs, "alice1", "alice2", "alice3", "alice4")


def test_run_ordering_breaks_ties_by_id(api, alice):
    conversation = ConversationFactory(owner=alice)
    made = [dated(AgentRunFactory(user=alice, conversation=conversation), created=5) for _ in range(3)]
    ordered = sorted(run.pk for run in made)
    client = api(alice)
    assert ids(client.get("/api/runs", {"ordering": "created_at"})) == ordered
    assert ids(client.get("/api/runs", {"ordering": "-created_at"})) == ordered[::-1]
    assert ids(client.get("/api/runs")) == ordered[::-1]
    # Paging through equal timestamps neither repeats nor skips a run.
    pages = [ids(client.get("/api/runs", {"ordering": "updated_at", "page_size": 1, "page": n})) for n in (1, 2, 3)]
    assert sorted(pk for page in pages for pk in page) == ordered


@pytest.mark.parametrize(
    "query, name",
    [
        ("status=done", "status"),
        ("kind=chat&kind=helper", "kind"),
        ("lease_state=lost", "lease_state"),
        ("top_level=yes", "top_level"),
        ("top_level=1", "top_level"),
        ("top_level=", "top_level"),
        ("created_before=31.12.2026", "created_before"),
        ("ordering=prompt", "ordering"),
        ("ordering=-status", "ordering"),
        ("conversation=" + "c" * 41, "conversation"),
        ("parent_run=" + "r" * 41, "parent_run"),
    ],
)
def test_invalid_run_filters_are_400_with_a_sentence(api, alice, runs, query, name):
    response = api(alice).get(f"/api/runs?{query}")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid" and name in error["details"]
    assert error["message"].startswith(f"{name}: ") and error["message"].endswith(".")


@pytest.mark.parametrize(
    "query",
    [
        {},
        {"user": "bob"},
        {"status": ["running", "completed", "failed", "queued"]},
        {"kind": ["chat", "subagent", "resume"]},
        {"top_level": "false"},
        {"lease_state": "held"},
        {"ordering": "updated_at"},
    ],
)
def test_run_filters_never_show_another_users_rows(api, alice, mallory, svc, runs, query):
    alice_rows = set(pks(runs, "alice1", "alice2", "alice3", "alice4"))
    shown = set(ids(api(alice).get("/api/runs", query)))
    assert shown <= alice_rows
    for bob_run in pks(runs, "bob1", "bob2", "bob3", "bob4"):
        for field in ("parent_run", "conversation"):
            value = bob_run if field == "parent_run" else AgentRun.objects.get(pk=bob_run).conversation_id
            assert ids(api(alice).get("/api/runs", {**query, field: value})) == []
    assert ids(api(mallory).get("/api/runs", query)) == []
    _, key = token_issue(user=svc, only_users=["alice"])
    assert set(ids(TokenClient(svc, key).get("/api/runs", query))) <= alice_rows


def test_service_principal_limited_to_a_project_sees_only_its_runs(api, alice, svc, runs, project):
    MembershipFactory(project=project, user=svc, role=Role.MEMBER)
    _, key = token_issue(user=svc, only_projects=[project.pk])
    client = TokenClient(svc, key)
    assert sorted(ids(client.get("/api/runs", {"top_level": "true"}))) == sorted(pks(runs, "alice1", "bob1"))
    assert ids(client.get("/api/runs", {"project": ProjectFactory().pk})) == []
    assert ids(client.get("/api/runs", {"kind": "subagent"})) == []  # subagent runs have no project here


def test_run_pages_stay_bounded_whatever_the_filter(api, alice):
    conversation = ConversationFactory(owner=alice)
    AgentRun.objects.bulk_create(
        [AgentRun(user=alice, conversation=conversation, request_id=f"r{n}", prompt="p" * 5000) for n in range(55)]
    )
    client = api(alice)
    body = client.get("/api/runs", {"kind": "chat", "ordering": "created_at", "page_size": 1000}).json()
    assert body["count"] == 55 and len(body["results"]) == 50
    assert all(run["prompt_truncated"] for run in body["results"])
    assert len(client.get("/api/runs", {"kind": "chat", "page": 2}).json()["results"]) == 5


def test_run_list_queries_do_not_grow_with_rows(api, alice, project):
    client = api(alice)
    query = {"kind": "chat", "top_level": "true", "lease_state": "released", "ordering": "-updated_at"}

    def count() -> tuple[int, int]:
        client.get("/api/users/me/settings")  # the token's last use is recorded at most once a minute
        with CaptureQueriesContext(connection) as queries:
            response = client.get("/api/runs", query)
        return len(ids(response)), len(queries)

    AgentRunFactory(user=alice, project=project)
    small = count()
    for n in range(8):
        AgentRunFactory(user=alice, project=project if n % 2 else None)
    large = count()
    assert (small[0], large[0]) == (1, 9)
    assert small[1] == large[1]


def test_conversation_rows_filtered_are_left_as_they_were(api, alice, convs):
    before = list(Conversation.objects.order_by("pk").values())
    api(alice).get("/api/conversations", {"status": "deleted", "ordering": "title"})
    api(alice).get("/api/conversations?status=nope")
    assert list(Conversation.objects.order_by("pk").values()) == before
