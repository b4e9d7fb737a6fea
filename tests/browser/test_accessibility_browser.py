"""Every page of the web UI, checked by axe-core in headless Chromium: at 1280 and 390 px, in the
light and the dark colour scheme, signed out and signed in, with no serious or critical
violation. The list of pages is checked against the URL configuration, so a new page without a
visit fails here. Also the keyboard: the skip link comes first and moves focus to the content,
and the header marks the current page.

axe-core is vendored in ``tests/browser/vendor/axe-core`` (see its README for the version)."""

import json
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.conf import settings as django_settings
from django.contrib.admin.utils import quote
from django.urls import reverse

from memory_app.home.services import MAX_SELECTED
from memory_app.memories.models import Memory
from memory_app.memories.services import memory_change
from memory_app.notes.models import WorkspaceChange
from tests.browser.phone import PHONE
from tests.route_matrix import CHAT_KEY, build_world, routes, write_notes_file

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE_JS = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"
DESKTOP = {"width": 1280, "height": 900}
FAILING_IMPACTS = ("serious", "critical")

# Web routes that never answer with a page of their own: they redirect after a write, or send
# a file. Every other web route is visited below.
NOT_PAGES = {
    "healthz": "plain text for probes",
    "readyz": "plain text for probes",
    "metrics": "plain text for the metrics scraper",
    "logout": "redirects to the login page",
    "web:set_language": "redirects back",
    "web:invitation_accept": "redirects to the invitations page",
    "web:invitation_decline": "redirects to the invitations page",
    "web:project_invitation_cancel": "redirects to the members page",
    "web:workspace_history_clear": "redirects to the history page",
    "web:workspace_change_undo": "redirects to the history page",
    "web:conversation_memory": "redirects to the conversation page",
    "web:memory_home_export": "a JSON download",
    "web:my_memories": "a permanent redirect to the memory home's list",
    "web:my_memory": "a permanent redirect to the memory home's item",
    "web:my_memory_correct": "a permanent redirect to the memory home's item",
    "web:my_memory_forget": "a permanent redirect to the memory home's item",
    "web:project_memories": "a permanent redirect to the memory home's list",
    "web:project_memory": "a permanent redirect to the memory home's item",
    "web:project_memory_correct": "a permanent redirect to the memory home's item",
    "web:project_memory_forget": "a permanent redirect to the memory home's item",
}


