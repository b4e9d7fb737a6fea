"""Self-service API tokens (``/api/users/me/tokens``): expiry, ``last_used_at``, list / create /
revoke / rotate, the key shown once and stored hashed."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from identity_app.models import ApiToken, hash_token
from identity_app.services import token_issue

pytestmark = pytest.mark.django_db

TOKENS = "/api/users/me/tokens"


def client_for(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def works(key: str) -> bool:
    return client_for(key).get("/api/users/me/profile").status_code == 200


def test_a_new_token_expires_after_the_default_days(alice, settings):
    settings.API_TOKEN_DEFAULT_DAYS = 90
    before = timezone.now()
    token, _ = token_issue(user=alice)
    assert before + timedelta(days=90) <= token.expires_at <= timezone.now() + timedelta(days=90)


def test_expiry_boundary(alice):
    token, key = token_issue(user=alice)
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() + timedelta(seconds=30))
    assert works(key)
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now())
    response = client_for(key).get("/api/users/me/profile")
    assert response.status_code == 401
    assert response.json()["error"] == {
        "code": "authentication_failed",
        "message": "This token has expired.",
        "request_id": response["X-Request-ID"],
    }
    assert response["WWW-Authenticate"] == "Token"


def test_revoked_token_is_401_in_the_error_shape(api, alice):
    client = api(alice)
    ApiToken.objects.update(revoked_at=timezone.now())
    response = client.get("/api/users/me/profile")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"


def test_last_used_at_is_written_at_most_once_a_minute(alice):
    token, key = token_issue(user=alice)
    assert token.last_used_at is None
    client = client_for(key)
    client.get("/api/users/me/profile")
    first = ApiToken.objects.get(pk=token.pk).last_used_at
    assert first is not None
    client.get("/api/users/me/profile")
    assert ApiToken.objects.get(pk=token.pk).last_used_at == first  # fresh: no write
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now() - timedelta(minutes=2))
    client.get("/api/users/me/profile")
    assert ApiToken.objects.get(pk=token.pk).last_used_at > first


def test_a_fresh_token_costs_no_write_per_request(alice):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    _, key = token_issue(user=alice)
    client = client_for(key)
    client.get("/api/users/me/profile")
    with CaptureQueriesContext(connection) as queries:
        client.get("/api/users/me/profile")
    assert not [q for q in queries.captured_queries if "identity_app_apitoken" in q["sql"] and "UPDATE" in q["sql"]]


@pytest.mark.parametrize("holder", ["alice", "svc"])
def test_the_service_principal_grant_is_read_with_the_token(holder, request):
    """One lookup reads the token, its user and whether the user runs agents; no request
    asks for the grant again, and the grant still decides what the caller sees."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from identity_app.permissions import is_service_principal

    user = request.getfixturevalue(holder)
    _, key = token_issue(user=user)
    client = client_for(key)
    client.get("/api/conversations")
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/api/conversations")
    assert response.status_code == 200
    permission_reads = [q["sql"] for q in queries.captured_queries if '"auth_permission"' in q["sql"]]
    assert len(permission_reads) == 1 and "identity_app_apitoken" in permission_reads[0]
    assert response.wsgi_request.user.pk == user.pk
    assert is_service_principal(response.wsgi_request.user) is (holder == "svc")


def test_the_touch_is_a_conditional_update(alice):
    """Two requests that both loaded a stale value: only one UPDATE changes the row."""
    from identity_app.authentication import token_touch

    token, _ = token_issue(user=alice)
    stale = timezone.now() - timedelta(minutes=5)
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=stale)
    first, second = ApiToken.objects.get(pk=token.pk), ApiToken.objects.get(pk=token.pk)
    now = timezone.now()
    token_touch(first, now=now)
    token_touch(second, now=now + timedelta(seconds=1))
    assert ApiToken.objects.get(pk=token.pk).last_used_at == now


