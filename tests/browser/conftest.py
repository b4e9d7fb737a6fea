"""The browser of the phone-width and draft tests (``chromium``); their helpers are in
``tests/browser/phone.py``."""

import os

import pytest
from django.db import connections
from playwright.sync_api import sync_playwright

from tests.browser.phone import CHROMIUM_ARGS


@pytest.fixture
def chromium(monkeypatch):
    # Playwright's sync API runs an event loop in this thread; the ORM calls in these tests
    # are plain synchronous test code. Scoped to the test, never global.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"), args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()
            connections.close_all()