def _get_pages(w):
    """(route, persona, url) of every page reached by a link: alice's own rows, her chat's
    items and her project Apollo; mallory for an invitation waiting for her; vera (a viewer of
    Apollo) for the 403 page."""
    project = {"project_id": w.project.pk}
    user_item = {"memory_id": w.user_memory.pk}
    run = {"run_id": w.main_run.pk}

    def at(name, kwargs=None, query=None):
        url = reverse(name, kwargs=kwargs)
        return f"{url}?{urlencode(query)}" if query else url

    chat_source = {"source": f"chat:{CHAT_KEY}"}
    project_source = {"source": f"project:{w.project.pk}"}
    return [
        ("login", None, at("login")),
        ("404", None, "/no-such-page/"),
        ("web:home", "alice", at("web:home")),
        ("web:home", "alice", at("web:home", query={"q": "allergic plush releases"})),
        ("web:memory_home_items", "alice", at("web:memory_home_items", query={"source": "user", "status": "all"})),
        ("web:memory_home_items", "alice", at("web:memory_home_items", query=chat_source)),
        ("web:memory_home_items", "alice", at("web:memory_home_items", query=project_source)),
        ("web:memory_home_reads", "alice", at("web:memory_home_reads", query={"source": "user"})),
        ("web:memory_home_reads", "alice", at("web:memory_home_reads", query=project_source)),
        ("web:memory_home_item", "alice", at("web:memory_home_item", user_item)),
        ("web:memory_home_item", "alice", at("web:memory_home_item", {"memory_id": w.chat_item.pk})),
        ("web:memory_home_item", "alice", at("web:memory_home_item", {"memory_id": w.project_memory.pk})),
        ("web:memory_home_item_correct", "alice", at("web:memory_home_item_correct", user_item)),
        ("web:memory_home_item_forget", "alice", at("web:memory_home_item_forget", user_item)),
        ("web:memory_home_item_change", "alice", at("web:memory_home_item_change", user_item)),
        ("web:memory_home_forget_undo", "alice", at("web:memory_home_forget_undo", {"undo_id": w.undo.pk})),
        ("web:connect", "alice", at("web:connect")),
        ("web:memory_home_forget_all", "alice", at("web:memory_home_forget_all")),
        ("web:memory_home_forget_all", "alice", at("web:memory_home_forget_all", query=chat_source)),
        ("web:memory_home_import", "alice", at("web:memory_home_import")),
        ("web:projects", "alice", at("web:projects")),
        ("web:project_members", "alice", at("web:project_members", project)),
        ("web:profile", "alice", at("web:profile")),
        ("web:tokens", "alice", at("web:tokens")),
        ("web:invitations", "mallory", at("web:invitations")),
        ("web:workspace", "alice", at("web:workspace")),
        ("web:workspace_history", "alice", at("web:workspace_history")),
        ("web:settings", "alice", at("web:settings")),
        ("web:conversations", "alice", at("web:conversations")),
        ("web:conversation_detail", "alice", at("web:conversation_detail", {"conversation_id": w.conversation.pk})),
        ("web:run_detail", "alice", at("web:run_detail", run)),
        ("web:run_detail", "alice", at("web:run_detail", {"run_id": w.sub_run.pk})),
        ("web:auto_memory_settings", "alice", at("web:auto_memory_settings")),
        ("web:auto_memory_log", "alice", at("web:auto_memory_log")),
        ("web:run_auto_memory_flags", "alice", at("web:run_auto_memory_flags", run)),
        ("web:chat_memories", "alice", at("web:chat_memories")),
        ("403", "vera", at("web:memory_home_item_correct", {"memory_id": w.project_memory.pk})),
        ("web:token_revoke", "alice", at("web:token_revoke", {"token_id": w.alice_token.pk})),
        # The admin pages we template or style, and a list and a change form of the stock ones.
        ("admin", "root", at("admin:index")),
        ("admin", "root", at("admin:memory_app_memory_changelist")),
        ("admin", "root", at("admin:memory_app_memory_change", {"object_id": w.user_memory.pk})),
        ("admin", "root", at("admin:memory_app_memorycandidate_change", {"object_id": w.candidate.pk})),
        (
            "admin",
            "root",
            at("admin:memory_app_memorycandidate_review", {"object_id": quote(w.candidate.pk), "decision": "approve"}),
        ),
        ("admin", "root", at("admin:memory_app_scopemigrationplan_changelist")),
        ("admin", "root", at("admin:memory_app_automemorysettings_changelist")),
        ("admin", "root", at("admin:memory_app_usersettings_changelist")),
        ("set_password", "alice", at("set_password")),
        ("sign_in_link", None, at("sign_in_link", {"secret": "made-up-secret-0123456789abcdef"})),
        ("password_reset", None, at("password_reset")),
        ("password_reset_done", None, at("password_reset_done")),
        ("password_reset_confirm", None, at("password_reset_confirm", {"uidb64": "MQ", "token": "made-up"})),
        ("password_reset_complete", None, at("password_reset_complete")),
    ]


# The pages reached by a submission, in the order _submitted_pages shows them.
SUBMITTED = (
    "web:connect",
    "web:tokens",
    "web:token_rotate",
    "web:token_revoke",
    "web:memory_home_forget_selected",
    "error page",
    "web:memory_home_import",
    "web:memory_home_forget_all",
)


def _submitted_pages(page, base_url, w):
    """The pages shown after a submission: yield (route, url) once each is on screen."""
    page.goto(base_url + reverse("web:connect"))
    page.click("#make-key button[type=submit]")
    page.wait_for_selector("#new-key")
    yield "web:connect"
    page.goto(base_url + reverse("web:tokens"))
    page.fill("#create-token input[name=name]", "ci")
    page.click("#create-token button[type=submit]")
    page.wait_for_selector("#new-key")
    yield "web:tokens"
    page.locator("a[href$='/rotate/']").first.click()
    page.click("#token-confirm button[type=submit]")
    page.wait_for_selector("#new-key h2:has-text('New key for')")
    yield "web:token_rotate"
    page.locator("a[href$='/revoke/']").first.click()
    page.click("#token-confirm button[type=submit]")
    page.wait_for_selector(".messages li")
    yield "web:token_revoke"
    page.goto(base_url + reverse("web:memory_home_items") + "?source=user")
    page.locator("input[name=ids]").first.check()
    page.click("#forget-selected")
    page.wait_for_selector("#forget-selected-confirm")
    yield "web:memory_home_forget_selected"
    # The page of a refused request (error.html): more memories selected than allowed.
    page.goto(base_url + reverse("web:memory_home_items") + "?source=user")
    page.evaluate(
        """(n) => { const form = document.querySelector('#bulk-forget');
        for (let i = 0; i < n; i++) form.insertAdjacentHTML('beforeend', `<input type=hidden name=ids value=m${i}>`); }""",
        MAX_SELECTED + 1,
    )
    page.click("#forget-selected")
    page.wait_for_selector("text=That did not work")
    yield "error page"
    page.goto(base_url + reverse("web:memory_home_import"))
    export = {
        "format": "memory-service-export",
        "version": 1,
        "memories": {"user": [{"kind": "fact", "content": "Logs trips"}]},
    }
    page.set_input_files(
        "#import-memories input[type=file]",
        files=[{"name": "export.json", "mimeType": "application/json", "buffer": json.dumps(export).encode()}],
    )
    page.click("#import-memories button[type=submit]")
    page.wait_for_selector("#import-report")
    yield "web:memory_home_import"
    page.goto(base_url + reverse("web:memory_home_forget_all"))
    page.fill("#forget-all input[name=confirm]", "not the word")
    page.evaluate("document.querySelector('#forget-all').requestSubmit()")
    page.wait_for_selector("#forget-all .errorlist, .errorlist")
    yield "web:memory_home_forget_all"


