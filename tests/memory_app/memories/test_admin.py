"""Memory review in the Django admin: cheap changelist, changes only through the services."""

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from memory_app.memories.models import Memory, Origin, ProjectSummary, Status
from memory_app.memories.selectors import memory_chain
from tests.factories import ProjectMemoryFactory, UserFactory, UserMemoryFactory

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:memory_app_memory_changelist")


@pytest.fixture
def staff(client, admin):
    client.force_login(admin)
    return client


def snapshot():
    return sorted(Memory.objects.values_list("id", "status", "content", "superseded_by_id"))


def make_rows(project, n):
    for i in range(n):
        UserMemoryFactory(owner=UserFactory(), kind="fact", content=f"user fact {i}")
        ProjectMemoryFactory(project=project, content=f"project decision {i}", origin=Origin.AUTO)


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"scope_type__exact": "user", "status__exact": "active"},
        {"kind__exact": "decision", "origin__exact": "auto"},
        {"q": "fact"},
    ],
)
def test_changelist_with_filters_uses_a_bounded_number_of_queries(staff, project, params, django_assert_num_queries):
    make_rows(project, 2)
    with CaptureQueriesContext(connection) as few:
        response = staff.get(CHANGELIST, params)
    assert response.status_code == 200
    assert len(few.captured_queries) <= 6, len(few.captured_queries)
    make_rows(project, 40)
    with django_assert_num_queries(len(few.captured_queries)):
        response = staff.get(CHANGELIST, params)
    assert response.status_code == 200


def test_changelist_filters_and_search_select_rows(staff, project):
    UserMemoryFactory(content="likes jazz")
    ProjectMemoryFactory(project=project, content="decided on jazz", origin=Origin.AUTO)
    text = staff.get(CHANGELIST, {"scope_type__exact": "user"}).text
    assert "likes jazz" in text and "decided on jazz" not in text
    text = staff.get(CHANGELIST, {"origin__exact": "auto"}).text
    assert "decided on jazz" in text and "likes jazz" not in text
    text = staff.get(CHANGELIST, {"q": "jazz"}).text
    assert "decided on jazz" in text and "likes jazz" in text
    for name in ("scope_type", "kind", "status", "origin"):
        assert f"{name}__exact=" in text


def test_change_view_is_read_only_and_shows_provenance(staff, alice):
    memory = UserMemoryFactory(owner=alice, source_thread_id="thr_123", evidence={"msg": 7})
    url = reverse("admin:memory_app_memory_change", args=[memory.pk])
    page = staff.get(url)
    assert page.status_code == 200
    assert "thr_123" in page.text and 'name="content"' not in page.text and 'name="source_thread_id"' not in page.text
    before = snapshot()
    staff.post(url, {"content": "edited directly", "status": "archived"})
    assert staff.get(reverse("admin:memory_app_memory_delete", args=[memory.pk])).status_code == 403
    assert staff.get(reverse("admin:memory_app_memory_add")).status_code == 403
    assert snapshot() == before


def test_no_bulk_delete_that_bypasses_the_services(staff, alice):
    memory = UserMemoryFactory(owner=alice)
    staff.post(CHANGELIST, {"action": "delete_selected", ACTION_CHECKBOX_NAME: [memory.pk], "post": "yes"})
    assert Memory.objects.filter(pk=memory.pk).exists()


def test_supersede_action_shows_a_form_then_creates_the_chain(staff, admin, alice):
    old = UserMemoryFactory(owner=alice, content="Lives in Oslo")
    page = staff.post(CHANGELIST, {"action": "supersede_memories", ACTION_CHECKBOX_NAME: [old.pk]})
    assert page.status_code == 200
    assert f'name="content_{old.pk}"' in page.text and "Lives in Oslo" in page.text
    assert Memory.objects.get(pk=old.pk).status == Status.ACTIVE  # the form page changes nothing

    response = staff.post(
        CHANGELIST,
        {
            "action": "supersede_memories",
            ACTION_CHECKBOX_NAME: [old.pk],
            "apply": "1",
            f"content_{old.pk}": "Lives in Bergen",
        },
    )
    assert response.status_code == 302
    old.refresh_from_db()
    new = Memory.objects.get(status=Status.ACTIVE)
    assert (old.status, old.superseded_by_id) == (Status.SUPERSEDED, new.pk)
    assert (new.content, new.owner, new.scope_type, new.scope_id, new.kind) == (
        "Lives in Bergen",
        alice,
        "user",
        str(alice.pk),
        old.kind,
    )
    assert (new.created_by, new.origin) == (admin, Origin.MANUAL)
    assert [m.pk for m in memory_chain(memory=new)] == [old.pk, new.pk]


