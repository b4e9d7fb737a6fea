"""The one memory list, the token confirmation, first contact with a sign-in link and the
table cells, in headless Chromium at 1280 and 390 px, in English and Simplified Chinese, the
database checked after each step."""

import io
import re

import pytest
from django.core.management import call_command
from django.urls import reverse
from playwright.sync_api import expect

from identity_app.models import ApiToken, SignInLink
from identity_app.services import token_issue
from memory_app.memories.models import Memory, Status, Tier
from tests.browser.phone import PASSWORD, PHONE, RECORD_VIOLATIONS, log_in, no_violations
from tests.factories import UserFactory, UserMemoryFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DESKTOP = {"width": 1280, "height": 800}
# Each flow runs at both widths, once in each language.
VARIANTS = [
    pytest.param(DESKTOP, "en-US", id="1280px-en"),
    pytest.param(PHONE, "zh-CN", id="390px-zh"),
]
MINE = reverse("web:memory_home_items") + "?source=user"


@pytest.fixture
def open_page(chromium):
    def make(viewport, locale):
        context = chromium.new_context(viewport=viewport, locale=locale)
        context.add_init_script(RECORD_VIOLATIONS)
        page = context.new_page()
        page.set_default_timeout(20000)
        return page

    return make


def fits(page):
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, (page.url, overflow)
    no_violations(page)


def _rows():
    return sorted(Memory.objects.values_list("content", "status"))


@pytest.mark.parametrize(("viewport", "locale"), VARIANTS)
def test_one_list_searches_filters_adds_and_forgets_in_bulk(open_page, live_server, viewport, locale):
    kim = UserFactory(username="kim", password=PASSWORD)
    UserMemoryFactory(owner=kim, kind="fact", content="Lives in Berlin")
    UserMemoryFactory(owner=kim, kind="preference", content="Prefers Berlin coffee")
    UserMemoryFactory(owner=kim, kind="fact", content="Old Berlin flat", status=Status.ARCHIVED)
    page = open_page(viewport, locale)
    log_in(page, live_server.url, "kim", next_url=MINE)
    assert page.locator("tr.memory-row").count() == 2  # active only
    fits(page)

    # Add.
    page.select_option("#create-memory select[name=kind]", "preference")
    page.fill("#create-memory textarea[name=content]", "Likes green tea")
    page.click("#create-memory button[type=submit]")
    expect(page.locator(".messages")).to_be_visible()
    assert Memory.objects.filter(owner=kim, scope_type=Tier.USER, kind="preference", content="Likes green tea").exists()
    assert page.locator("tr.memory-row").count() == 3

    # Search and filter: the words, then one kind; the archived row only with its status.
    page.fill("#memory-filters input[name=q]", "Berlin")
    page.click("#memory-filters button[type=submit]")
    expect(page.locator("tr.memory-row")).to_have_count(2)
    assert "Likes green tea" not in page.locator("table.home-items").inner_text()
    page.select_option("#memory-filters select[name=kind]", "preference")
    page.click("#memory-filters button[type=submit]")
    expect(page.locator("tr.memory-row")).to_have_count(1)
    assert "Prefers Berlin coffee" in page.locator("tr.memory-row").inner_text()
    page.select_option("#memory-filters select[name=kind]", "")
    page.select_option("#memory-filters select[name=status]", "archived")
    page.click("#memory-filters button[type=submit]")
    expect(page.locator("tr.memory-row")).to_have_count(1)
    assert "Old Berlin flat" in page.locator("tr.memory-row").inner_text()
    fits(page)

    # Bulk forget from the search: a confirmation first, which changes nothing.
    before = _rows()
    page.goto(live_server.url + MINE + "&q=Berlin")
    page.locator("input[name=ids]").first.check()
    page.locator("input[name=ids]").nth(1).check()
    page.click("#forget-selected")
    page.wait_for_selector("#forget-selected-confirm")
    assert _rows() == before
    page.click("#forget-selected-confirm button[type=submit]")
    expect(page.locator(".messages")).to_be_visible()
    assert _rows() == [("Likes green tea", Status.ACTIVE), ("Old Berlin flat", Status.ARCHIVED)]
    fits(page)


