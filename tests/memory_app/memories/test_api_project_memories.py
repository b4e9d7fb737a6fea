import pytest

from identity_app.models import Role
from memory_app.memories.models import Memory, Status
from tests.factories import MembershipFactory, ProjectFactory, ProjectMemoryFactory, UserMemoryFactory

pytestmark = pytest.mark.django_db


def base(project):
    return f"/api/projects/{project.pk}/identity-memories"


def snapshot():
    return sorted(Memory.objects.values_list("id", "status", "content", "superseded_by_id"))


def test_member_creates_and_lists_project_memory(api, bob, project):
    client = api(bob)
    response = client.post(base(project), {"kind": "decision", "content": "Use PostgreSQL"}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["scope_type"], body["scope_id"], body["project_id"]) == ("project", project.pk, project.pk)
    assert [m["id"] for m in client.get(base(project)).json()["results"]] == [body["id"]]


def test_project_list_excludes_other_projects(api, alice, project):
    other = ProjectFactory()
    MembershipFactory(project=other, user=alice, role=Role.OWNER)
    ProjectMemoryFactory(project=other, content="other project")
    mine = ProjectMemoryFactory(project=project)
    assert [m["id"] for m in api(alice).get(base(project)).json()["results"]] == [mine.id]


@pytest.mark.parametrize(
    "verb,suffix,body",
    [
        ("get", "", None),
        ("post", "", {"kind": "fact", "content": "x"}),
        ("get", "/MEM", None),
        ("delete", "/MEM", None),
        ("post", "/MEM/supersede", {"content": "x"}),
        ("get", "/MEM/chain", None),
    ],
)
def test_non_member_gets_404_everywhere(api, mallory, project, verb, suffix, body):
    memory = ProjectMemoryFactory(project=project)
    before = snapshot()
    url = base(project) + suffix.replace("MEM", memory.id)
    response = getattr(api(mallory), verb)(url, body, format="json")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert snapshot() == before
    assert api(mallory).get(f"/api/projects/{project.pk}").status_code == 404


@pytest.mark.parametrize(
    "verb,suffix,body",
    [
        ("post", "", {"kind": "fact", "content": "x"}),
        ("delete", "/MEM", None),
        ("post", "/MEM/supersede", {"content": "x"}),
    ],
)
def test_viewer_cannot_write_403(api, mallory, project, verb, suffix, body):
    MembershipFactory(project=project, user=mallory, role=Role.VIEWER)
    memory = ProjectMemoryFactory(project=project)
    before = snapshot()
    url = base(project) + suffix.replace("MEM", memory.id)
    response = getattr(api(mallory), verb)(url, body, format="json")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"
    assert snapshot() == before
    # ...but may read.
    assert api(mallory).get(base(project)).status_code == 200


def test_memory_of_another_project_is_404_under_this_project(api, alice, project):
    other = ProjectFactory()
    MembershipFactory(project=other, user=alice, role=Role.OWNER)
    foreign = ProjectMemoryFactory(project=other)
    before = snapshot()
    client = api(alice)
    assert client.get(f"{base(project)}/{foreign.id}").status_code == 404
    assert client.delete(f"{base(project)}/{foreign.id}").status_code == 404
    assert client.post(f"{base(project)}/{foreign.id}/supersede", {"content": "x"}, format="json").status_code == 404
    assert snapshot() == before


def test_user_memory_id_is_404_under_project_routes(api, alice, project):
    mine = UserMemoryFactory(owner=alice)
    before = snapshot()
    client = api(alice)
    assert client.get(f"{base(project)}/{mine.id}").status_code == 404
    assert client.delete(f"{base(project)}/{mine.id}").status_code == 404
    assert snapshot() == before


def test_supersede_and_forget_project_memory(api, alice, bob, project):
    memory = ProjectMemoryFactory(project=project, content="Deploy on Fridays")
    new = api(bob).post(
        f"{base(project)}/{memory.id}/supersede",
        {"content": "Never deploy on Fridays", "kind": "convention"},
        format="json",
    )
    assert new.status_code == 201
    memory.refresh_from_db()
    assert memory.status == Status.SUPERSEDED
    assert api(alice).post(f"{base(project)}/{memory.id}/supersede", {"content": "x"}, format="json").status_code == 409
    assert api(alice).delete(f"{base(project)}/{new.json()['id']}").status_code == 204
    assert not Memory.objects.exists()


def test_project_memory_rejects_non_identity_kind(api, alice, project):
    response = api(alice).post(base(project), {"kind": "warning", "content": "x"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_kind"
    assert not Memory.objects.exists()


def test_project_list_query_count_is_bounded(api, alice, project, django_assert_max_num_queries):
    client = api(alice)
    for i in range(30):
        ProjectMemoryFactory(project=project, content=f"m{i}")
    with django_assert_max_num_queries(8):
        assert client.get(base(project)).json()["count"] == 30
