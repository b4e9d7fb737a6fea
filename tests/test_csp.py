"""Content-Security-Policy on the web UI, the admin and the API docs; no inline script or style
in our templates (the browser half is tests/browser/test_csp_browser.py)."""

import re
from pathlib import Path

import pytest
from django.test import Client

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
PASSWORD = "pw-for-tests-123"


def policy(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    return {part.split()[0]: part.split()[1:] for part in header.split(";") if part.strip()}


def assert_strict(response):
    directives = policy(response)
    assert directives["default-src"] == ["'self'"]
    assert directives["object-src"] == ["'none'"]
    assert directives["frame-ancestors"] == ["'none'"]
    for name in ("script-src", "style-src"):
        assert "'self'" in directives[name]
        assert not {"'unsafe-inline'", "'unsafe-eval'", "*"} & set(directives[name]), directives[name]


@pytest.fixture
def web(db):
    client = Client()
    user = UserFactory(username="carol", password=PASSWORD, is_staff=True, is_superuser=True)
    client.force_login(user)
    return client


@pytest.mark.parametrize(
    "url", ["/", "/profile/", "/workspace/", "/admin/", "/admin/memory_app/scopemigrationplan/", "/api/docs/"]
)
def test_pages_carry_a_strict_policy(web, url):
    response = web.get(url)
    assert response.status_code == 200
    assert_strict(response)


def test_login_pages_carry_the_policy():
    for url in ("/accounts/login/", "/admin/login/"):
        response = Client().get(url)
        assert response.status_code == 200
        assert_strict(response)


def test_api_docs_page_has_no_inline_script_or_style():
    response = Client().get("/api/docs/")
    page = response.content.decode()
    scripts = re.findall(r"<script\b[^>]*>", page)
    assert scripts and all("src=" in tag for tag in scripts), scripts
    assert "<style" not in page
    init = next(tag for tag in scripts if "script=" in tag)
    script_url = re.search(r'src="([^"]+)"', init).group(1).replace("&amp;", "&")

    script = Client().get(script_url)
    assert script.status_code == 200
    assert script["Content-Type"].startswith("application/javascript")
    assert "SwaggerUIBundle" in script.content.decode()
    # The script carries the CSRF token for "Try it out": other sites may not load it.
    assert script["Cross-Origin-Resource-Policy"] == "same-origin"


def test_templates_have_no_inline_script_style_or_handlers():
    offenders = []
    for path in TEMPLATES.rglob("*.html"):
        text = path.read_text()
        for tag in re.findall(r"<script\b[^>]*>", text):
            if "src=" not in tag and "nonce=" not in tag and 'type="application/json"' not in tag:
                offenders.append(f"{path}: {tag}")
        if re.search(r"<style\b(?![^>]*nonce=)", text):
            offenders.append(f"{path}: <style>")
        offenders += [f"{path}: {m}" for m in re.findall(r"\s(?:style|on[a-z]+)\s*=", text)]
        offenders += [f"{path}: javascript: URL" for _ in re.findall(r"javascript:", text, flags=re.I)]
    assert offenders == []