@pytest.mark.parametrize(("viewport", "locale"), VARIANTS)
def test_revoking_a_token_asks_first_and_a_new_key_is_copied(open_page, live_server, viewport, locale):
    lee = UserFactory(username="lee", password=PASSWORD)
    token, _key = token_issue(user=lee, name="agent-key")
    page = open_page(viewport, locale)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    log_in(page, live_server.url, "lee", next_url=reverse("web:tokens"))
    # On a phone every card value has its label.
    if viewport == PHONE:
        for cell in page.locator("table.tokens td[data-label]").all():
            assert cell.evaluate("(el) => getComputedStyle(el, '::before').content") not in ("none", "normal", "")
    page.locator(f"a[href='{reverse('web:token_revoke', args=[token.pk])}']").click()
    page.wait_for_selector("#token-confirm")
    token.refresh_from_db()
    assert token.revoked_at is None  # asking changed nothing
    page.click("#token-confirm a.button")  # cancel
    page.wait_for_url(live_server.url + reverse("web:tokens"))
    token.refresh_from_db()
    assert token.revoked_at is None
    page.locator(f"a[href='{reverse('web:token_revoke', args=[token.pk])}']").click()
    page.click("#token-confirm button[type=submit]")
    expect(page.locator(".messages")).to_be_visible()
    token.refresh_from_db()
    assert token.revoked_at is not None

    page.fill("#create-token input[name=name]", "ci")
    page.click("#create-token button[type=submit]")
    page.wait_for_selector("#new-key")
    key = page.input_value("#new-key-value")
    assert ApiToken.objects.filter(user=lee, revoked_at__isnull=True).count() == 1
    page.click("#copy-key")
    expect(page.locator("#new-key-value-status")).not_to_be_empty()
    assert page.evaluate("navigator.clipboard.readText()") == key
    fits(page)


@pytest.mark.parametrize(("viewport", "locale"), VARIANTS)
def test_a_sign_in_link_leads_to_a_password(open_page, live_server, settings, viewport, locale):
    settings.PUBLIC_BASE_URL = live_server.url
    err = io.StringIO()
    call_command("issue_token", "newcomer", "--create-user", "--sign-in-link", stdout=io.StringIO(), stderr=err)
    url = re.search(r"http\S+/accounts/sign-in/\S+/", err.getvalue()).group(0)
    page = open_page(viewport, locale)
    page.goto(live_server.url + reverse("login"))
    assert page.locator(".account-contact").inner_text()  # whom to ask for an account
    page.goto(url)
    assert SignInLink.objects.get().used_at is None
    page.click("#sign-in-link button[type=submit]")
    page.wait_for_url(live_server.url + reverse("set_password"))
    assert SignInLink.objects.get().used_at is not None
    page.fill("input[name=new_password1]", "a-long-new-pass-4821")
    page.fill("input[name=new_password2]", "a-long-new-pass-4821")
    page.click("#set-password button[type=submit]")
    page.wait_for_url(live_server.url + "/")
    from django.contrib.auth import get_user_model

    assert get_user_model().objects.get(username="newcomer").check_password("a-long-new-pass-4821")
    fits(page)
    # Used once: the link again signs no one in.
    page.context.clear_cookies()
    page.goto(url)
    page.click("#sign-in-link button[type=submit]")
    assert page.locator("h1").inner_text() != ""
    page.goto(live_server.url + "/")
    assert "/accounts/login/" in page.url


def test_narrow_columns_never_break_inside_a_word(open_page, live_server):
    mo = UserFactory(username="mo", password=PASSWORD)
    UserMemoryFactory(owner=mo, kind="convention", content="A long sentence about conventions " * 8)
    page = open_page(DESKTOP, "en-US")
    log_in(page, live_server.url, "mo", next_url=MINE)
    for selector in ("tr.memory-row td[data-label='Kind'] .badge", "tr.memory-row td[data-label='Status'] .badge"):
        box = page.locator(selector).first.bounding_box()
        assert box["height"] < 30, (selector, box)  # one line: "Convention", "Active"
    header = page.locator("table.home-items th", has_text="Status").bounding_box()
    assert header["height"] < 40, header
