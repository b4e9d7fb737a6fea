import pytest

from identity_app.models import Profile

pytestmark = pytest.mark.django_db


def test_profile_get_creates_default(api, alice):
    response = api(alice).get("/api/users/me/profile")
    assert response.status_code == 200
    assert response.json()["username"] == "alice"
    assert response.json()["timezone"] == "UTC"


def test_profile_put_updates_fields(api, alice):
    client = api(alice)
    response = client.put(
        "/api/users/me/profile",
        {"display_name": "Alice", "timezone": "Europe/Berlin", "preferences": {"lang": "de"}},
        format="json",
    )
    assert response.status_code == 200, response.content
    profile = Profile.objects.get(user=alice)
    assert (profile.display_name, profile.timezone, profile.preferences) == ("Alice", "Europe/Berlin", {"lang": "de"})


@pytest.mark.parametrize(
    "preferences",
    [
        {"password": "x"},
        {"outer": {"GitHub_Token": "x"}},
        {"list": [{"deep": {"My-API_KEY": "x"}}]},
        {"Client_Secret": 1},
        {"a": {"b": {"c": {"CREDENTIALS": []}}}},
    ],
)
def test_secret_keys_in_preferences_are_rejected_and_nothing_saved(api, alice, preferences):
    client = api(alice)
    client.put("/api/users/me/profile", {"display_name": "Before"}, format="json")
    response = client.put("/api/users/me/profile", {"display_name": "After", "preferences": preferences}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"
    profile = Profile.objects.get(user=alice)
    assert profile.display_name == "Before"
    assert profile.preferences == {}


@pytest.mark.parametrize(
    "body",
    [
        {"timezone": "Mars/Olympus"},
        {"timezone": 5},
        {"preferences": ["not", "an", "object"]},
        {"display_name": "x" * 151},
        {"unknown_field": 1},
    ],
)
def test_invalid_profile_input_is_400_and_unchanged(api, alice, body):
    client = api(alice)
    client.get("/api/users/me/profile")
    response = client.put("/api/users/me/profile", body, format="json")
    assert response.status_code == 400
    assert "error" in response.json()
    assert Profile.objects.get(user=alice).timezone == "UTC"


def test_profile_requires_authentication(api, db):
    response = api().get("/api/users/me/profile")
    assert response.status_code in (401, 403)
    assert response.json()["error"]["code"] == "not_authenticated"


def test_forged_token_is_rejected(db):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token mk_forged")
    response = client.get("/api/users/me/profile")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"


@pytest.mark.parametrize("key", ["ſecret", "ｐａｓｓｗｏｒｄ", "db_ＴＯＫＥＮ", "pass\u200bword", "API\u2060_KEY"])
def test_unicode_disguised_secret_keys_are_rejected(api, alice, key):
    client = api(alice)
    client.get("/api/users/me/profile")
    response = client.put("/api/users/me/profile", {"preferences": {"nested": {key: "x"}}}, format="json")
    assert response.status_code == 400
    assert Profile.objects.get(user=alice).preferences == {}
