"""The memory home's flows in headless Chromium at 1280 and 390 px, the database (and files)
checked after each step, and neither sideways scrolling nor a Content-Security-Policy
violation on any page.

Where another browser test already walks a flow at one width, this file walks it at the other:
bulk forget and "forget everything" (tests/browser/test_home_browser.py, 1280 px) here at
390 px; the notes file's undo and the language switch (tests/browser/test_mobile_browser.py,
390 px) here at 1280 px. The rest runs at both widths. One browser serves the whole file (``chromium``, tests/browser/conftest.py)."""

import json

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from identity_app.models import Profile
from identity_app.services import user_grant_service
from memory_app.automemory.models import AutoMemorySettings
from memory_app.memories import services as memory_services
from memory_app.memories.models import Memory, Status, Tier
from memory_app.notes import services as notes_services
from memory_app.notes.models import UserSettings, WorkspaceChange
from memory_app.runs import tools
from memory_app.scoped.services import scoped_item_create
from memory_app.search.models import SearchDocument
from memory_app.threads import services as thread_services
from memory_app.threads.models import Conversation
from tests.browser.phone import PASSWORD, PHONE, RECORD_VIOLATIONS, log_in, no_violations
from tests.factories import ChatBindingFactory, UserFactory, UserMemoryFactory
from tests.memory_app.runs.helpers import memory_path

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DESKTOP = {"width": 1280, "height": 800}
BOTH = [pytest.param(DESKTOP, id="1280px"), pytest.param(PHONE, id="390px")]
CHAT = "milky:private:10001"
OTHER_CHAT = "milky:private:20002"


@pytest.fixture
def open_page(chromium):
    """``open_page(viewport, locale=...)`` → a page in a fresh context (own cookies), closed
    after the test (the ``chromium`` fixture)."""

    def make(viewport, *, locale="en-US"):
        context = chromium.new_context(viewport=viewport, locale=locale, accept_downloads=True)
        context.add_init_script(RECORD_VIOLATIONS)
        page = context.new_page()
        page.set_default_timeout(20000)
        return page

    return make


def fits(page):
    """Nothing scrolls sideways, and no policy violation so far."""
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, (page.url, overflow)
    no_violations(page)


def in_view(page, locator):
    box = locator.bounding_box()
    width = page.viewport_size["width"]
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, box


def service_principal(username="bot"):
    svc = UserFactory(username=username)
    user_grant_service(user=svc)
    return svc


def chat_rows(key=CHAT) -> list[tuple[str, str, str]]:
    return sorted(Memory.objects.filter(scope_type=Tier.CHAT, scope_id=key).values_list("content", "status", "pk"))


@pytest.mark.parametrize("viewport", BOTH)
def test_search_then_correct_and_forget_a_chat_item_bound_to_me(open_page, live_server, viewport):
    carol = UserFactory(username="carol", password=PASSWORD)
    bot = service_principal()
    ChatBindingFactory(user=carol, chat_key=CHAT)
    ChatBindingFactory(user=UserFactory(username="dave"), chat_key=OTHER_CHAT)
    passport, _ = scoped_item_create(
        actor=bot, session_id=CHAT, kind="task", content="Remind Carol to renew her passport in June."
    )
    seats, _ = scoped_item_create(actor=bot, session_id=CHAT, kind="preference", content="Prefers aisle seats.")
    daves, _ = scoped_item_create(actor=bot, session_id=OTHER_CHAT, kind="task", content="Dave's passport is blue.")
    page = open_page(viewport)
    log_in(page, live_server.url, "carol")

    # One search across everything finds the chat's item, and nothing of dave's chat.
    page.fill("#home-search input[name=q]", "passport")
    page.click("#home-search button[type=submit]")
    hit = page.locator(f'li.home-hit[data-memory-id="{passport.pk}"]')
    expect(hit.locator("mark")).to_have_text("passport")
    expect(page.locator("li.home-hit")).to_have_count(1)
    assert "blue" not in page.content()
    fits(page)

    # Correct it from its page: a new version in the same chat, the old one superseded.
    hit.locator("a").first.click()
    page.wait_for_url(live_server.url + reverse("web:memory_home_item", args=[passport.pk]))
    correct = page.locator("#item-actions").get_by_role("link", name="Correct")
    in_view(page, correct)
    fits(page)
    correct.click()
    field = page.locator("#correct-memory textarea[name=content]")
    expect(field).to_have_value(passport.content)
    fits(page)
    field.fill("Remind Carol to renew her passport in July.")
    page.click("#correct-memory button[type=submit]")
    expect(page.locator(".messages")).to_contain_text("Memory corrected.")
    passport.refresh_from_db()
    new = Memory.objects.get(pk=passport.superseded_by_id)
    assert passport.status == Status.SUPERSEDED
    assert (new.scope_type, new.scope_id, new.status, new.content) == (
        Tier.CHAT,
        CHAT,
        Status.ACTIVE,
        "Remind Carol to renew her passport in July.",
    )
    assert page.url == live_server.url + reverse("web:memory_home_item", args=[new.pk])
    expect(page.locator("pre.memory-content")).to_have_text(new.content)
    fits(page)

    # Forget the new version: a look first changes nothing; then both versions go, with their
    # search entries, and the other item of the chat stays.
    page.locator("#item-actions").get_by_role("link", name="Forget").click()
    expect(page.locator("h1")).to_have_text("Forget this memory?")
    expect(page.locator("#forget-memory")).to_contain_text("1 older version")
    assert len(chat_rows()) == 3
    fits(page)
    in_view(page, page.locator("#forget-memory button[type=submit]"))
    page.click("#forget-memory button[type=submit]")
    expect(page.locator(".messages")).to_contain_text("Forgot 2 memories.")
    assert chat_rows() == [("Prefers aisle seats.", Status.ACTIVE, seats.pk)]
    assert not SearchDocument.objects.filter(source="memory", ref__in=[passport.pk, new.pk]).exists()
    assert Memory.objects.filter(pk=daves.pk, status=Status.ACTIVE).exists()
    expect(page.locator("tr.home-item")).to_have_count(1)
    fits(page)


