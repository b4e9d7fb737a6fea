"""Project invitations: adding a member invites them, the invitee accepts or declines, and the
answer to the inviter never tells whether a username exists."""

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from identity_app.models import Invitation, InvitationStatus, Membership, Role
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


def members(project):
    return sorted(Membership.objects.filter(project=project).values_list("user__username", "role"))


def invite(client, project, username, role=None):
    body = {"username": username, **({"role": role} if role else {})}
    return client.post(f"/api/projects/{project.pk}/members", body, format="json")


def pending_for(client) -> list[dict]:
    return client.get("/api/users/me/invitations").json()["results"]


def test_the_answer_is_the_same_for_any_username(api, alice, bob, project):
    UserFactory(username="sleeper", is_active=False)
    UserFactory(username="carol")
    client = api(alice)
    answers = {name: invite(client, project, name) for name in ("carol", "nobody-here", "sleeper", "bob", "alice")}
    assert {(r.status_code, r.content) for r in answers.values()} == {
        (answers["carol"].status_code, answers["carol"].content)
    }
    assert answers["carol"].status_code == 202 and answers["carol"].json()["status"] == "invited"
    # The managers' list shows an invitation for every name that is not a member, alike.
    listed = client.get(f"/api/projects/{project.pk}/invitations").json()["results"]
    assert sorted((i["username"], i["status"], i["role"]) for i in listed) == [
        ("carol", "pending", "member"),
        ("nobody-here", "pending", "member"),
        ("sleeper", "pending", "member"),
    ]
    assert {tuple(sorted(i)) for i in listed} == {
        ("created_at", "id", "invited_by", "responded_at", "role", "status", "username")
    }


def test_invitee_accepts_and_joins_with_the_invited_role(api, alice, mallory, project):
    assert invite(api(alice), project, "mallory", "viewer").status_code == 202
    assert ("mallory", "viewer") not in members(project)
    client = api(mallory)
    [invitation] = pending_for(client)
    assert (invitation["project_name"], invitation["role"], invitation["invited_by"]) == ("Apollo", "viewer", "alice")
    response = client.post(f"/api/users/me/invitations/{invitation['id']}/accept")
    assert response.status_code == 201 and response.json()["project_id"] == project.pk
    assert ("mallory", "viewer") in members(project)
    assert pending_for(client) == []
    assert Invitation.objects.get().status == InvitationStatus.ACCEPTED
    # Once answered it is gone for good.
    assert client.post(f"/api/users/me/invitations/{invitation['id']}/accept").status_code == 404


def test_invitee_declines(api, alice, mallory, project):
    invite(api(alice), project, "mallory")
    client = api(mallory)
    invitation_id = pending_for(client)[0]["id"]
    assert client.post(f"/api/users/me/invitations/{invitation_id}/decline").status_code == 204
    assert client.post(f"/api/users/me/invitations/{invitation_id}/accept").status_code == 404
    assert ("mallory", "member") not in members(project)
    assert Invitation.objects.get().status == InvitationStatus.DECLINED


def test_only_the_invitee_sees_and_answers_an_invitation(api, alice, bob, mallory, project):
    invite(api(alice), project, "mallory")
    invitation_id = Invitation.objects.get().pk
    for other in (alice, bob):
        client = api(other)
        assert pending_for(client) == []
        assert client.post(f"/api/users/me/invitations/{invitation_id}/accept").status_code == 404
        assert client.post(f"/api/users/me/invitations/{invitation_id}/decline").status_code == 404
    assert Invitation.objects.get().status == InvitationStatus.PENDING
    assert ("mallory", "member") not in members(project)


def test_who_may_invite(api, alice, bob, mallory, project):
    carol = UserFactory(username="carol")
    assert invite(api(mallory), project, "carol").status_code == 404  # not a member
    assert invite(api(bob), project, "carol").status_code == 403  # member without manage
    MembershipFactory(project=project, user=UserFactory(username="dana"), role=Role.ADMIN)
    admin_client = api(type(carol).objects.get(username="dana"))
    owner_invite = invite(admin_client, project, "carol", "owner")
    assert owner_invite.status_code == 403 and owner_invite.json()["error"]["code"] == "owner_required"
    assert not Invitation.objects.exists()
    assert invite(admin_client, project, "carol", "member").status_code == 202
    assert invite(api(alice), project, "carol", "owner").status_code == 202  # owners may invite owners
    # Inviting again replaces the role of the one pending invitation.
    assert list(Invitation.objects.values_list("username", "role", "status")) == [("carol", "owner", "pending")]


def test_an_invitation_from_someone_who_lost_the_right_is_void(api, alice, bob, mallory, project):
    MembershipFactory(project=project, user=UserFactory(username="dana"), role=Role.ADMIN)
    dana = type(alice).objects.get(username="dana")
    invite(api(dana), project, "mallory")
    Membership.objects.filter(project=project, user=dana).update(role=Role.VIEWER)
    client = api(mallory)
    response = client.post(f"/api/users/me/invitations/{pending_for(client)[0]['id']}/accept")
    assert response.status_code == 409 and response.json()["error"]["code"] == "invitation_stale"
    assert ("mallory", "member") not in members(project)


