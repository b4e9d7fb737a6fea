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
