"""The browser of the phone-width and draft tests (``chromium``); their helpers are in
``tests/browser/phone.py``."""

import os

import pytest
from django.db import connections
from playwright.sync_api import sync_playwright

from tests.browser.phone import CHROMIUM_ARGS


@pytest.fixture(scope="module")
def module_chromium():
    """One Chromium for the tests of a module: launching it is the slow part of a short test."""
    # Playwright's sync API runs an event loop in this thread while the browser is open; the ORM
    # calls in these tests are plain synchronous test code. Scoped to the module, never global.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"), args=CHROMIUM_ARGS
            )
            try:
                yield browser
            finally:
                browser.close()
                connections.close_all()


@pytest.fixture
def chromium(module_chromium):
    """The module's Chromium with no context open: what a test opens (cookies, storage, pages)
    is closed after it, so every test starts from a browser as fresh as a new one."""
    assert not module_chromium.contexts, "a context of an earlier test is still open"
    try:
        yield module_chromium
    finally:
        for context in list(module_chromium.contexts):
            context.close()
        connections.close_all()
