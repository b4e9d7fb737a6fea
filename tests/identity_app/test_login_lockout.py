"""Brute-force protection of the web and admin logins: after the failure limit for one username
from one address, even the right password is refused, with a clear message, until the
cool-off has passed."""

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.test import Client

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "pw-for-tests-123"
WEB_LOGIN = "/accounts/login/"
ADMIN_LOGIN = "/admin/login/?next=/admin/"
LOCKED = "Too many failed login attempts"


def login(client, url, username, password, **extra):
    return client.post(url, {"username": username, "password": password}, **extra)


def logged_in(client) -> bool:
    return "_auth_user_id" in client.session


@pytest.fixture
def carol(db):
    return UserFactory(username="carol", password=PASSWORD)


@pytest.fixture
def staff(db):
    return UserFactory(username="root", password=PASSWORD, is_staff=True, is_superuser=True)


@pytest.mark.parametrize(("url", "who"), [(WEB_LOGIN, "carol"), (ADMIN_LOGIN, "staff")])
def test_fifty_wrong_passwords_then_the_right_one_is_refused_with_a_message(url, who, request):
    user = request.getfixturevalue(who)
    client = Client()
    for i in range(50):
        response = login(client, url, user.username, f"wrong-{i}")
        assert response.status_code in (200, 429)
    assert AccessAttempt.objects.filter(username=user.username).exists()

    response = login(client, url, user.username, PASSWORD)
    assert response.status_code == 429
    page = response.content.decode()
    assert LOCKED in page and "15 minutes" in page
    assert 'name="password"' in page  # still the login page, with its form
    assert not logged_in(client)


def test_the_message_appears_once_the_limit_is_reached(carol):
    client = Client()
    for _ in range(4):
        response = login(client, WEB_LOGIN, "carol", "wrong")
        assert response.status_code == 200
        assert LOCKED not in response.content.decode()
    response = login(client, WEB_LOGIN, "carol", "wrong")
    assert response.status_code == 429
    assert LOCKED in response.content.decode()


def test_a_success_resets_the_count(carol):
    client = Client()
    for _ in range(4):
        login(client, WEB_LOGIN, "carol", "wrong")
    assert login(client, WEB_LOGIN, "carol", PASSWORD).status_code == 302
    assert logged_in(client)
    client.logout()
    for _ in range(4):
        login(client, WEB_LOGIN, "carol", "wrong")
    assert login(client, WEB_LOGIN, "carol", PASSWORD).status_code == 302
    assert logged_in(client)


def test_other_users_and_other_addresses_are_not_locked(carol, staff):
    attacker = Client()
    for _ in range(10):
        login(attacker, WEB_LOGIN, "carol", "wrong")
    assert login(attacker, WEB_LOGIN, "carol", PASSWORD).status_code == 429

    same_address = Client()
    assert login(same_address, WEB_LOGIN, "root", PASSWORD).status_code == 302
    assert login(Client(), ADMIN_LOGIN, "root", PASSWORD).status_code == 302

    elsewhere = Client(REMOTE_ADDR="192.0.2.44")
    assert login(elsewhere, WEB_LOGIN, "carol", PASSWORD).status_code == 302
    assert logged_in(elsewhere)


def test_the_lockout_expires_after_the_cool_off(carol, settings):
    client = Client()
    for _ in range(6):
        login(client, WEB_LOGIN, "carol", "wrong")
    assert login(client, WEB_LOGIN, "carol", PASSWORD).status_code == 429

    # Let the cool-off pass: the last failure is now older than LOGIN_COOLOFF_MINUTES.
    passed = settings.AXES_COOLOFF_TIME + timedelta(seconds=1)
    for attempt in AccessAttempt.objects.filter(username="carol"):
        AccessAttempt.objects.filter(pk=attempt.pk).update(attempt_time=attempt.attempt_time - passed)
    assert login(client, WEB_LOGIN, "carol", PASSWORD).status_code == 302
    assert logged_in(client)


def test_the_failure_limit_is_configurable(carol, settings):
    settings.AXES_FAILURE_LIMIT = 2
    client = Client()
    login(client, WEB_LOGIN, "carol", "wrong")
    assert login(client, WEB_LOGIN, "carol", "wrong").status_code == 429
    assert login(client, WEB_LOGIN, "carol", PASSWORD).status_code == 429


def test_a_wrong_password_below_the_limit_keeps_the_usual_message(carol):
    response = login(Client(), WEB_LOGIN, "carol", "wrong")
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()