def test_supersede_action_on_project_memory_keeps_the_project(staff, project):
    old = ProjectMemoryFactory(project=project, content="Release on Mondays")
    staff.post(
        CHANGELIST,
        {
            "action": "supersede_memories",
            ACTION_CHECKBOX_NAME: [old.pk],
            "apply": "1",
            f"content_{old.pk}": "Release on Tuesdays",
        },
    )
    new = Memory.objects.get(status=Status.ACTIVE)
    assert (new.project, new.content) == (project, "Release on Tuesdays")


def test_supersede_action_refuses_non_active_and_unchanged_rows(staff, alice):
    old = UserMemoryFactory(owner=alice, status=Status.ARCHIVED, content="archived")
    same = UserMemoryFactory(owner=alice, content="keep me")
    before = snapshot()
    response = staff.post(
        CHANGELIST,
        {
            "action": "supersede_memories",
            ACTION_CHECKBOX_NAME: [old.pk, same.pk],
            "apply": "1",
            f"content_{old.pk}": "new text",
            f"content_{same.pk}": "keep me",
        },
        follow=True,
    )
    assert "only active memories can be superseded" in response.text
    assert "content unchanged" in response.text
    assert snapshot() == before


def test_supersede_action_rejects_oversize_content(staff, alice):
    old = UserMemoryFactory(owner=alice)
    before = snapshot()
    response = staff.post(
        CHANGELIST,
        {"action": "supersede_memories", ACTION_CHECKBOX_NAME: [old.pk], "apply": "1", f"content_{old.pk}": "z" * 5000},
        follow=True,
    )
    assert "longer than" in response.text
    assert snapshot() == before


def test_staff_without_change_permission_cannot_supersede(client, alice):
    viewer = UserFactory(username="auditor", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_memory"))
    client.force_login(viewer)
    old = UserMemoryFactory(owner=alice, content="original")
    before = snapshot()
    assert client.get(CHANGELIST).status_code == 200
    client.post(
        CHANGELIST,
        {"action": "supersede_memories", ACTION_CHECKBOX_NAME: [old.pk], "apply": "1", f"content_{old.pk}": "changed"},
    )
    assert snapshot() == before


def test_non_staff_cannot_reach_the_admin(client, alice):
    client.force_login(alice)
    old = UserMemoryFactory(owner=alice)
    before = snapshot()
    response = client.post(
        CHANGELIST,
        {"action": "supersede_memories", ACTION_CHECKBOX_NAME: [old.pk], "apply": "1", f"content_{old.pk}": "x"},
    )
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert snapshot() == before


def test_forget_action_confirms_then_deletes_through_the_service(staff, alice):
    old = UserMemoryFactory(owner=alice, content="v1")
    staff.post(
        CHANGELIST,
        {"action": "supersede_memories", ACTION_CHECKBOX_NAME: [old.pk], "apply": "1", f"content_{old.pk}": "v2"},
    )
    new = Memory.objects.get(status=Status.ACTIVE)
    other = UserMemoryFactory(owner=alice, content="unrelated")
    page = staff.post(CHANGELIST, {"action": "forget_memories", ACTION_CHECKBOX_NAME: [new.pk]})
    assert page.status_code == 200 and "v2" in page.text
    assert Memory.objects.count() == 3
    staff.post(CHANGELIST, {"action": "forget_memories", ACTION_CHECKBOX_NAME: [new.pk], "apply": "1"})
    assert list(Memory.objects.values_list("pk", flat=True)) == [other.pk]


def test_project_summary_admin(staff, admin, project):
    response = staff.post(
        reverse("admin:memory_app_projectsummary_add"),
        {"project": project.pk, "title": "Status", "content": "On track."},
    )
    assert response.status_code == 302
    summary = ProjectSummary.objects.get()
    assert (summary.project, summary.created_by, summary.content) == (project, admin, "On track.")
    page = staff.get(reverse("admin:memory_app_projectsummary_changelist"), {"q": "Apollo"})
    assert page.status_code == 200 and "Status" in page.text