# Rules whose outcome depends on the rendering (colours, sizes, what is shown at a width); the
# rest depend on the markup alone, which is the same in every scheme and width.
RENDERING_RULES = ["color-contrast", "link-in-text-block", "scrollable-region-focusable"]
# Each page is loaded once and checked in the four combinations: the whole rule set in the
# first, the rules of the rendering in the others.
COMBINATIONS = [("light", DESKTOP), ("dark", DESKTOP), ("dark", PHONE), ("light", PHONE)]


def _axe(page, rules=None) -> list[str]:
    """axe's serious and critical violations on the page, one readable line per node."""
    options = {"resultTypes": ["violations"]}
    if rules:
        options["runOnly"] = {"type": "rule", "values": rules}
    result = page.evaluate("async (options) => await axe.run(document, options)", options)
    lines = []
    for violation in result["violations"]:
        if violation["impact"] not in FAILING_IMPACTS:
            continue
        for node in violation["nodes"]:
            summary = " ".join((node.get("failureSummary") or "").split())
            lines.append(f"{violation['id']} ({violation['impact']}) at {node['target']}: {summary}")
    return lines


# The admin's own stylesheet sets its colours (Django's palette, with small grey sort links and
# light-blue app links below 4.5:1); what our templates and admin-extra.css change there is checked
# by every other rule, link-in-text-block included.
ADMIN_SKIPPED_RULES = ["color-contrast"]


def _check_everywhere(page, *, admin=False) -> list[str]:
    """The page in every scheme and width: a list of '[scheme, width] violation' lines."""
    lines = []
    for n, (scheme, viewport) in enumerate(COMBINATIONS):
        page.emulate_media(color_scheme=scheme)
        page.set_viewport_size(viewport)
        assert page.evaluate("matchMedia('(prefers-color-scheme: dark)').matches") == (scheme == "dark")
        where = f"{scheme}, {viewport['width']} px"
        rules = None if n == 0 else RENDERING_RULES
        found = _axe(page, rules if not admin else [r for r in rules or [] if r not in ADMIN_SKIPPED_RULES] or None)
        if admin:
            found = [line for line in found if not line.startswith(tuple(ADMIN_SKIPPED_RULES))]
        lines += [f"[{where}] {line}" for line in found]
    return lines


def _session(world, persona, base_url):
    return {"name": django_settings.SESSION_COOKIE_NAME, "value": world.sessions[persona], "url": base_url}


def test_every_page_has_no_serious_axe_violation_in_both_schemes_and_widths(chromium, live_server, settings, tmp_path):
    settings.WORKSPACE_ROOT = tmp_path
    world = build_world()
    write_notes_file(world)
    # A paused item (its mark on the lists, the item and its provenance) and a changed expiry.
    memory_change(actor=world.users["alice"], memory_id=world.chat_item.pk, paused=True)
    memory_change(actor=world.users["alice"], memory_id=world.user_memory.pk, expires_at="2031-01-01T00:00:00Z")
    pages = _get_pages(world)

    visited = {route for route, _persona, _url in pages} | set(SUBMITTED)
    web_routes = {r.key for r in routes() if r.kind == "web"}
    missing = web_routes - visited - set(NOT_PAGES)
    assert not missing, f"web routes without an accessibility visit: {sorted(missing)}"

    base = live_server.url
    context = chromium.new_context(viewport=DESKTOP, locale="en-US")
    context.add_init_script(AXE_JS.read_text(encoding="utf-8"))
    page = context.new_page()
    page.set_default_timeout(20000)
    failures = []
    persona_now = None
    for route, persona, url in pages:
        if persona != persona_now:
            context.clear_cookies()
            if persona:
                context.add_cookies([_session(world, persona, base)])
            persona_now = persona
        page.goto(base + url)
        failures += [f"{route} {url} {line}" for line in _check_everywhere(page, admin=route == "admin")]
    context.clear_cookies()
    context.add_cookies([_session(world, "alice", base)])
    page.emulate_media(color_scheme="light")
    page.set_viewport_size(DESKTOP)
    shown = []
    for route in _submitted_pages(page, base, world):
        shown.append(route)
        failures += [f"{route} (after a submission) {line}" for line in _check_everywhere(page)]
        page.emulate_media(color_scheme="light")
        page.set_viewport_size(DESKTOP)
    context.close()
    assert tuple(shown) == SUBMITTED
    assert not failures, "axe found serious or critical violations:\n" + "\n".join(failures)


