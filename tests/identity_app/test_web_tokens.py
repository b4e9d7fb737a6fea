"""The API tokens page: list, create (the key shown on that response only), revoke, rotate."""

import re

import pytest
from django.urls import reverse

from identity_app.models import ApiToken, hash_token
from identity_app.services import token_issue

pytestmark = pytest.mark.django_db


def shown_key(response) -> str | None:
    match = re.search(rb'value="(mk_[^"]+)" id="new-key-value"', response.content)
    return match.group(1).decode() if match else None


def test_create_shows_the_key_once(client, alice):
    client.force_login(alice)
    response = client.post(reverse("web:tokens"), {"name": "laptop", "expires_in_days": 30})
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    key = shown_key(response)
    token = ApiToken.objects.get(user=alice)
    assert key and token.key_hash == hash_token(key) and token.name == "laptop"
    page = client.get(reverse("web:tokens"))
    assert key not in page.content.decode() and token.prefix in page.content.decode()


def test_the_page_lists_only_my_tokens_and_others_ids_are_404(client, alice, bob):
    token_issue(user=alice, name="mine")
    bobs, _ = token_issue(user=bob, name="bobs-token")
    client.force_login(alice)
    page = client.get(reverse("web:tokens")).content.decode()
    assert "mine" in page and "bobs-token" not in page
    for name in ("web:token_revoke", "web:token_rotate"):
        assert client.get(reverse(name, args=[bobs.pk])).status_code == 404
        assert client.post(reverse(name, args=[bobs.pk]), {"confirmed": "yes"}).status_code == 404
    bobs.refresh_from_db()
    assert bobs.revoked_at is None and ApiToken.objects.filter(user=bob).count() == 1


def test_revoke_and_rotate(client, alice):
    first, _ = token_issue(user=alice, name="ci")
    second, _ = token_issue(user=alice, name="bot")
    client.force_login(alice)
    # Both ask first: the link and a POST without the confirmation show what will happen.
    for name, token in (("web:token_revoke", first), ("web:token_rotate", second)):
        for ask in (client.get(reverse(name, args=[token.pk])), client.post(reverse(name, args=[token.pk]))):
            assert ask.status_code == 200 and 'name="confirmed" value="yes"' in ask.text
    assert ApiToken.objects.filter(revoked_at__isnull=False).count() == 0
    assert ApiToken.objects.filter(user=alice).count() == 2
    assert client.post(reverse("web:token_revoke", args=[first.pk]), {"confirmed": "yes"}).status_code == 302
    first.refresh_from_db()
    assert first.revoked_at is not None
    rotated = client.post(reverse("web:token_rotate", args=[second.pk]), {"confirmed": "yes"})
    key = shown_key(rotated)
    assert rotated.status_code == 200 and key
    new = ApiToken.objects.get(key_hash=hash_token(key))
    assert new.name == "bot" and ApiToken.objects.get(pk=second.pk).revoked_at is not None
    assert client.post(reverse("web:token_rotate", args=[second.pk]), {"confirmed": "yes"}).status_code == 409


def test_bad_input_is_400_and_creates_nothing(client, alice, settings):
    client.force_login(alice)
    for data in ({"expires_in_days": 0}, {"expires_in_days": settings.API_TOKEN_MAX_DAYS + 1}, {"name": "x" * 101}):
        assert client.post(reverse("web:tokens"), {"expires_in_days": 7, **data}).status_code == 400
    assert not ApiToken.objects.exists()


def test_limits_are_offered_to_service_principals(client, alice, svc):
    client.force_login(alice)
    assert b"only_users" not in client.get(reverse("web:tokens")).content
    client.force_login(svc)
    assert b"only_users" in client.get(reverse("web:tokens")).content
    response = client.post(reverse("web:tokens"), {"expires_in_days": 7, "only_users": "alice, ghost"})
    assert response.status_code == 400 and not ApiToken.objects.exists()
    response = client.post(reverse("web:tokens"), {"expires_in_days": 7, "only_users": "alice"})
    assert response.status_code == 200
    assert ApiToken.objects.get().only_user_ids == [alice.pk]


def test_anonymous_is_sent_to_login(client):
    assert client.get(reverse("web:tokens")).status_code == 302