def test_bulk_forget_and_forget_everything_at_390_px(open_page, live_server, workspace_root):
    erin = UserFactory(username="erin", password=PASSWORD)
    bot = service_principal()
    ChatBindingFactory(user=erin, chat_key=CHAT)
    made = [
        scoped_item_create(actor=bot, session_id=CHAT, kind="fact", content=text)[0]
        for text in ("Drinks oolong tea.", "Walks to work.", "Has a cat called Miso.")
    ]
    mine = UserMemoryFactory(owner=erin, content="Answers in French, please")
    notes = memory_path(workspace_root, erin)
    notes.parent.mkdir(parents=True, exist_ok=True)
    notes.write_text("- Likes trains\n", encoding="utf-8")
    fred = UserFactory(username="fred")
    freds = UserMemoryFactory(owner=fred, content="Fred's own memory")
    page = open_page(PHONE)
    log_in(page, live_server.url, "erin")
    fits(page)

    # Bulk: tick two of the three (each box on screen); the look changes nothing, the second
    # step forgets.
    page.goto(f"{live_server.url}{reverse('web:memory_home_items')}?source=chat:{CHAT}")
    expect(page.locator("tr.home-item")).to_have_count(3)
    fits(page)
    # The table header is hidden on a phone; its own "select all" box is on screen instead.
    select_all = page.locator(".select-all-narrow input[data-select-all=ids]")
    expect(select_all).to_be_visible()
    select_all.check()
    for item in made:
        expect(page.locator(f'input[name=ids][value="{item.pk}"]')).to_be_checked()
    select_all.uncheck()
    for item in made:
        expect(page.locator(f'input[name=ids][value="{item.pk}"]')).not_to_be_checked()
    for item in made[1:]:
        box = page.locator(f'input[name=ids][value="{item.pk}"]')
        in_view(page, box)
        box.check()
    expect(page.locator(f'input[name=ids][value="{made[0].pk}"]')).not_to_be_checked()
    in_view(page, page.locator("#forget-selected"))
    page.click("#forget-selected")
    expect(page.locator("h1")).to_have_text("Forget 2 memories?")
    assert len(chat_rows()) == 3
    fits(page)
    page.click("#forget-selected-confirm button[type=submit]")
    expect(page.locator(".messages")).to_contain_text("Forgot 2 memories.")
    assert [pk for _c, _s, pk in chat_rows()] == [made[0].pk]
    expect(page.locator("tr.home-item")).to_have_count(1)
    fits(page)

    # Forget everything: a wrong word keeps the button off, and sent anyway it is refused
    # by the server with a sentence; nothing is deleted.
    page.goto(live_server.url + "/")
    page.click("#forget-everything")
    button = page.locator("#forget-all button[type=submit]")
    page.fill("#forget-all input[name=confirm]", "forget")
    expect(button).to_be_disabled()
    fits(page)
    page.evaluate("document.getElementById('forget-all').submit()")
    expect(page.locator("#forget-all")).to_contain_text("Type FORGET to confirm; nothing was forgotten.")
    assert [pk for _c, _s, pk in chat_rows()] == [made[0].pk]
    assert Memory.objects.filter(pk=mine.pk).exists() and notes.exists()
    fits(page)
    page.fill("#forget-all input[name=confirm]", "FORGET")
    expect(button).to_be_enabled()
    in_view(page, button)
    button.click()
    page.wait_for_url(live_server.url + "/")
    expect(page.locator(".messages")).to_contain_text("Forgot 2 memories.")
    assert chat_rows() == [] and not Memory.objects.filter(owner=erin).exists() and not notes.exists()
    assert Memory.objects.filter(pk=freds.pk).exists()
    fits(page)


