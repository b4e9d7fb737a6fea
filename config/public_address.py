"""The address people reach this service at, for the links and snippets the service prints or
shows (a sign-in link, an MCP client's configuration): ``PUBLIC_BASE_URL`` when it is set; else,
for a page, the address the page was opened at; else the address ``make run`` / ``make serve``
were last started with (``SERVER_ADDRESS_FILE``, written by ``scripts/run.sh`` and
``scripts/serve.sh``); else ``http://localhost:8000``. ``source`` says which, so a guess is
never printed as if it were the setting."""

from dataclasses import dataclass

from django.conf import settings
from django.http import HttpRequest

DEFAULT_ADDRESS = "http://localhost:8000"
MAX_ADDRESS_CHARS = 300

SETTING, REQUEST, STARTED, DEFAULT = "setting", "request", "started", "default"


@dataclass(frozen=True)
class PublicAddress:
    url: str  # scheme://host[:port], no trailing slash
    source: str  # SETTING, REQUEST, STARTED or DEFAULT

    @property
    def is_set(self) -> bool:
        return self.source == SETTING


def _started_address() -> str:
    """The address the last ``make run`` / ``make serve`` on this machine was started with."""
    try:
        text = settings.SERVER_ADDRESS_FILE.read_text("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""
    if not text.startswith(("http://", "https://")) or len(text) > MAX_ADDRESS_CHARS or any(c.isspace() for c in text):
        return ""  # not an address written by the scripts: ignored
    return text.rstrip("/")


def public_address(request: HttpRequest | None = None) -> PublicAddress:
    if settings.PUBLIC_BASE_URL:
        return PublicAddress(settings.PUBLIC_BASE_URL, SETTING)
    if request is not None:
        # The host is one ALLOWED_HOSTS lets through (get_host() refuses others).
        return PublicAddress(f"{request.scheme}://{request.get_host()}", REQUEST)
    started = _started_address()
    if started:
        return PublicAddress(started, STARTED)
    return PublicAddress(DEFAULT_ADDRESS, DEFAULT)
