"""A session that ends while someone types does not lose their text (static script, the text
kept in the browser only): back in the form after login, for that user only, and a notes-file
draft keeps the version it was typed on, so saving it cannot overwrite a newer file."""

import pytest
from django.contrib.sessions.models import Session
from django.urls import reverse

from memory_app.memories.models import Memory, Status
from memory_app.notes import services as notes_services
from tests.browser.phone import PASSWORD, log_in, new_page, no_violations
from tests.factories import UserFactory
from tests.memory_app.runs.helpers import memory_path

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _end_session_and_submit(page, selector):
    Session.objects.all().delete()  # the session ends while the form is open
    page.click(selector)
    page.wait_for_selector("text=Your session ended before your text was saved")


def test_a_memory_typed_when_the_session_ended_is_back_after_login(chromium, live_server):
    frank = UserFactory(username="frank", password=PASSWORD)
    page = new_page(chromium)
    log_in(page, live_server.url, "frank", next_url=reverse("web:memory_home_items") + "?source=user")
    assert "Nothing is remembered about you yet" in page.locator(".onboarding").inner_text()
    page.select_option("#create-memory select[name=kind]", "preference")
    page.fill("#create-memory textarea[name=content]", "Prefers the window seat on night trains")
    _end_session_and_submit(page, "#create-memory button[type=submit]")
    assert not Memory.objects.exists()
    page.fill("input[name=username]", "frank")
    page.fill("input[name=password]", PASSWORD)
    page.click("form.card button[type=submit]")
    page.wait_for_url(live_server.url + reverse("web:memory_home_items") + "?source=user")
    assert page.input_value("#create-memory textarea[name=content]") == "Prefers the window seat on night trains"
    assert page.input_value("#create-memory select[name=kind]") == "preference"
    assert not Memory.objects.exists()

    page.click("#create-memory button[type=submit]")
    page.wait_for_selector("text=Memory saved.")
    saved = Memory.objects.get()
    assert (saved.owner, saved.kind, saved.content, saved.status) == (
        frank,
        "preference",
        "Prefers the window seat on night trains",
        Status.ACTIVE,
    )
    no_violations(page)


def test_a_draft_never_comes_back_for_another_user(chromium, live_server):
    UserFactory(username="gina", password=PASSWORD)
    UserFactory(username="hank", password=PASSWORD)
    page = new_page(chromium)
    log_in(page, live_server.url, "gina", next_url=reverse("web:memory_home_items") + "?source=user")
    page.fill("#create-memory textarea[name=content]", "Gina's private note")
    _end_session_and_submit(page, "#create-memory button[type=submit]")

    page.fill("input[name=username]", "hank")
    page.fill("input[name=password]", PASSWORD)
    page.click("form.card button[type=submit]")
    page.wait_for_url(live_server.url + reverse("web:memory_home_items") + "?source=user")
    assert page.input_value("#create-memory textarea[name=content]") == ""
    assert page.locator(".draft-restored").count() == 0
    assert page.evaluate("Object.keys(localStorage).filter((k) => k.startsWith('memory-draft:'))") == []
    assert not Memory.objects.exists()


def test_a_notes_draft_keeps_the_version_it_was_typed_on(chromium, live_server, settings, tmp_path):
    settings.WORKSPACE_ROOT = tmp_path
    ivy = UserFactory(username="ivy", password=PASSWORD)
    notes_services.workspace_file_write(user=ivy, name="USER.md", content="Name: Ivy\n")
    page = new_page(chromium)
    log_in(page, live_server.url, "ivy", next_url=reverse("web:workspace") + "?name=USER.md")
    page.fill("textarea#content", "Name: Ivy\nCity: Lyon\n")
    _end_session_and_submit(page, "#workspace-form button[value=save]")
    notes_services.workspace_file_write(user=ivy, name="USER.md", content="Name: Ivy B.\n")  # meanwhile

    page.fill("input[name=username]", "ivy")
    page.fill("input[name=password]", PASSWORD)
    page.click("form.card button[type=submit]")
    page.wait_for_url(live_server.url + reverse("web:workspace") + "?name=USER.md")
    assert page.input_value("textarea#content") == "Name: Ivy\nCity: Lyon\n"
    page.wait_for_selector("text=Your text is back in the editor")
    page.click("#workspace-form button[value=save]")
    page.wait_for_selector("text=was changed since you opened it")
    assert memory_path(tmp_path, ivy, "USER.md").read_text() == "Name: Ivy B.\n"
    assert page.input_value("textarea#unsaved") == "Name: Ivy\nCity: Lyon\n"
    no_violations(page)
