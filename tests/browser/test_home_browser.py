"""A real browser (headless Chromium, under the Content-Security-Policy) on the memory home:
search across sources, bulk-forget chat items bound to the user, and forget everything behind
the typed confirmation; the database is checked after each step."""

import os
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connections
from django.urls import reverse
from playwright.sync_api import expect, sync_playwright

from identity_app.services import user_grant_service
from memory_app.memories import services as memory_services
from memory_app.memories.models import Memory
from memory_app.scoped.services import scoped_item_create
from memory_app.search.models import SearchDocument
from tests.factories import ChatBindingFactory, UserFactory, UserMemoryFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
PASSWORD = "pw-for-tests-123"
CHAT = "milky:private:10001"
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile}:${e.lineNumber}`);
});
"""


@pytest.fixture
def page(monkeypatch):
    # Playwright's sync API runs an event loop in this thread; the ORM calls in these tests
    # are plain synchronous test code. Scoped to the test, never global.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as p:
        chromium = p.chromium.launch(
            executable_path=os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"), args=CHROMIUM_ARGS
        )
        try:
            context = chromium.new_context()
            context.add_init_script(RECORD_VIOLATIONS)
            page = context.new_page()
            page.set_default_timeout(20000)
            console: list[str] = []
            page.on("console", lambda message: console.append(message.text))
            page.console_lines = console
            yield page
        finally:
            chromium.close()
            connections.close_all()


def assert_no_csp_violations(page):
    violations = page.evaluate("window.__cspViolations")
    reported = [line for line in page.console_lines if "content security policy" in line.lower()]
    assert violations == [] and reported == [], (violations, reported)


def chat_ids() -> list[str]:
    return sorted(Memory.objects.filter(scope_id=CHAT).values_list("pk", flat=True))


def test_home_search_bulk_forget_and_forget_everything(page, live_server):
    carol = UserFactory(username="carol", password=PASSWORD)
    svc = UserFactory(username="bot")
    user_grant_service(user=svc)
    ChatBindingFactory(user=carol, chat_key=CHAT)
    passport, _ = scoped_item_create(
        actor=svc, session_id=CHAT, kind="task", content="Remind Carol to renew her passport in June."
    )
    seats, _ = scoped_item_create(actor=svc, session_id=CHAT, kind="preference", content="Prefers aisle seats.")
    tea, _ = scoped_item_create(actor=svc, session_id=CHAT, kind="fact", content="Drinks oolong tea.")
    UserMemoryFactory(owner=carol, content="Answers in French, please", created_by=carol)
    memory_services.memory_create(actor=carol, tier="user", kind="fact", content="Lives in Lyon")
    notes = Path(settings.WORKSPACE_ROOT) / str(carol.pk) / "agents" / "MEMORY.md"
    notes.parent.mkdir(parents=True, exist_ok=True)
    notes.write_text("- Likes trains\n", encoding="utf-8")
    dave = UserFactory(username="dave")
    daves = UserMemoryFactory(owner=dave, content="Dave's own memory")

    # Log in: the site root is the memory home.
    page.goto(live_server.url + reverse("login"))
    page.fill("input[name=username]", "carol")
    page.fill("input[name=password]", PASSWORD)
    page.click("main form button[type=submit]")  # not the header's language buttons
    page.wait_for_url(live_server.url + "/")
    chat_section = page.locator(f'li.source[data-source="chat:{CHAT}"]')
    expect(chat_section.locator(".count")).to_have_text("3")
    expect(page.locator('li.source[data-source="user"] .count')).to_have_text("2")
    expect(page.locator('li.source[data-source="notes"]')).to_contain_text("1 line")

    # One search across all of it: the chat's item is found and its word marked.
    page.fill("#home-search input[name=q]", "passport")
    page.click("#home-search button[type=submit]")
    hit = page.locator(f'li.home-hit[data-memory-id="{passport.pk}"]')
    expect(hit.locator("mark")).to_have_text("passport")
    assert_no_csp_violations(page)

    # The chat's items: select all (a script), leave one out, forget the rest after a look.
    chat_section.locator("h3 a").click()
    expect(page.locator("tr.home-item")).to_have_count(3)
    page.check("thead input[data-select-all=ids]")  # the table header box (wide screens)
    for item in (passport, seats, tea):
        expect(page.locator(f'input[name=ids][value="{item.pk}"]')).to_be_checked()
    page.uncheck(f'input[name=ids][value="{tea.pk}"]')
    page.click("#forget-selected")
    expect(page.locator("h1")).to_have_text("Forget 2 memories?")
    assert chat_ids() == sorted([passport.pk, seats.pk, tea.pk])  # looking changes nothing
    page.click("#forget-selected-confirm button[type=submit]")
    expect(page.locator(".messages")).to_contain_text("Forgot 2 memories.")
    assert chat_ids() == [tea.pk]
    assert not SearchDocument.objects.filter(source="memory", ref__in=[passport.pk, seats.pk]).exists()
    expect(page.locator("tr.home-item")).to_have_count(1)
    assert_no_csp_violations(page)

    # Forget everything: the button waits for the typed word, and a wrong word changes nothing.
    page.goto(live_server.url + "/")
    page.click("#forget-everything")
    button = page.locator("#forget-all button[type=submit]")
    expect(button).to_be_disabled()
    page.fill("#forget-all input[name=confirm]", "forget")
    expect(button).to_be_disabled()
    assert Memory.objects.filter(owner=carol).count() == 2 and chat_ids() == [tea.pk]
    page.fill("#forget-all input[name=confirm]", "FORGET")
    expect(button).to_be_enabled()
    button.click()
    page.wait_for_url(live_server.url + "/")
    expect(page.locator(".messages")).to_contain_text("Forgot 3 memories.")
    assert not Memory.objects.filter(owner=carol).exists()
    assert chat_ids() == []
    assert not notes.exists()
    assert not SearchDocument.objects.filter(scope__key__in=[f"user:{carol.pk}", f"chat:{CHAT}"]).exists()
    assert Memory.objects.filter(pk=daves.pk).exists()
    expect(page.locator(f'li.source[data-source="chat:{CHAT}"] .count')).to_have_text("0")
    assert_no_csp_violations(page)


def test_home_pages_fit_a_small_screen(page, live_server):
    """At 390 px nothing scrolls sideways and the item actions stay in view."""
    dora = UserFactory(username="dora", password=PASSWORD)
    bot = UserFactory(username="bot2")
    user_grant_service(user=bot)
    ChatBindingFactory(user=dora, chat_key=CHAT)
    item, _ = scoped_item_create(
        actor=bot, session_id=CHAT, kind="task", content="Remind Dora to renew the passport " + "soon " * 30
    )
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(live_server.url + reverse("login"))
    page.fill("input[name=username]", "dora")
    page.fill("input[name=password]", PASSWORD)
    page.click("main form button[type=submit]")
    page.wait_for_url(live_server.url + "/")
    chat_items = f"{reverse('web:memory_home_items')}?source=chat:{CHAT}"
    for path in ("/?q=passport", chat_items, reverse("web:memory_home_item", args=[item.pk]), "/memory/forget-all/"):
        page.goto(live_server.url + path)
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, (path, overflow)
    page.goto(live_server.url + chat_items)
    forget = page.locator(f"#item-{item.pk} >> text=Forget")
    box = forget.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
    assert_no_csp_violations(page)
