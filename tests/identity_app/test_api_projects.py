import pytest

from identity_app.models import Membership, Project, Role
from tests.factories import MembershipFactory

pytestmark = pytest.mark.django_db


def members(project):
    return sorted(Membership.objects.filter(project=project).values_list("user__username", "role"))


def test_create_project_makes_creator_owner(api, alice):
    response = api(alice).post("/api/projects", {"name": "Zeus"}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["id"].startswith("prj_") and body["role"] == "owner"
    assert members(Project.objects.get(pk=body["id"])) == [("alice", "owner")]


def test_project_list_shows_only_memberships(api, alice, mallory, project):
    assert [p["id"] for p in api(alice).get("/api/projects").json()["results"]] == [project.pk]
    assert api(mallory).get("/api/projects").json()["results"] == []


def test_non_member_project_detail_and_members_404(api, mallory, project):
    client = api(mallory)
    assert client.get(f"/api/projects/{project.pk}").status_code == 404
    assert client.get(f"/api/projects/{project.pk}/members").status_code == 404
    assert client.post(f"/api/projects/{project.pk}/members", {"username": "mallory"}, format="json").status_code == 404
    assert ("mallory", "member") not in members(project)


def test_owner_manages_members(api, alice, mallory, project):
    client = api(alice)
    invited = client.post(
        f"/api/projects/{project.pk}/members", {"username": "mallory", "role": "viewer"}, format="json"
    )
    assert invited.status_code == 202
    assert ("mallory", "viewer") not in members(project)  # not before mallory accepts
    invitation = api(mallory).get("/api/users/me/invitations").json()["results"][0]
    accepted = api(mallory).post(f"/api/users/me/invitations/{invitation['id']}/accept")
    assert accepted.status_code == 201 and accepted.json()["role"] == "viewer"
    assert ("mallory", "viewer") in members(project)
    assert (
        client.put(f"/api/projects/{project.pk}/members/{mallory.pk}", {"role": "member"}, format="json").status_code
        == 200
    )
    assert ("mallory", "member") in members(project)
    assert client.delete(f"/api/projects/{project.pk}/members/{mallory.pk}").status_code == 204
    assert ("mallory", "member") not in members(project)


def test_member_without_manage_gets_403(api, bob, mallory, project):
    before = members(project)
    response = api(bob).post(f"/api/projects/{project.pk}/members", {"username": "mallory"}, format="json")
    assert response.status_code == 403
    assert api(bob).put(f"/api/projects/{project.pk}", {"name": "renamed"}, format="json").status_code == 403
    assert members(project) == before
    assert Project.objects.get(pk=project.pk).name == "Apollo"


def test_last_owner_cannot_leave_or_be_demoted(api, alice, project):
    client = api(alice)
    assert client.delete(f"/api/projects/{project.pk}/members/{alice.pk}").status_code == 409
    assert (
        client.put(f"/api/projects/{project.pk}/members/{alice.pk}", {"role": "member"}, format="json").status_code
        == 409
    )
    assert ("alice", "owner") in members(project)


def test_admin_cannot_remove_owner(api, alice, mallory, project):
    MembershipFactory(project=project, user=mallory, role=Role.ADMIN)
    response = api(mallory).delete(f"/api/projects/{project.pk}/members/{alice.pk}")
    assert response.status_code == 403 and response.json()["error"]["code"] == "owner_required"
    assert ("alice", "owner") in members(project)


def test_admin_cannot_grant_owner_then_take_over(api, alice, bob, mallory, project):
    MembershipFactory(project=project, user=mallory, role=Role.ADMIN)
    client = api(mallory)
    before = members(project)
    assert (
        client.put(f"/api/projects/{project.pk}/members/{mallory.pk}", {"role": "owner"}, format="json").status_code
        == 403
    )
    assert (
        client.put(f"/api/projects/{project.pk}/members/{bob.pk}", {"role": "owner"}, format="json").status_code == 403
    )
    assert (
        client.put(f"/api/projects/{project.pk}/members/{alice.pk}", {"role": "viewer"}, format="json").status_code
        == 403
    )
    from tests.factories import UserFactory

    UserFactory(username="eve")
    assert (
        client.post(
            f"/api/projects/{project.pk}/members", {"username": "eve", "role": "owner"}, format="json"
        ).status_code
        == 403
    )
    assert members(project) == before


def test_owner_may_grant_owner(api, alice, bob, project):
    assert (
        api(alice).put(f"/api/projects/{project.pk}/members/{bob.pk}", {"role": "owner"}, format="json").status_code
        == 200
    )
    assert ("bob", "owner") in members(project)


@pytest.mark.parametrize("body", [{"name": ""}, {"name": 5}, {"name": "x" * 201}, {"nme": "typo"}, {}])
def test_bad_project_input_is_400(api, alice, body):
    assert api(alice).post("/api/projects", body, format="json").status_code == 400
    assert not Project.objects.exists()


def test_unknown_role_is_400_and_an_unknown_user_gets_the_same_answer_as_a_known_one(api, alice, mallory, project):
    before = members(project)
    client = api(alice)
    ghost = client.post(f"/api/projects/{project.pk}/members", {"username": "ghost"}, format="json")
    real = client.post(f"/api/projects/{project.pk}/members", {"username": "mallory"}, format="json")
    assert (ghost.status_code, ghost.json()) == (real.status_code, real.json())
    assert (
        client.post(
            f"/api/projects/{project.pk}/members", {"username": "bob", "role": "god"}, format="json"
        ).status_code
        == 400
    )
    assert members(project) == before


def test_superuser_is_not_implicitly_a_service_principal(admin, svc):
    from identity_app.permissions import is_service_principal

    assert admin.is_superuser and not is_service_principal(admin)
    assert is_service_principal(svc)


def test_service_grant_through_a_group_counts(db):
    from django.contrib.auth.models import Group, Permission

    from identity_app.permissions import is_service_principal
    from tests.factories import UserFactory

    bot = UserFactory(username="bot")
    group = Group.objects.create(name="runtimes")
    group.permissions.add(Permission.objects.get(codename="run_agents"))
    bot.groups.add(group)
    assert is_service_principal(bot)


def test_project_can_be_renamed_after_its_creator_account_is_deleted(api, alice, bob):
    created = api(bob).post("/api/projects", {"name": "Inherited"}, format="json").json()
    MembershipFactory(project=Project.objects.get(pk=created["id"]), user=alice, role=Role.OWNER)
    bob.delete()  # created_by becomes NULL
    response = api(alice).patch(f"/api/projects/{created['id']}", {"name": "Renamed"}, format="json")
    assert response.status_code == 200, response.content
    assert Project.objects.get(pk=created["id"]).name == "Renamed"
