import pytest

from memory_app.memories.models import Status
from tests.factories import ProjectMemoryFactory, ProjectSummaryFactory, UserMemoryFactory

pytestmark = pytest.mark.django_db

URL = "/api/users/me/identity-context"


def test_identity_context_returns_four_fields_latest_five_active(api, alice, bob, project):
    client = api(alice)
    client.put("/api/users/me/profile", {"display_name": "Alice", "timezone": "Asia/Shanghai"}, format="json")
    user_rows = [UserMemoryFactory(owner=alice, content=f"user fact {i}") for i in range(7)]
    superseded = UserMemoryFactory(owner=alice, content="OLD SUPERSEDED TEXT", status=Status.SUPERSEDED)
    project_rows = [ProjectMemoryFactory(project=project, content=f"project decision {i}") for i in range(6)]
    UserMemoryFactory(owner=bob, content="BOB PRIVATE")
    ProjectSummaryFactory(project=project, title="Status", content="Phase 2 under way")

    response = client.get(URL, {"project_id": project.pk})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"profile", "memories", "identity_context", "project_summary_context"}
    assert body["profile"]["display_name"] == "Alice"
    expected_user = [m.id for m in sorted(user_rows, key=lambda m: (m.created_at, m.id), reverse=True)[:5]]
    expected_project = [m.id for m in sorted(project_rows, key=lambda m: (m.created_at, m.id), reverse=True)[:5]]
    assert [m["id"] for m in body["memories"]["user"]] == expected_user
    assert [m["id"] for m in body["memories"]["project"]] == expected_project
    text = body["identity_context"]
    assert "OLD SUPERSEDED TEXT" not in text and "BOB PRIVATE" not in text
    assert "user fact 6" in text and "user fact 1" not in text
    assert "Phase 2 under way" in body["project_summary_context"]
    assert "Phase 2 under way" not in text  # never merged
    assert superseded.id not in [m["id"] for m in body["memories"]["user"]]


def test_identity_context_without_project(api, alice):
    UserMemoryFactory(owner=alice, content="only me")
    body = api(alice).get(URL).json()
    assert body["memories"]["project"] == [] and body["project_summary_context"] == ""
    assert "only me" in body["identity_context"]


def test_identity_context_for_foreign_project_is_404(api, mallory, project):
    ProjectMemoryFactory(project=project, content="secret plan")
    response = api(mallory).get(URL, {"project_id": project.pk})
    assert response.status_code == 404
    assert "secret plan" not in response.content.decode()


def test_identity_context_is_read_only(api, alice, project):
    from memory_app.memories.models import Memory

    UserMemoryFactory(owner=alice)
    before = list(Memory.objects.values_list("id", "status", "updated_at"))
    api(alice).get(URL, {"project_id": project.pk})
    assert list(Memory.objects.values_list("id", "status", "updated_at")) == before
