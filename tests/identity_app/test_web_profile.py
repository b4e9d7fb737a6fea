"""The profile page: the same rules as PUT /api/users/me/profile, shown as form errors."""

import json

import pytest
from django.urls import reverse

from identity_app.models import Profile
from tests.factories import ProfileFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def page(client, alice):
    client.force_login(alice)
    return client


def test_profile_page_shows_current_values(page, alice):
    ProfileFactory(user=alice, display_name="Alice A.", timezone="Asia/Tokyo", preferences={"lang": "ja"})
    response = page.get(reverse("web:profile"))
    assert response.status_code == 200
    assert 'value="Alice A."' in response.text and 'value="Asia/Tokyo"' in response.text
    assert "&quot;lang&quot;: &quot;ja&quot;" in response.text
    assert '<option value="Europe/Berlin">' in response.text


def test_profile_save(page, alice):
    response = page.post(
        reverse("web:profile"),
        {
            "display_name": "Alice",
            "timezone": "Europe/Berlin",
            "preferences": json.dumps({"lang": "de", "tone": {"formal": True}}),
        },
    )
    assert response.status_code == 302
    profile = Profile.objects.get(user=alice)
    assert (profile.display_name, profile.timezone, profile.preferences) == (
        "Alice",
        "Europe/Berlin",
        {"lang": "de", "tone": {"formal": True}},
    )


def test_empty_preferences_mean_an_empty_object(page, alice):
    page.post(reverse("web:profile"), {"display_name": "", "timezone": "UTC", "preferences": ""})
    assert Profile.objects.get(user=alice).preferences == {}


@pytest.mark.parametrize(
    "data, message",
    [
        ({"preferences": json.dumps({"outer": {"GitHub_Token": "x"}})}, "may not store credentials"),
        ({"preferences": json.dumps({"list": [{"My-API_KEY": 1}]})}, "may not store credentials"),
        ({"preferences": json.dumps({"Password": "x"})}, "may not store credentials"),
        ({"preferences": "{not json"}, "Not valid JSON"),
        ({"preferences": "[1, 2]"}, "must be a JSON object"),
        ({"timezone": "Mars/Olympus"}, "not a valid IANA time zone"),
        ({"timezone": ""}, "This field is required"),
        ({"display_name": "x" * 151}, "at most 150 characters"),
    ],
)
def test_invalid_profile_shows_form_error_and_saves_nothing(page, alice, data, message):
    ProfileFactory(user=alice, display_name="Before", timezone="UTC", preferences={"lang": "en"})
    form = {"display_name": "After", "timezone": "Europe/Paris", "preferences": "{}", **data}
    response = page.post(reverse("web:profile"), form)
    assert response.status_code == 400
    assert message in response.content.decode().replace("&#x27;", "'")
    assert 'class="errorlist' in response.text
    profile = Profile.objects.get(user=alice)
    assert (profile.display_name, profile.timezone, profile.preferences) == ("Before", "UTC", {"lang": "en"})
