"""Where printed links and shown snippets start (``config.public_address``): ``PUBLIC_BASE_URL``;
else the address a page was opened at; else the address ``make run`` / ``make serve`` were last
started with; else ``http://localhost:8000`` — and ``issue_token --sign-in-link`` says plainly,
beside the link, when the address is not the setting."""

import io
import re

import pytest
from django.core.management import call_command
from django.test import RequestFactory

from config.public_address import DEFAULT, REQUEST, SETTING, STARTED, public_address


@pytest.fixture
def address_file(settings, tmp_path):
    settings.PUBLIC_BASE_URL = ""
    settings.SERVER_ADDRESS_FILE = tmp_path / "server-address"
    return settings.SERVER_ADDRESS_FILE


def test_the_setting_wins_over_everything(settings, address_file):
    settings.PUBLIC_BASE_URL = "https://memory.example.com"
    address_file.write_text("http://127.0.0.1:9001\n")
    request = RequestFactory().get("/", HTTP_HOST="localhost")
    assert public_address(request) == public_address() and public_address().url == "https://memory.example.com"
    assert public_address().source == SETTING and public_address().is_set


def test_a_page_uses_the_address_it_was_opened_at(settings, address_file):
    settings.ALLOWED_HOSTS = ["memory.internal"]
    request = RequestFactory().get("/connect/", HTTP_HOST="memory.internal:9000", secure=True)
    assert public_address(request).url == "https://memory.internal:9000"
    assert public_address(request).source == REQUEST


def test_without_a_request_the_started_address_then_the_default(address_file):
    assert (public_address().url, public_address().source) == ("http://localhost:8000", DEFAULT)
    address_file.write_text("http://127.0.0.1:9001\n")
    assert (public_address().url, public_address().source) == ("http://127.0.0.1:9001", STARTED)


@pytest.mark.parametrize("written", ["", "ftp://x", "http://a b", "javascript:alert(1)", "http://" + "a" * 400, "\xff"])
def test_a_file_not_written_by_the_scripts_is_ignored(address_file, written):
    address_file.write_bytes(written.encode("latin-1"))
    assert public_address().source == DEFAULT


def _link(*args) -> tuple[str, str]:
    err = io.StringIO()
    call_command("issue_token", *args, stdout=io.StringIO(), stderr=err)
    text = err.getvalue()
    return re.search(r"https?://\S+/accounts/sign-in/\S+/", text).group(0), text


def test_the_printed_link_says_where_its_address_comes_from(db, settings, address_file):
    link, text = _link("first", "--create-user", "--sign-in-link")
    assert link.startswith("http://localhost:8000/") and "PUBLIC_BASE_URL is not set" in text
    address_file.write_text("http://10.0.0.5:8123\n")
    link, text = _link("second", "--create-user", "--sign-in-link")
    assert link.startswith("http://10.0.0.5:8123/") and "was last started with" in text and "PUBLIC_BASE_URL" in text
    settings.PUBLIC_BASE_URL = "https://memory.example.com"
    link, text = _link("third", "--create-user", "--sign-in-link")
    assert link.startswith("https://memory.example.com/") and "PUBLIC_BASE_URL" not in text
