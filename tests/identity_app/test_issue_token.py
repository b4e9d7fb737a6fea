import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from identity_app.models import ApiToken, hash_token
from identity_app.permissions import is_service_principal

pytestmark = pytest.mark.django_db


def issue(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command("issue_token", *args, stdout=out, stderr=err)
    return out.getvalue().strip().splitlines()[-1]


def test_issue_token_prints_key_once_and_stores_only_hash(api):
    key = issue("robot", "--create-user", "--service")
    token = ApiToken.objects.get()
    assert token.key_hash == hash_token(key) and key not in (token.key_hash, token.prefix)
    user = get_user_model().objects.get(username="robot")
    assert is_service_principal(user) and not user.is_staff
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get("/api/users/me/profile").json()["username"] == "robot"


def test_issue_token_staff_and_missing_user(db):
    with pytest.raises(CommandError):
        issue("nobody")
    issue("boss", "--create-user", "--staff")
    user = get_user_model().objects.get(username="boss")
    assert user.is_staff and not is_service_principal(user)


def test_revoked_token_is_rejected(api, alice):
    from django.utils import timezone

    client = api(alice)
    ApiToken.objects.update(revoked_at=timezone.now())
    assert client.get("/api/users/me/profile").status_code == 401


def test_issue_token_expires_in_days(db, settings):
    from datetime import timedelta

    from django.utils import timezone

    settings.API_TOKEN_DEFAULT_DAYS = 90
    issue("robot", "--create-user")
    issue("robot", "--expires-in", "7")
    default, short = ApiToken.objects.order_by("created_at", "id")
    assert timedelta(days=89, hours=23) < default.expires_at - timezone.now() <= timedelta(days=90)
    assert timedelta(days=6, hours=23) < short.expires_at - timezone.now() <= timedelta(days=7)


@pytest.mark.parametrize("days", ["never", "0", "-1", "100000"])
def test_issue_token_refuses_a_key_that_never_expires(db, days):
    with pytest.raises(CommandError):
        issue("robot", "--create-user", "--expires-in", days)
    assert not ApiToken.objects.exists()


def test_issue_token_limited_to_users_and_projects(db):
    from tests.factories import ProjectFactory, UserFactory

    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    apollo = ProjectFactory(name="Apollo")
    issue("bot", "--create-user", "--service", "--only-users", "alice,bob", "--only-projects", apollo.pk)
    token = ApiToken.objects.get()
    assert token.only_user_ids == sorted([alice.pk, bob.pk]) and token.only_project_ids == [apollo.pk]


@pytest.mark.parametrize(
    "args",
    [
        ("--only-users", "ghost"),  # unknown user
        ("--only-projects", "prj_nope"),  # unknown project
    ],
)
def test_issue_token_limits_must_exist(db, args):
    with pytest.raises(CommandError):
        issue("bot", "--create-user", "--service", *args)
    assert not ApiToken.objects.exists() and not get_user_model().objects.filter(username="bot").exists()


def test_issue_token_limits_need_a_service_principal(db):
    from tests.factories import UserFactory

    UserFactory(username="alice")
    with pytest.raises(CommandError):
        issue("carol", "--create-user", "--only-users", "alice")
    assert not ApiToken.objects.exists()