def test_the_keyboard_reaches_the_skip_link_first_and_the_header_marks_the_current_page(
    chromium, live_server, settings, tmp_path
):
    settings.WORKSPACE_ROOT = tmp_path
    world = build_world()
    context = chromium.new_context(viewport=DESKTOP, locale="en-US")
    context.add_cookies([_session(world, "alice", live_server.url)])
    page = context.new_page()
    page.goto(live_server.url + reverse("web:memory_home_items") + "?source=user")

    skip = page.locator("a.skip-link")
    assert skip.bounding_box()["y"] < 0  # out of sight until it has the focus
    page.keyboard.press("Tab")
    focused = page.evaluate("[document.activeElement.className, document.activeElement.textContent]")
    assert focused == ["skip-link", "Skip to content"]
    box = page.locator("a.skip-link").bounding_box()
    assert box["y"] >= 0 and box["height"] > 0, box  # on screen while it has the focus
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "content"
    assert page.evaluate("document.activeElement.tagName") == "MAIN"
    # The next Tab continues inside the content, not back in the header.
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('main') !== null")

    current = page.locator("header.topbar nav a[aria-current=page]")
    assert current.count() == 1
    assert current.get_attribute("href") == reverse("web:home")  # the list is part of the memory section
    other = page.locator("header.topbar nav a", has_text="Projects")
    assert other.get_attribute("aria-current") is None
    style = "(el) => [getComputedStyle(el).fontWeight, getComputedStyle(el).textDecorationLine]"
    assert current.evaluate(style) != other.evaluate(style)

    # Every control of the header is reached by Tab, in order, and shows a focus ring.
    page.goto(live_server.url + reverse("web:projects"))
    assert page.locator("header.topbar nav a[aria-current=page]").get_attribute("href") == reverse("web:projects")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    # One brand (not a link: the first link of the header is the memory home's, named once).
    assert page.evaluate("document.activeElement.getAttribute('href')") == reverse("web:home")
    assert page.locator("header.topbar a", has_text="Memory").count() == 1
    assert page.locator("header.topbar .brand").inner_text() == "Memory service"
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline == "solid"
    context.close()


def _tab_to(page, selector, *, limit=80):
    """Press Tab until the focus is on ``selector``; fail if it is never reached."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("(s) => document.activeElement.matches(s)", selector):
            assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") == "solid"
            return
    raise AssertionError(f"Tab never reaches {selector}")


def test_confirmations_work_from_the_keyboard(chromium, live_server, settings, tmp_path):
    settings.WORKSPACE_ROOT = tmp_path
    world = build_world()
    write_notes_file(world)
    memory_id = world.user_memory.pk
    changes = WorkspaceChange.objects.count()
    context = chromium.new_context(viewport=PHONE, locale="en-US")
    context.add_cookies([_session(world, "alice", live_server.url)])
    page = context.new_page()
    page.set_default_timeout(20000)

    # An undo asks first; answering no with the keyboard changes nothing.
    page.goto(live_server.url + reverse("web:workspace_history"))
    _tab_to(page, "form.undo-form button")
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.keyboard.press("Enter")
    page.wait_for_timeout(300)
    assert page.url == live_server.url + reverse("web:workspace_history")
    assert WorkspaceChange.objects.count() == changes

    # Forgetting a memory: the skip link, then Tab to the button and Enter.
    page.goto(live_server.url + reverse("web:memory_home_item_forget", kwargs={"memory_id": memory_id}))
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    _tab_to(page, "#forget-memory button[type=submit]")
    page.keyboard.press("Enter")
    page.wait_for_url(
        live_server.url + reverse("web:memory_home_items") + "?source=user" + "*"
    )  # the #content of the skip stays
    assert not Memory.objects.filter(pk=memory_id).exists()
    assert Memory.objects.filter(pk=world.project_memory.pk).exists()
    context.close()