def test_cancelled_invitation_cannot_be_accepted(api, alice, bob, mallory, project):
    invite(api(alice), project, "mallory")
    invitation_id = Invitation.objects.get().pk
    assert api(bob).delete(f"/api/projects/{project.pk}/invitations/{invitation_id}").status_code == 403
    assert api(mallory).delete(f"/api/projects/{project.pk}/invitations/{invitation_id}").status_code == 404
    assert api(alice).delete(f"/api/projects/{project.pk}/invitations/{invitation_id}").status_code == 204
    assert api(mallory).post(f"/api/users/me/invitations/{invitation_id}/accept").status_code == 404
    assert ("mallory", "member") not in members(project)


def test_project_invitations_are_for_managers(api, alice, bob, mallory, project):
    invite(api(alice), project, "mallory")
    assert api(mallory).get(f"/api/projects/{project.pk}/invitations").status_code == 404
    assert api(bob).get(f"/api/projects/{project.pk}/invitations").status_code == 403


def test_web_invite_accept_and_decline(client, alice, mallory, project):
    client.force_login(alice)
    page = client.get(reverse("web:project_members", args=[project.pk]))
    assert page.status_code == 200 and b'id="invite"' in page.content
    response = client.post(
        reverse("web:project_members", args=[project.pk]), {"username": "mallory", "role": "viewer"}, follow=True
    )
    ghost = client.post(
        reverse("web:project_members", args=[project.pk]), {"username": "ghost", "role": "viewer"}, follow=True
    )
    assert [str(m) for m in response.context["messages"]] == [str(m) for m in ghost.context["messages"]]
    client.force_login(mallory)
    listing = client.get(reverse("web:invitations"))
    assert b"Apollo" in listing.content
    invitation = Invitation.objects.get(username="mallory")
    accepted = client.post(reverse("web:invitation_accept", args=[invitation.pk]), follow=True)
    assert accepted.status_code == 200 and ("mallory", "viewer") in members(project)
    assert b"Apollo" not in client.get(reverse("web:invitations")).content.split(b"<main ")[1]


def test_web_decline_and_strangers(client, alice, bob, mallory, project):
    invite_row = Invitation.objects.create(project=project, username="mallory", invitee=mallory, invited_by=alice)
    client.force_login(bob)
    assert client.post(reverse("web:invitation_accept", args=[invite_row.pk])).status_code == 404
    assert client.post(reverse("web:project_members", args=[project.pk]), {"username": "x"}).status_code == 403
    assert b'id="invite"' not in client.get(reverse("web:project_members", args=[project.pk])).content
    client.force_login(mallory)
    assert client.get(reverse("web:project_members", args=[project.pk])).status_code == 404
    assert client.post(reverse("web:invitation_decline", args=[invite_row.pk])).status_code == 302
    assert Invitation.objects.get().status == InvitationStatus.DECLINED and ("mallory", "member") not in members(
        project
    )


def test_anonymous_is_refused(client, project):
    from rest_framework.test import APIClient

    assert client.get(reverse("web:invitations")).status_code == 302
    assert client.get(reverse("web:project_members", args=[project.pk])).status_code == 302
    assert APIClient().get("/api/users/me/invitations").status_code == 401
    assert APIClient().post(f"/api/projects/{project.pk}/members", {"username": "x"}, format="json").status_code == 401


def _age(days: float) -> None:
    """Every invitation was sent ``days`` ago."""
    Invitation.objects.update(created_at=timezone.now() - timedelta(days=days))


def test_an_expired_invitation_is_not_listed_and_cannot_be_accepted_or_declined(api, alice, mallory, project, settings):
    settings.INVITATION_EXPIRY_DAYS = 14
    assert invite(api(alice), project, "mallory").status_code == 202
    client = api(mallory)
    [invitation] = pending_for(client)
    _age(14.01)
    assert pending_for(client) == []
    for action in ("accept", "decline"):
        assert client.post(f"/api/users/me/invitations/{invitation['id']}/{action}").status_code == 404
    assert ("mallory", "member") not in members(project)
    assert Invitation.objects.get().status == InvitationStatus.PENDING  # nothing changed


def test_an_invitation_within_its_days_is_accepted_and_sending_again_renews_it(api, alice, mallory, project, settings):
    settings.INVITATION_EXPIRY_DAYS = 14
    invite(api(alice), project, "mallory")
    _age(13.9)
    assert len(pending_for(api(mallory))) == 1
    _age(20)
    assert invite(api(alice), project, "mallory", "viewer").status_code == 202  # sent again
    [invitation] = pending_for(api(mallory))
    assert api(mallory).post(f"/api/users/me/invitations/{invitation['id']}/accept").status_code == 201


def test_expired_invitations_for_any_username_are_deleted_by_the_worker_and_the_command(
    api, alice, mallory, project, settings
):
    settings.INVITATION_EXPIRY_DAYS = 14
    client = api(alice)
    for name in ("nobody-1", "nobody-2", "mallory"):
        invite(client, project, name)
    _age(15)
    invite(client, project, "fresh-name")  # a new one stays
    accepted = Invitation.objects.create(
        project=project, username="old-answer", invited_by=alice, status=InvitationStatus.ACCEPTED
    )
    Invitation.objects.filter(pk=accepted.pk).update(created_at=timezone.now() - timedelta(days=30))
    out = io.StringIO()
    call_command("expire_invitations", stdout=out)
    assert "3" in out.getvalue()
    assert sorted(Invitation.objects.values_list("username", flat=True)) == ["fresh-name", "old-answer"]
    _age(15)
    out = io.StringIO()
    call_command("memory_worker", "--once", stdout=out)
    assert "1 expired invitation(s) deleted" in out.getvalue()
    assert list(Invitation.objects.values_list("username", flat=True)) == ["old-answer"]
