"""The identity admin applies the same profile rules as the API and the profile page."""

import pytest
from django.urls import reverse

from identity_app.models import Profile
from tests.factories import ProfileFactory

pytestmark = pytest.mark.django_db


def test_admin_cannot_store_credentials_in_preferences(client, admin, alice):
    profile = ProfileFactory(user=alice, display_name="Alice", preferences={"lang": "en"})
    client.force_login(admin)
    url = reverse("admin:identity_app_profile_change", args=[profile.pk])
    assert client.get(url).status_code == 200
    response = client.post(
        url,
        {
            "user": alice.pk,
            "display_name": "Changed",
            "timezone": "UTC",
            "preferences": '{"nested": {"DB_Password": "x"}}',
        },
    )
    assert response.status_code == 200
    assert "may not store credentials" in response.text
    profile = Profile.objects.get(pk=profile.pk)
    assert (profile.display_name, profile.preferences) == ("Alice", {"lang": "en"})


def test_identity_changelists_render(client, admin, project):
    client.force_login(admin)
    for name in ("profile", "project", "membership", "apitoken"):
        assert client.get(reverse(f"admin:identity_app_{name}_changelist")).status_code == 200
    assert client.get(reverse("admin:identity_app_project_change", args=[project.pk])).status_code == 200


def test_admin_cannot_demote_or_delete_the_last_owner(client, admin, alice, project):
    from identity_app.models import Membership, Role

    client.force_login(admin)
    owner = Membership.objects.get(project=project, user=alice)
    change_url = f"/admin/identity_app/membership/{owner.pk}/change/"
    response = client.post(change_url, {"role": "member"}, follow=True)
    assert "at least one owner" in response.content.decode()
    assert Membership.objects.get(pk=owner.pk).role == Role.OWNER
    delete_url = f"/admin/identity_app/membership/{owner.pk}/delete/"
    response = client.post(delete_url, {"post": "yes"}, follow=True)
    assert "at least one owner" in response.content.decode()
    assert Membership.objects.get(pk=owner.pk).role == Role.OWNER


def test_admin_membership_changes_go_through_the_services(client, admin, alice, bob, mallory, project):
    from identity_app.models import Membership, Role

    client.force_login(admin)
    bob_row = Membership.objects.get(project=project, user=bob)
    # Promote bob to owner (staff may grant the owner role), then alice may be demoted.
    client.post(f"/admin/identity_app/membership/{bob_row.pk}/change/", {"role": "owner"})
    assert Membership.objects.get(pk=bob_row.pk).role == Role.OWNER
    alice_row = Membership.objects.get(project=project, user=alice)
    client.post(f"/admin/identity_app/membership/{alice_row.pk}/change/", {"role": "viewer"})
    assert Membership.objects.get(pk=alice_row.pk).role == Role.VIEWER
    # Adding an existing member is refused by the service, not duplicated.
    response = client.post(
        "/admin/identity_app/membership/add/", {"project": project.pk, "user": bob.pk, "role": "member"}, follow=True
    )
    assert Membership.objects.filter(project=project, user=bob).count() == 1
    client.post("/admin/identity_app/membership/add/", {"project": project.pk, "user": mallory.pk, "role": "viewer"})
    assert Membership.objects.get(project=project, user=mallory).role == Role.VIEWER
    client.post(f"/admin/identity_app/membership/{alice_row.pk}/delete/", {"post": "yes"})
    assert not Membership.objects.filter(pk=alice_row.pk).exists()
    assert response.status_code == 200


def test_staff_review_needs_the_permission_of_the_action(alice, bob, mallory, project):
    from django.contrib.auth.models import Permission

    from config.errors import PermissionDenied
    from identity_app import services
    from identity_app.models import Membership, Project, Role
    from tests.factories import UserFactory

    staff = UserFactory(username="changer", is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(codename__in=["change_membership", "change_project"]))
    refused = [
        lambda: services.membership_add(
            actor=staff, project_id=project.pk, username="mallory", role="viewer", staff_review=True
        ),
        lambda: services.membership_remove(actor=staff, project_id=project.pk, user_id=bob.pk, staff_review=True),
        lambda: services.project_delete(actor=staff, project_id=project.pk, staff_review=True),
    ]
    for call in refused:
        with pytest.raises(PermissionDenied):
            call()
    plain = UserFactory(username="plainstaff", is_staff=True)
    with pytest.raises(PermissionDenied):
        services.membership_change(actor=plain, project_id=project.pk, user_id=bob.pk, role="owner", staff_review=True)
    assert Membership.objects.get(project=project, user=bob).role == Role.MEMBER
    assert not Membership.objects.filter(user=mallory).exists() and Project.objects.filter(pk=project.pk).exists()
    # The permission it needs is enough: change_membership changes a role.
    services.membership_change(actor=staff, project_id=project.pk, user_id=bob.pk, role="viewer", staff_review=True)
    assert Membership.objects.get(project=project, user=bob).role == Role.VIEWER


def test_admin_project_edit_and_delete_go_through_the_services(client, admin, alice, project):
    from identity_app.models import Membership, Project

    client.force_login(admin)
    inline = {"memberships-TOTAL_FORMS": "0", "memberships-INITIAL_FORMS": "0"}
    client.post(f"/admin/identity_app/project/{project.pk}/change/", {"name": "Renamed", "description": "d", **inline})
    assert Project.objects.get(pk=project.pk).name == "Renamed"
    response = client.post(
        f"/admin/identity_app/project/{project.pk}/change/", {"name": "Renamed", "description": "x" * 4001, **inline}
    )
    assert Project.objects.get(pk=project.pk).description == "d"
    assert response.status_code == 200  # the form's own length check answers first
    client.post("/admin/identity_app/project/add/", {"name": "Made by staff", "description": "", **inline})
    made = Project.objects.get(name="Made by staff")
    assert Membership.objects.get(project=made).user == admin  # the creator owns it, as anywhere
    client.post(f"/admin/identity_app/project/{project.pk}/delete/", {"post": "yes"})
    assert not Project.objects.filter(pk=project.pk).exists()


def test_project_description_limit_applies_to_every_adapter(api, alice):
    from identity_app.models import Project

    response = api(alice).post("/api/projects", {"name": "Long", "description": "x" * 4001}, format="json")
    assert response.status_code == 400
    assert not Project.objects.filter(name="Long").exists()


def test_project_delete_outside_the_admin_takes_an_owner(alice, bob, mallory, project):
    from config.errors import NotFound, PermissionDenied
    from identity_app.models import Membership, Project, Role
    from identity_app.services import project_delete

    Membership.objects.filter(project=project, user=bob).update(role=Role.ADMIN)
    with pytest.raises(PermissionDenied):
        project_delete(actor=bob, project_id=project.pk)  # a project admin is not an owner
    with pytest.raises(NotFound):
        project_delete(actor=mallory, project_id=project.pk)  # a non-member does not see it
    assert Project.objects.filter(pk=project.pk).exists()
    project_delete(actor=alice, project_id=project.pk)
    assert not Project.objects.filter(pk=project.pk).exists()
