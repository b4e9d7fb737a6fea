"""Helpers of the browser tests at a phone's width: a page of 390 x 844 px that records
Content-Security-Policy violations, logging in, and the layout checks."""

from django.urls import reverse

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
PASSWORD = "pw-for-tests-123"
PHONE = {"width": 390, "height": 844}
MAX_HEADER_PX = 120
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"}`);
});
"""


def new_page(chromium, *, locale="en-US"):
    context = chromium.new_context(viewport=PHONE, locale=locale)
    context.add_init_script(RECORD_VIOLATIONS)
    page = context.new_page()
    page.set_default_timeout(20000)
    return page


def log_in(page, base_url, username, *, next_url="/"):
    page.goto(f"{base_url}{reverse('login')}?next={next_url}")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("form.card button[type=submit]")
    page.wait_for_url(base_url + next_url)


def no_sideways_scroll(page):
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the page is {width} px wide at {PHONE['width']} px"


def no_violations(page):
    assert page.evaluate("window.__cspViolations") == []
