"""The one HTTP client of OpenAI-compatible servers: the auto-memory extractor's
``/chat/completions`` and the embedding provider's ``/embeddings`` (standard-library HTTP, JSON
in and out, a bounded answer).

One error mapping: every failure is an ``UpstreamError`` whose message is one of a few fixed
phrases ("answered HTTP 502", "unreachable", …). The text of the underlying exception never goes
into it — it may quote the request, a proxy's error page or a URL with credentials — so a caller
may show the message to users; the class of the underlying exception is logged instead.
"""

import http.client
import json
import logging
import urllib.error
import urllib.request
from typing import Any

logger = logging.getLogger(__name__)


class UpstreamError(Exception):
    """The endpoint gave no usable answer. The message is a fixed phrase, safe to show."""


def http_base_url(value: str) -> str:
    """``value`` as the base URL of an endpoint: http(s) only (no ``file:`` or other schemes),
    without a trailing slash."""
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise ValueError("The base URL of an OpenAI-compatible endpoint must be http(s).")
    return value.rstrip("/")


def post_json(url: str, body: dict, *, api_key: str = "", timeout: float, max_bytes: int, service: str) -> Any:
    """POST ``body`` as JSON to ``url`` and return the decoded JSON answer (at most
    ``max_bytes``). ``service`` names the endpoint in the log (``openai_http`` logger)."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read(max_bytes + 1)
    except urllib.error.HTTPError as exc:
        exc.close()
        raise _failed(service, f"answered HTTP {exc.code}", exc) from None
    except (TimeoutError, urllib.error.URLError) as exc:
        timed_out = isinstance(exc, TimeoutError) or isinstance(getattr(exc, "reason", None), TimeoutError)
        raise _failed(service, "unreachable (timed out)" if timed_out else "unreachable", exc) from None
    except (OSError, http.client.HTTPException) as exc:
        # A connection reset, a status line that is not HTTP, a body shorter than announced.
        raise _failed(service, "unreachable (broken answer)", exc) from None
    if len(raw) > max_bytes:
        raise _failed(service, "answer too large")
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:  # not JSON, not UTF-8 text, or nested past reason
        raise _failed(service, "answer is not JSON", exc) from None


def _failed(service: str, phrase: str, exc: BaseException | None = None) -> UpstreamError:
    logger.warning(
        "%s failed: %s",
        service,
        phrase,
        extra={"service": service, "error_class": type(exc).__name__ if exc is not None else ""},
    )
    return UpstreamError(phrase)
