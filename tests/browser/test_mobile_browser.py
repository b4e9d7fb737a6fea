"""Headless Chromium at a phone's width (390 px) and in Chinese: the header stays small, lists
keep their actions on screen, the notes history undoes a change and the language switch works.
The database and files are checked after each step; the Content-Security-Policy reports no
violation."""

import pytest
from django.urls import reverse

from identity_app.models import Profile
from memory_app.notes import services as notes_services
from memory_app.notes.models import WorkspaceChange
from memory_app.runs import tools
from tests.browser.phone import MAX_HEADER_PX, PASSWORD, PHONE, log_in, new_page, no_sideways_scroll, no_violations
from tests.factories import UserFactory, UserMemoryFactory
from tests.memory_app.runs.helpers import memory_path

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_memories_list_at_390_px_keeps_the_header_small_and_the_actions_on_screen(chromium, live_server):
    carol = UserFactory(username="carol", password=PASSWORD)
    for n in range(3):
        UserMemoryFactory(owner=carol, kind="preference", content=f"Prefers long answers about topic {n} " * 6)
    UserMemoryFactory(owner=carol, kind="fact", content="https://example.com/" + "a" * 120)
    page = new_page(chromium)
    log_in(page, live_server.url, "carol", next_url=reverse("web:memory_home_items") + "?source=user")

    header = page.locator("header.topbar").bounding_box()
    assert header["height"] <= MAX_HEADER_PX, header
    no_sideways_scroll(page)
    rows = page.locator("tr.memory-row")
    assert rows.count() == 4
    for i in range(rows.count()):
        for label in ("Correct", "Forget"):
            box = rows.nth(i).get_by_role("link", name=label).bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], (label, box)
    # Every link of the header is on screen, the current one included (no strip that scrolls
    # sideways); the account menu opens without a script and holds the rest.
    nav = page.locator("header.topbar nav")
    assert nav.evaluate("(el) => getComputedStyle(el).overflowX") == "visible"
    links = page.locator("header.topbar nav > a")
    assert links.count() == 4
    for i in range(links.count()):
        box = links.nth(i).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], box
    assert page.locator("header.topbar nav a[aria-current=page]").inner_text() == "Memory"
    page.locator("header.topbar .account-menu summary").click()
    tokens = page.locator("header.topbar .account-menu a", has_text="API tokens")
    box = tokens.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], box
    tokens.click()
    page.wait_for_url(live_server.url + reverse("web:tokens"))
    assert page.locator("header.topbar .account-menu summary[aria-current=page]").count() == 1
    no_sideways_scroll(page)

    for name in ("web:workspace", "web:workspace_history", "web:profile", "web:conversations", "web:projects"):
        page.goto(live_server.url + reverse(name))
        assert page.locator("header.topbar").bounding_box()["height"] <= MAX_HEADER_PX, name
        no_sideways_scroll(page)
    no_violations(page)


def test_undo_an_agent_note_from_the_history_page_on_a_phone(chromium, live_server, settings, tmp_path, make_run):
    settings.WORKSPACE_ROOT = tmp_path
    dana = UserFactory(username="dana", password=PASSWORD)
    notes_services.workspace_file_write(user=dana, name="MEMORY.md", content="- likes tea\n")
    handle = make_run(dana)
    tools.remember_memory(credential=handle.credential, content="Thinks the moon is made of cheese")
    tools.remember_memory(credential=handle.credential, content="Birthday in May")
    wrong = WorkspaceChange.objects.filter(action="append").order_by("seq").first()
    page = new_page(chromium)
    log_in(page, live_server.url, "dana", next_url=reverse("web:workspace"))

    page.click("text=See every change and undo one")
    page.wait_for_selector(f"#change-{wrong.pk}")
    card = page.locator(f"#change-{wrong.pk}")
    assert "Thinks the moon is made of cheese" in card.inner_text()
    assert handle.id in card.inner_text()
    no_sideways_scroll(page)
    button = card.get_by_role("button", name="Undo this change")
    box = button.bounding_box()
    assert box["x"] + box["width"] <= PHONE["width"]
    page.once("dialog", lambda dialog: dialog.accept())
    button.click()
    page.wait_for_selector("text=Undone: MEMORY.md is back")

    assert memory_path(tmp_path, dana).read_text() == "- likes tea\nBirthday in May\n"
    undo = WorkspaceChange.objects.get(action="undo")
    assert (undo.reverts_id, undo.source, undo.actor_id) == (wrong.pk, "web", dana.pk)
    # The same undo again is refused with a sentence, and changes nothing.
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator(f"#change-{wrong.pk}").get_by_role("button", name="Undo this change").click()
    page.wait_for_selector("text=already undone")
    assert memory_path(tmp_path, dana).read_text() == "- likes tea\nBirthday in May\n"
    no_violations(page)


def test_chinese_from_the_browser_and_the_language_switch(chromium, live_server):
    UserFactory(username="erin", password=PASSWORD)
    page = new_page(chromium, locale="zh-CN")
    page.goto(live_server.url + reverse("login"))
    assert page.locator("h1").inner_text() == "登录"
    assert page.get_attribute("html", "lang") == "zh-Hans"
    log_in(page, live_server.url, "erin", next_url=reverse("web:memory_home_items") + "?source=user")
    assert page.locator("header.topbar nav a[aria-current=page]").inner_text() == "记忆"
    assert page.locator(".onboarding").inner_text().startswith("还没有关于你的任何记忆")

    page.locator("footer form.language button[lang=en]").click()
    page.wait_for_url(live_server.url + reverse("web:memory_home_items") + "?source=user")
    assert page.locator("header.topbar nav a[aria-current=page]").inner_text() == "Memory"
    assert Profile.objects.get(user__username="erin").language == "en"
    page.locator("footer form.language button[lang=zh-Hans]").click()
    page.wait_for_selector("text=记住一件事")
    assert Profile.objects.get(user__username="erin").language == "zh-hans"
    no_violations(page)
