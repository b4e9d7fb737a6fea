"""First contact: the login page says what the service is and whom to ask; a user created with
``issue_token --create-user --sign-in-link`` reaches the web pages through a one-time link,
short-lived and stored only as a hash, and chooses a password there; password reset by email is
offered only when an email backend is configured."""

import io
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from identity_app.models import SignInLink
from identity_app.services import sign_in_link_issue

pytestmark = pytest.mark.django_db
NEW_PASSWORD = "a-long-new-pass-4821"


def _link_from_command(*args) -> str:
    out, err = io.StringIO(), io.StringIO()
    call_command("issue_token", *args, stdout=out, stderr=err)
    return re.search(r"https?://\S+/accounts/sign-in/\S+/", err.getvalue()).group(0)


def _path(url: str) -> str:
    return "/" + url.split("/", 3)[3]


def test_a_token_user_signs_in_once_with_the_link_and_sets_a_password(settings):
    settings.PUBLIC_BASE_URL = "https://memory.example"
    url = _link_from_command("newbie", "--create-user", "--sign-in-link")
    user = get_user_model().objects.get(username="newbie")
    assert not user.has_usable_password() and url.startswith("https://memory.example/accounts/sign-in/")
    secret = url.rstrip("/").rsplit("/", 1)[1]
    row = SignInLink.objects.get(user=user)
    assert row.secret_hash == SignInLink.hash_secret(secret) and secret not in row.secret_hash  # hashed at rest
    assert timedelta(hours=23) < row.expires_at - timezone.now() <= timedelta(hours=24)

    client = Client()
    page = client.get(_path(url))  # a preview of the link uses nothing up
    assert page.status_code == 200 and SignInLink.objects.get(pk=row.pk).used_at is None
    response = client.post(_path(url))
    assert response.status_code == 302 and response["Location"] == reverse("set_password")
    assert SignInLink.objects.get(pk=row.pk).used_at is not None
    response = client.post(reverse("set_password"), {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert response.status_code == 302
    user.refresh_from_db()
    assert user.check_password(NEW_PASSWORD)
    assert client.get(reverse("web:home")).status_code == 200  # still signed in
    # Single use: the same link again signs no one in.
    other = Client()
    assert other.post(_path(url)).status_code == 404
    assert other.get(reverse("web:home")).status_code == 302


def test_expired_forged_and_replaced_links_sign_no_one_in(alice):
    _first, old_secret = sign_in_link_issue(user=alice)
    _, secret = sign_in_link_issue(user=alice)  # the newer one replaces it
    client = Client()
    assert client.post(reverse("sign_in_link", args=[old_secret])).status_code == 404
    SignInLink.objects.filter(secret_hash=SignInLink.hash_secret(secret)).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert client.post(reverse("sign_in_link", args=[secret])).status_code == 404
    assert client.post(reverse("sign_in_link", args=["x" * 43])).status_code == 404
    assert client.get(reverse("web:home")).status_code == 302
    assert (
        SignInLink.objects.filter(used_at__isnull=True).count() == 0
        or not SignInLink.objects.filter(used_at__isnull=True, expires_at__gt=timezone.now()).exists()
    )


def test_set_password_without_the_old_one_needs_the_link(alice):
    client = Client()
    client.force_login(alice)  # has a usable password, came without a link
    assert client.get(reverse("set_password")).status_code == 404
    before = alice.password
    assert (
        client.post(reverse("set_password"), {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}).status_code
        == 404
    )
    alice.refresh_from_db()
    assert alice.password == before


def test_the_login_page_says_what_this_is_and_whom_to_ask(settings):
    settings.ACCOUNT_CONTACT = "ops@example.org"
    page = Client().get(reverse("login")).content.decode()
    assert "This service keeps what the AI agents working for you may remember" in page
    assert "No account yet? Ask ops@example.org." in page


def test_password_reset_only_with_an_email_backend(settings, alice):
    settings.EMAIL_BACKEND = "django.core.mail.backends.dummy.EmailBackend"
    client = Client()
    assert reverse("password_reset") not in client.get(reverse("login")).content.decode()
    assert client.get(reverse("password_reset")).status_code == 404
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    alice.email = "alice@example.org"
    alice.save(update_fields=["email"])
    assert reverse("password_reset") in client.get(reverse("login")).content.decode()
    response = client.post(reverse("password_reset"), {"email": "alice@example.org"})
    assert response.status_code == 302 and len(mail.outbox) == 1
    link = re.search(r"/accounts/reset/\S+/", mail.outbox[0].body).group(0)
    form = client.get(link, follow=True)
    assert form.status_code == 200
    response = client.post(form.redirect_chain[-1][0], {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert response.status_code == 302
    alice.refresh_from_db()
    assert alice.check_password(NEW_PASSWORD)
