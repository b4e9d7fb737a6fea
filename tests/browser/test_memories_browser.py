"""A real browser (headless Chromium) logs in, creates, corrects and forgets a memory."""

import os

import pytest
from django.db import connections
from django.urls import reverse
from playwright.sync_api import sync_playwright

from memory_app.memories.models import Memory, Status, Tier
from tests.factories import UserFactory, UserMemoryFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PASSWORD = "pw-for-tests-123"


@pytest.fixture
def page(monkeypatch):
    # Playwright's sync API runs an event loop in this thread; the ORM calls in these tests
    # are plain synchronous test code, not async code. Scoped to the test, never global.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"), args=CHROMIUM_ARGS
        )
        try:
            context = browser.new_context()
            page = context.new_page()
            page.set_default_timeout(15000)
            yield page
        finally:
            browser.close()
            # While Playwright's loop runs, the ORM keeps a separate connection for this
            # context; close it here, or the test database cannot be dropped at the end.
            connections.close_all()


def test_login_create_correct_forget(page, live_server):
    carol = UserFactory(username="carol", password=PASSWORD)
    UserFactory(username="dave", password=PASSWORD)

    # Log in; the login page sends us home.
    page.goto(live_server.url + reverse("web:memory_home_items") + "?source=user")
    page.fill("input[name=username]", "carol")
    page.fill("input[name=password]", PASSWORD)
    page.click("main form button[type=submit]")  # not the header's language buttons
    page.wait_for_url(live_server.url + reverse("web:memory_home_items") + "?source=user")

    # Create.
    page.select_option("#create-memory select[name=kind]", "preference")
    page.fill("#create-memory textarea[name=content]", "Prefers answers in French")
    page.click("#create-memory button[type=submit]")
    page.wait_for_selector("text=Memory saved.")
    original = Memory.objects.get()
    assert (original.scope_type, original.owner, original.kind, original.content, original.status) == (
        Tier.USER,
        carol,
        "preference",
        "Prefers answers in French",
        Status.ACTIVE,
    )
    assert page.locator("tr.memory-row").count() == 1

    # Correct: the form shows the current text; saving lands on the new version with its chain.
    page.click(f"#item-{original.pk} >> text=Correct")
    assert page.input_value("#correct-memory textarea[name=content]") == "Prefers answers in French"
    page.fill("#correct-memory textarea[name=content]", "Prefers answers in Italian")
    page.click("#correct-memory button[type=submit]")
    page.wait_for_selector("text=Memory corrected.")
    original.refresh_from_db()
    corrected = Memory.objects.get(status=Status.ACTIVE)
    assert (original.status, original.superseded_by_id) == (Status.SUPERSEDED, corrected.pk)
    assert corrected.content == "Prefers answers in Italian"
    chain = page.locator("li.chain-item")
    assert chain.count() == 2
    assert "Prefers answers in French" in chain.nth(0).inner_text()
    assert chain.nth(0).get_attribute("data-status") == Status.SUPERSEDED
    assert "Prefers answers in Italian" in chain.nth(1).inner_text()
    assert chain.nth(1).get_attribute("data-status") == Status.ACTIVE

    # The list shows only the active version by default.
    page.goto(live_server.url + reverse("web:memory_home_items") + "?source=user")
    assert page.locator("tr.memory-row").count() == 1
    assert "Italian" in page.locator("tr.memory-row").inner_text()

    # Forget: a confirmation page first, which changes nothing.
    page.click(f"#item-{corrected.pk} >> text=Forget")
    page.wait_for_selector("text=Forget this memory?")
    assert Memory.objects.count() == 2
    page.click("#forget-memory button[type=submit]")
    page.wait_for_selector("text=Forgot 2 memories.")
    assert not Memory.objects.exists()
    assert page.locator("tr.memory-row").count() == 0


def test_other_users_memory_is_not_found_in_the_browser(page, live_server):
    UserFactory(username="erin", password=PASSWORD)
    frank = UserFactory(username="frank", password=PASSWORD)
    foreign = UserMemoryFactory(owner=frank, kind="fact", content="frank only")

    page.goto(live_server.url + "/accounts/login/")
    page.fill("input[name=username]", "erin")
    page.fill("input[name=password]", PASSWORD)
    page.click("main form button[type=submit]")  # not the header's language buttons
    page.wait_for_url(live_server.url + "/")
    response = page.goto(live_server.url + reverse("web:memory_home_item_forget", args=[foreign.pk]))
    assert response.status == 404
    assert "frank only" not in page.content()
    assert Memory.objects.filter(pk=foreign.pk, status=Status.ACTIVE).exists()
