"""Project pages: memories shared by members; roles decide who may write."""

from urllib.parse import urlencode

import pytest
from django.urls import reverse

from identity_app.models import Membership, Project, Role
from memory_app.memories.models import Memory, Origin, Status, Tier
from tests.factories import MembershipFactory, ProjectFactory, ProjectMemoryFactory, UserFactory

pytestmark = pytest.mark.django_db


def unmarked(response) -> str:
    """The page without the <mark> tags that highlight matched words."""
    return response.text.replace("<mark>", "").replace("</mark>", "")


@pytest.fixture
def viewer(project):
    user = UserFactory(username="victor")
    MembershipFactory(project=project, user=user, role=Role.VIEWER)
    return user


def snapshot():
    return sorted(Memory.objects.values_list("id", "status", "content", "superseded_by_id"))


def project_list(project) -> str:
    """The memory home's list of the project's memories (the one list per source)."""
    return f"{reverse('web:memory_home_items')}?{urlencode({'source': f'project:{project.pk}'})}"


def urls(project, memory):
    return {
        "list": project_list(project),
        "detail": reverse("web:memory_home_item", args=[memory.pk]),
        "correct": reverse("web:memory_home_item_correct", args=[memory.pk]),
        "forget": reverse("web:memory_home_item_forget", args=[memory.pk]),
    }


def test_projects_page_lists_only_my_projects_with_role(web, alice, bob, project):
    ProjectFactory(name="Hidden project")
    ProjectMemoryFactory(project=project)
    ProjectMemoryFactory(project=project, status=Status.ARCHIVED)
    response = web(bob).get(reverse("web:projects"))
    assert response.status_code == 200
    assert "Apollo" in response.text and "Hidden project" not in response.text
    row = response.text[response.text.index("Apollo") :]
    assert (
        '<td class="nowrap" data-label="Your role">Member</td><td class="nowrap" data-label="Active memories">1</td>'
        in row
    )


def test_projects_page_query_count_does_not_grow(web, alice, django_assert_num_queries):
    for n in range(3):
        MembershipFactory(project=ProjectFactory(name=f"p{n}"), user=alice, role=Role.OWNER)
    client = web(alice)
    # session, user, profile (language and time zone), the invitations badge, count, page
    with django_assert_num_queries(6) as few:
        client.get(reverse("web:projects"))
    for n in range(3, 30):
        MembershipFactory(project=ProjectFactory(name=f"p{n}"), user=alice, role=Role.OWNER)
    with django_assert_num_queries(len(few.captured_queries)):
        client.get(reverse("web:projects"))


def test_member_sees_list_with_write_controls_and_creates(web, bob, project):
    ProjectMemoryFactory(project=project, content="We deploy on Fridays")
    client = web(bob)
    page = client.get(project_list(project))
    assert page.status_code == 200
    assert "We deploy on Fridays" in page.text and 'id="create-memory"' in page.text and "Correct" in page.text
    response = client.post(project_list(project), {"kind": "convention", "content": "Tabs, not spaces"})
    assert response.status_code == 302
    memory = Memory.objects.get(content="Tabs, not spaces")
    assert (memory.scope_type, memory.project, memory.kind, memory.origin, memory.created_by) == (
        Tier.PROJECT,
        project,
        "convention",
        Origin.MANUAL,
        bob,
    )


def test_search_and_filter_in_project(web, alice, project):
    ProjectMemoryFactory(project=project, kind="decision", content="Database: PostgreSQL")
    ProjectMemoryFactory(project=project, kind="convention", content="Database names in snake_case")
    ProjectMemoryFactory(project=project, kind="decision", content="Frontend: plain HTML")
    client = web(alice)
    url = reverse("web:memory_home_items")
    text = unmarked(client.get(url, {"source": f"project:{project.pk}", "q": "database", "kind": "decision"}))
    assert "Database: PostgreSQL" in text and "snake_case" not in text and "plain HTML" not in text


def test_list_does_not_show_other_projects_memories(web, alice, project):
    other = ProjectFactory(name="Other")
    MembershipFactory(project=other, user=alice, role=Role.OWNER)
    ProjectMemoryFactory(project=other, content="other project fact")
    ProjectMemoryFactory(project=project, content="apollo fact")
    text = web(alice).get(project_list(project)).text
    assert "apollo fact" in text and "other project fact" not in text


