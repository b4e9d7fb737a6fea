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
        url, {"user": alice.pk, "display_name": "Changed", "timezone": "UTC", "preferences": '{"nested": {"DB_Password": "x"}}'}
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
    response = client.post(
        f"/admin/identity_app/membership/{owner.pk}/change/",
        {"project": project.pk, "user": alice.pk, "role": "member"},
    )
    assert response.status_code == 200 and "at least one owner" in response.content.decode()
    assert client.post(f"/admin/identity_app/membership/{owner.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Membership.objects.get(pk=owner.pk).role == Role.OWNER


def test_project_description_limit_applies_to_every_adapter(api, alice):
    from identity_app.models import Project

    response = api(alice).post("/api/projects", {"name": "Long", "description": "x" * 4001}, format="json")
    assert response.status_code == 400
    assert not Project.objects.filter(name="Long").exists()
