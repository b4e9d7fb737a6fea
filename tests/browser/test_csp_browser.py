"""Under the Content-Security-Policy, in a real browser: the API docs render their operations,
the web UI and the admin work, and the browser reports no violation anywhere."""

import os

import pytest
from django.db import connections
from playwright.sync_api import sync_playwright

from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
PASSWORD = "pw-for-tests-123"
# Recorded in every page before its own scripts run (init scripts are not subject to the CSP).
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile}:${e.lineNumber}`);
});
"""


class Browser:
    def __init__(self, page, base_url):
        self.page = page
        self.base_url = base_url
        self.console: list[str] = []
        page.on("console", lambda message: self.console.append(f"{message.type}: {message.text}"))

    def goto(self, path: str):
        response = self.page.goto(self.base_url + path)
        assert response is not None and response.ok, (path, response and response.status)
        assert "default-src 'self'" in response.headers["content-security-policy"], path
        return response

    def assert_no_violations(self):
        violations = self.page.evaluate("window.__cspViolations")
        reported = [line for line in self.console if "content security policy" in line.lower()]
        assert violations == [] and reported == [], (violations, reported)


@pytest.fixture
def browser(monkeypatch, live_server):
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
            yield Browser(page, live_server.url)
        finally:
            chromium.close()
            connections.close_all()


def test_api_docs_render_their_operations_under_the_policy(browser):
    browser.goto("/api/docs/")
    browser.page.wait_for_selector(".opblock-summary-path")
    paths = browser.page.locator(".opblock-summary-path").all_inner_texts()
    assert len(paths) >= 20
    assert any("/api/users/me/memories" in path for path in paths)
    # Opening an operation works too (Swagger UI's own script, not blocked).
    browser.page.locator(".opblock-summary").first.click()
    browser.page.wait_for_selector(".opblock-body")
    browser.assert_no_violations()


def test_web_ui_and_admin_work_under_the_policy(browser):
    UserFactory(username="carol", password=PASSWORD, is_staff=True, is_superuser=True)
    page = browser.page

    browser.goto("/accounts/login/")
    browser.assert_no_violations()
    page.fill("input[name=username]", "carol")
    page.fill("input[name=password]", PASSWORD)
    page.click("main form button[type=submit]")  # not the header's language buttons
    page.wait_for_url(browser.base_url + "/")
    browser.assert_no_violations()

    admin_pages = (
        "/admin/",
        "/admin/memory_app/memory/",
        "/admin/memory_app/scopemigrationplan/",
        "/admin/auth/user/",
        "/admin/auth/user/add/",
        "/admin/axes/accessattempt/",
    )
    for path in ("/profile/", *admin_pages):
        browser.goto(path)
        browser.assert_no_violations()

    # The delete confirmation of the notes file is a static script now: it still asks first.
    browser.goto("/workspace/?name=MEMORY.md")
    page.fill("textarea#content", "- likes tea")
    page.click("button[value=save]")
    page.wait_for_selector("button[value=delete]")
    questions = []
    page.once("dialog", lambda dialog: (questions.append(dialog.message), dialog.dismiss()))
    page.click("button[value=delete]")
    assert questions == ["Delete MEMORY.md?"]
    assert page.locator("textarea#content").input_value() == "- likes tea"
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("button[value=delete]")
    page.wait_for_selector("text=does not exist yet")
    browser.assert_no_violations()