def test_create_shows_the_key_once_and_stores_only_its_hash(api, alice):
    client = api(alice)
    response = client.post(TOKENS, {"name": "laptop", "expires_in_days": 7}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    key = body["key"]
    assert response["Cache-Control"] == "no-store"
    token = ApiToken.objects.get(pk=body["id"])
    assert token.key_hash == hash_token(key) and key not in (token.key_hash, token.prefix, token.name)
    assert key.startswith(token.prefix) and len(token.prefix) < len(key) // 3
    assert timedelta(days=6, hours=23) < token.expires_at - timezone.now() <= timedelta(days=7)
    assert body["state"] == "active" and body["name"] == "laptop" and body["only_users"] is None
    # Never again: not in the list, not in the detail.
    assert key not in client.get(TOKENS).content.decode()
    assert "key" not in client.get(f"{TOKENS}/{token.pk}").json()
    assert works(key)


@pytest.mark.parametrize(
    "body",
    [
        {"expires_in_days": 0},
        {"expires_in_days": 366},
        {"expires_in_days": "30"},
        {"expires_in_days": None},
        {"name": "x" * 101},
        {"only_projects": []},
        {"key": "mk_chosen"},
    ],
)
def test_bad_token_input_is_400_and_creates_nothing(api, alice, bob, body):
    client = api(alice)
    before = ApiToken.objects.count()
    response = client.post(TOKENS, body, format="json")
    assert response.status_code == 400, response.content
    assert ApiToken.objects.count() == before


def test_limits_on_a_users_own_token_are_403_and_create_nothing(api, alice, bob):
    before = ApiToken.objects.count()
    response = api(alice).post(TOKENS, {"only_users": ["bob"]}, format="json")  # not a service principal
    assert response.status_code == 403 and response.json()["error"]["code"] == "limits_not_allowed"
    assert ApiToken.objects.count() == before + 1  # the client's own


def test_the_list_shows_only_my_tokens(api, alice, bob):
    mine = api(alice)
    token_issue(user=alice, name="second")
    bobs, _ = token_issue(user=bob, name="bob's")
    listed = mine.get(TOKENS).json()
    assert listed["count"] == 2
    assert {t["name"] for t in listed["results"]} == {"", "second"}
    assert all("key" not in t for t in listed["results"])
    # Another user's token id is 404 on every route, and it still works afterwards.
    assert mine.get(f"{TOKENS}/{bobs.pk}").status_code == 404
    assert mine.delete(f"{TOKENS}/{bobs.pk}").status_code == 404
    assert mine.post(f"{TOKENS}/{bobs.pk}/rotate").status_code == 404
    assert mine.get(f"{TOKENS}/999999").status_code == 404
    bobs.refresh_from_db()
    assert bobs.revoked_at is None and ApiToken.objects.filter(user=bob).count() == 1


def test_revoke_stops_the_key_and_keeps_the_row(api, alice):
    client = api(alice)
    other, other_key = token_issue(user=alice, name="ci")
    assert client.delete(f"{TOKENS}/{other.pk}").status_code == 204
    assert not works(other_key)
    listed = {t["id"]: t for t in client.get(TOKENS).json()["results"]}
    assert listed[other.pk]["state"] == "revoked" and listed[other.pk]["revoked_at"]
    assert client.delete(f"{TOKENS}/{other.pk}").status_code == 204  # idempotent


def test_rotate_replaces_the_key_and_keeps_name_limits_and_lifetime(api, svc, alice):
    old, old_key = token_issue(user=svc, name="bot", expires_in_days=30, only_users=["alice"])
    response = api(svc).post(f"{TOKENS}/{old.pk}/rotate")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["id"] != old.pk and body["name"] == "bot" and body["only_users"] == ["alice"]
    new = ApiToken.objects.get(pk=body["id"])
    assert new.only_user_ids == [alice.pk] and new.key_hash == hash_token(body["key"])
    assert timedelta(days=29, hours=23) < new.expires_at - timezone.now() <= timedelta(days=30)
    assert not works(old_key) and works(body["key"])
    # A revoked (or expired) token cannot be rotated back to life.
    again = api(svc).post(f"{TOKENS}/{old.pk}/rotate")
    assert again.status_code == 409 and again.json()["error"]["code"] == "token_not_active"


def test_a_token_can_rotate_itself(alice):
    token, key = token_issue(user=alice)
    response = client_for(key).post(f"{TOKENS}/{token.pk}/rotate")
    assert response.status_code == 201
    assert not works(key) and works(response.json()["key"])


def test_a_limited_token_sees_only_itself_and_cannot_create_tokens(svc, alice):
    wide, _ = token_issue(user=svc, name="wide")
    limited, key = token_issue(user=svc, name="limited", only_users=["alice"])
    client = client_for(key)
    assert [t["id"] for t in client.get(TOKENS).json()["results"]] == [limited.pk]
    assert client.get(f"{TOKENS}/{wide.pk}").status_code == 404
    assert client.post(f"{TOKENS}/{wide.pk}/rotate").status_code == 404
    assert client.delete(f"{TOKENS}/{wide.pk}").status_code == 404
    response = client.post(TOKENS, {"name": "escape"}, format="json")
    assert response.status_code == 403
    assert sorted(ApiToken.objects.filter(revoked_at__isnull=True).values_list("name", flat=True)) == [
        "limited",
        "wide",
    ]
    # Rotating itself keeps the limit.
    rotated = client.post(f"{TOKENS}/{limited.pk}/rotate").json()
    assert rotated["only_users"] == ["alice"]


def test_a_service_principal_creates_a_limited_token(api, svc, alice, project):
    response = api(svc).post(
        TOKENS, {"name": "apollo bot", "only_users": ["alice"], "only_projects": [project.pk]}, format="json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["only_users"] == ["alice"] and body["only_projects"] == [project.pk]
    token = ApiToken.objects.get(pk=body["id"])
    assert token.only_user_ids == [alice.pk] and token.only_project_ids == [project.pk]


@pytest.mark.parametrize(
    ("limits", "code"),
    [({"only_users": ["ghost"]}, "unknown_user"), ({"only_projects": ["prj_nope"]}, "unknown_project")],
)
def test_limits_name_existing_users_and_projects(api, svc, limits, code):
    response = api(svc).post(TOKENS, limits, format="json")
    assert response.status_code == 404 and response.json()["error"]["code"] == code
    assert ApiToken.objects.filter(user=svc).count() == 1  # the client's own


def test_anonymous_gets_401(db):
    assert APIClient().get(TOKENS).status_code == 401
    assert APIClient().post(TOKENS, {}, format="json").status_code == 401