@pytest.mark.parametrize("viewport", BOTH)
def test_export_json_and_import_it_into_another_account(open_page, live_server, viewport, tmp_path):
    gina = UserFactory(username="gina", password=PASSWORD)
    hugo = UserFactory(username="hugo", password=PASSWORD)
    bot = service_principal()
    ChatBindingFactory(user=gina, chat_key=CHAT)
    scoped_item_create(actor=bot, session_id=CHAT, kind="fact", content="Gina's chat item.")
    first = memory_services.memory_create(actor=gina, tier="user", kind="fact", content="Lives in Lyon")
    memory_services.memory_supersede(actor=gina, memory_id=first.pk, tier="user", content="Lives in Lille")
    memory_services.memory_create(actor=gina, tier="user", kind="preference", content="Short answers")
    UserMemoryFactory(owner=hugo, content="Short answers")  # hugo already knows this one
    ginas = sorted(Memory.objects.filter(owner=gina).values_list("pk", "content", "status"))

    # Gina downloads her export.
    page = open_page(viewport)
    log_in(page, live_server.url, "gina")
    export = page.locator("#home-portability").get_by_role("link", name="Export (JSON)")
    in_view(page, export)
    with page.expect_download() as download:
        export.click()
    path = tmp_path / "export.json"
    download.value.save_as(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["user"]["username"] == "gina"
    assert sorted((m["content"], m["status"]) for m in data["memories"]["user"]) == sorted(
        (content, status) for _pk, content, status in ginas
    )
    assert [m["content"] for c in data["memories"]["chats"] for m in c["memories"]] == ["Gina's chat item."]
    fits(page)

    # Hugo imports it: her active memories become his, the duplicate and the old version are
    # skipped; her rows stay hers.
    page = open_page(viewport)
    log_in(page, live_server.url, "hugo")
    page.locator("#home-portability").get_by_role("link", name="Import").click()
    page.wait_for_url(live_server.url + reverse("web:memory_home_import"))
    fits(page)
    page.set_input_files("#import-memories input[name=file]", path)
    page.click("#import-memories button[type=submit]")
    report = page.locator("#import-report")
    expect(report).to_contain_text("1 memory added.")
    expect(report).to_contain_text("1 already known, skipped.")
    expect(report).to_contain_text("1 older version skipped.")
    assert sorted(Memory.objects.filter(owner=hugo).values_list("content", "scope_type", "status")) == [
        ("Lives in Lille", Tier.USER, Status.ACTIVE),
        ("Short answers", Tier.USER, Status.ACTIVE),
    ]
    assert sorted(Memory.objects.filter(owner=gina).values_list("pk", "content", "status")) == ginas
    assert [(content, status) for content, status, _pk in chat_rows()] == [("Gina's chat item.", Status.ACTIVE)]
    fits(page)

    # The same file again adds nothing.
    page.set_input_files("#import-memories input[name=file]", path)
    page.click("#import-memories button[type=submit]")
    expect(page.locator("#import-report")).to_contain_text("0 memories added.")
    assert Memory.objects.filter(owner=hugo).count() == 2
    fits(page)


def test_undo_a_notes_change_from_its_history_at_1280_px(open_page, live_server, make_run, workspace_root):
    ida = UserFactory(username="ida", password=PASSWORD)
    notes_services.workspace_file_write(user=ida, name="MEMORY.md", content="- likes tea\n")
    handle = make_run(ida)
    tools.remember_memory(credential=handle.credential, content="Thinks the moon is made of cheese")
    tools.remember_memory(credential=handle.credential, content="Birthday in May")
    wrong = WorkspaceChange.objects.filter(action="append").order_by("seq").first()
    page = open_page(DESKTOP)
    log_in(page, live_server.url, "ida", next_url=reverse("web:workspace"))

    page.click("text=See every change and undo one")
    card = page.locator(f"#change-{wrong.pk}")
    expect(card).to_contain_text("Thinks the moon is made of cheese")
    expect(card).to_contain_text(handle.id)
    fits(page)
    button = card.get_by_role("button", name="Undo this change")
    in_view(page, button)
    # Dismissing the question changes nothing.
    page.once("dialog", lambda dialog: dialog.dismiss())
    button.click()
    assert not WorkspaceChange.objects.filter(action="undo").exists()
    page.once("dialog", lambda dialog: dialog.accept())
    button.click()
    page.wait_for_selector("text=Undone: MEMORY.md is back")
    assert memory_path(workspace_root, ida).read_text() == "- likes tea\nBirthday in May\n"
    undo = WorkspaceChange.objects.get(action="undo")
    assert (undo.reverts_id, undo.source, undo.actor_id) == (wrong.pk, "web", ida.pk)
    fits(page)


def test_switch_to_chinese_and_back_at_1280_px(open_page, live_server):
    UserFactory(username="jon", password=PASSWORD)
    page = open_page(DESKTOP)  # the browser asks for English
    log_in(page, live_server.url, "jon")
    assert page.get_attribute("html", "lang") == "en"
    expect(page.locator("h1")).to_have_text("Everything agents may use about you")

    page.locator("footer form.language button[lang=zh-Hans]").click()
    page.wait_for_function("document.documentElement.lang === 'zh-Hans'")
    assert Profile.objects.get(user__username="jon").language == "zh-hans"
    expect(page.locator("header.topbar nav a[aria-current=page]")).to_have_text("记忆")
    fits(page)
    # The profile, not the browser, decides from now on: another page is Chinese too.
    page.goto(live_server.url + reverse("web:memory_home_items") + "?source=user")
    assert page.get_attribute("html", "lang") == "zh-Hans"
    fits(page)

    page.locator("footer form.language button[lang=en]").click()
    page.wait_for_function("document.documentElement.lang === 'en'")
    assert Profile.objects.get(user__username="jon").language == "en"
    expect(page.locator("header.topbar nav a[aria-current=page]")).to_have_text("Memory")
    fits(page)


@pytest.mark.parametrize("viewport", BOTH)
def test_the_switch_panel_and_a_chat_that_is_not_remembered(open_page, live_server, viewport):
    """The three switches change together on one panel; a chat is put out of memory from its
    page and back; another user's chat page is refused and left as it was."""
    gina = UserFactory(username="gina", password=PASSWORD)
    bot = service_principal()
    chat = thread_services.conversation_create(actor=bot, username="gina", title="Holiday plans")
    hank = UserFactory(username="hank")
    hanks = thread_services.conversation_create(actor=bot, username="hank", title="Hank's chat")
    page = open_page(viewport)
    log_in(page, live_server.url, "gina")

    page.goto(live_server.url + reverse("web:settings"))
    expect(page.locator("#switch-enable_memory")).to_be_checked()
    expect(page.locator("#switch-use")).not_to_be_checked()
    fits(page)
    # Each switch saves as soon as it is toggled (no Save button while scripts run) and says so.
    expect(page.locator("#memory-switches .save-button").first).to_be_hidden()
    in_view(page, page.locator("#switch-enable_memory"))
    page.uncheck("#switch-enable_memory")
    expect(page.locator(".messages")).to_contain_text("“Memory (the notes file)” is off.")
    assert UserSettings.objects.get(user=gina).enable_memory is False
    assert not AutoMemorySettings.objects.filter(user=gina, use=True).exists()
    page.check("#switch-use")
    expect(page.locator(".messages")).to_contain_text("“Use my memories in new agent tasks” is on.")
    auto = AutoMemorySettings.objects.get(user=gina)
    assert (auto.use, auto.generate) == (True, False)
    assert UserSettings.objects.get(user=gina).enable_memory is False
    page.check("#switch-generate")
    expect(page.locator(".messages")).to_contain_text("“Generate memories from my finished agent tasks” is on.")
    auto.refresh_from_db()
    assert (auto.use, auto.generate) == (True, True)
    assert not UserSettings.objects.filter(user=hank).exists()
    expect(page.locator("#switch-enable_memory")).not_to_be_checked()
    fits(page)

    page.goto(live_server.url + reverse("web:conversation_detail", args=[chat.pk]))
    button = page.locator("#conversation-memory button[type=submit]")
    expect(button).to_have_text("Don't remember this chat")
    in_view(page, button)
    button.click()
    expect(page.locator("#conversation-memory")).to_contain_text("This chat is not remembered.")
    assert Conversation.objects.get(pk=chat.pk).no_memory is True
    fits(page)
    page.goto(live_server.url + reverse("web:settings"))
    expect(page.locator("#no-memory-chats")).to_contain_text("1 of your chats is in this mode.")
    page.goto(live_server.url + reverse("web:conversation_detail", args=[chat.pk]))
    page.locator("#conversation-memory button[type=submit]").click()
    expect(page.locator("#conversation-memory button[type=submit]")).to_have_text("Don't remember this chat")
    assert Conversation.objects.get(pk=chat.pk).no_memory is False

    response = page.goto(live_server.url + reverse("web:conversation_detail", args=[hanks.pk]))
    assert response.status == 404
    assert Conversation.objects.get(pk=hanks.pk).no_memory is False