def test_member_corrects_and_sees_chain_then_forgets(web, bob, project):
    client = web(bob)
    old = ProjectMemoryFactory(project=project, content="Ship weekly")
    u = urls(project, old)
    response = client.post(u["correct"], {"kind": old.kind, "content": "Ship daily"})
    new = Memory.objects.get(status=Status.ACTIVE)
    assert response.status_code == 302
    assert response["Location"] == reverse("web:memory_home_item", args=[new.pk])
    old.refresh_from_db()
    assert (old.status, old.superseded_by_id, new.project) == (Status.SUPERSEDED, new.pk, project)
    detail = client.get(reverse("web:memory_home_item", args=[new.pk])).text
    assert "Ship weekly" in detail and "Ship daily" in detail
    assert client.get(urls(project, new)["forget"]).status_code == 200
    assert client.post(urls(project, new)["forget"]).status_code == 302
    assert not Memory.objects.exists()


def test_viewer_reads_without_write_controls(web, viewer, project):
    memory = ProjectMemoryFactory(project=project, content="Readable by viewers")
    client = web(viewer)
    page = client.get(project_list(project))
    assert page.status_code == 200
    assert "Readable by viewers" in page.text
    assert 'id="create-memory"' not in page.text
    assert urls(project, memory)["correct"] not in page.text and urls(project, memory)["forget"] not in page.text
    detail = client.get(urls(project, memory)["detail"])
    assert detail.status_code == 200 and "Readable by viewers" in detail.text
    assert urls(project, memory)["correct"] not in detail.text


@pytest.mark.parametrize("page", ["list", "correct", "forget"])
def test_viewer_post_is_403_and_changes_nothing(web, viewer, project, page):
    memory = ProjectMemoryFactory(project=project)
    before = snapshot()
    client = web(viewer)
    response = client.post(urls(project, memory)[page], {"kind": "fact", "content": "viewer write"})
    assert response.status_code == 403
    # Even an invalid form is refused before it is read.
    assert client.post(urls(project, memory)[page], {}).status_code == 403
    assert snapshot() == before


@pytest.mark.parametrize("page", ["correct", "forget"])
def test_viewer_cannot_open_write_pages(web, viewer, project, page):
    memory = ProjectMemoryFactory(project=project)
    assert web(viewer).get(urls(project, memory)[page]).status_code == 403


@pytest.mark.parametrize("page", ["list", "detail", "correct", "forget"])
def test_non_member_gets_404_and_changes_nothing(web, mallory, project, page):
    memory = ProjectMemoryFactory(project=project, content="apollo internal")
    before = snapshot()
    client = web(mallory)
    response = client.get(urls(project, memory)[page])
    assert response.status_code == 404 and "apollo internal" not in response.text
    if page != "detail":
        assert client.post(urls(project, memory)[page], {"kind": "fact", "content": "mallory"}).status_code == 404
    assert snapshot() == before


def test_memory_of_another_project_is_listed_only_under_its_own(web, alice, project):
    other = ProjectFactory(name="Other")
    MembershipFactory(project=other, user=alice, role=Role.OWNER)
    foreign = ProjectMemoryFactory(project=other, content="other project decision")
    before = snapshot()
    client = web(alice)
    assert "other project decision" not in client.get(project_list(project)).text
    assert "other project decision" in client.get(project_list(other)).text
    page = client.get(urls(project, foreign)["detail"]).text
    assert "Project Other" in page and f"source=project%3A{other.pk}" in page
    assert snapshot() == before


def test_unknown_project_is_404(web, alice):
    assert web(alice).get(reverse("web:memory_home_items"), {"source": "project:prj_missing"}).status_code == 404


def test_create_project_makes_me_owner(web, mallory):
    response = web(mallory).post(reverse("web:projects"), {"name": "Gemini", "description": "second try"})
    project = Project.objects.get(name="Gemini")
    assert response.status_code == 302
    assert response["Location"] == project_list(project)
    assert Membership.objects.get(project=project).user == mallory
    assert Membership.objects.get(project=project).role == Role.OWNER


@pytest.mark.parametrize("data", [{"name": ""}, {"name": "x" * 201}, {"name": "ok", "description": "d" * 4001}])
def test_create_project_rejects_bad_input(web, mallory, data):
    response = web(mallory).post(reverse("web:projects"), data)
    assert response.status_code == 400
    assert 'class="errorlist' in response.text
    assert not Project.objects.exists()


def test_the_old_project_addresses_lead_to_the_one_list_for_good(web, bob, project):
    memory = ProjectMemoryFactory(project=project)
    client = web(bob)
    response = client.get(reverse("web:project_memories", args=[project.pk]), {"q": "ship", "status": "archived"})
    assert response.status_code == 301
    assert response["Location"] == f"{project_list(project)}&q=ship&status=archived"
    for old, new in [
        ("web:project_memory", "web:memory_home_item"),
        ("web:project_memory_correct", "web:memory_home_item_correct"),
        ("web:project_memory_forget", "web:memory_home_item_forget"),
    ]:
        response = client.get(reverse(old, args=[project.pk, memory.pk]))
        assert response.status_code == 301 and response["Location"] == reverse(new, args=[memory.pk])
