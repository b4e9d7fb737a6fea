"""What the sync and async clients share: headers, answers to errors, and when to retry."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import httpx

from memsvc._api import Call
from memsvc.errors import (
    ApiError,
    LockBusy,
    MemsvcError,
    RateLimited,
    ServerError,
    TransportError,
    error_from_response,
    parse_retry_after,
)

VERSION = "0.1.0"
USER_AGENT = f"memsvc-client/{VERSION}"


@dataclass(frozen=True)
class RetryPolicy:
    """When a call is tried again. Only where that is safe:

    - ``429`` for any call: the service refused it before doing anything; after the
      ``Retry-After`` seconds it sent;
    - ``503 memory_lock_failed`` for any call: nothing was written;
    - a connection that could not be opened, for any call (nothing was sent);
    - other transport errors and ``502``/``503``/``504`` only for idempotent calls: reads, and the
      writes the service makes idempotent (import, heartbeat, the history tools, an appended note).

    ``attempts`` bounds the tries of one call (the first included), ``max_wait`` the seconds slept
    between them in all: a ``Retry-After`` that would go past it is raised at once as
    :class:`~memsvc.RateLimited`, with ``retry_after`` for the caller to decide.
    """

    attempts: int = 4
    max_wait: float = 30.0
    backoff: float = 0.25
    max_backoff: float = 4.0

    def delay(self, call: Call, attempt: int, waited: float, error: MemsvcError) -> float | None:
        """Seconds to wait before try ``attempt + 1`` of ``call`` after ``error``; None: give up."""
        if attempt >= self.attempts:
            return None
        backoff = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
        if isinstance(error, RateLimited):
            delay = error.retry_after if error.retry_after is not None else backoff
        elif isinstance(error, LockBusy):
            delay = backoff
        elif isinstance(error, TransportError):
            if not (call.idempotent or isinstance(error.__cause__, httpx.ConnectError)):
                return None
            delay = backoff
        elif isinstance(error, ServerError) and error.status in (502, 503, 504) and call.idempotent:
            retry_after = parse_retry_after(error.headers.get("retry-after"))
            delay = retry_after if retry_after is not None else backoff
        else:
            return None
        if waited + delay > self.max_wait:
            return None
        return delay


NO_RETRY = RetryPolicy(attempts=1)


def new_request_id() -> str:
    """Sent as ``X-Request-ID`` (the same on every try of one call): the service logs it and
    returns it in every error, so a report names the exact request."""
    return "memsvc-" + uuid.uuid4().hex


def headers_for(call: Call, token: str | None, request_id: str) -> dict[str, str]:
    headers = {"X-Request-ID": request_id, "Accept": "application/json"}
    if call.run_token is not None:
        headers["Authorization"] = f"Run {call.run_token}"
    elif token:
        headers["Authorization"] = f"Token {token}"
    return headers


def result_of(response: httpx.Response) -> Any:
    """The decoded answer, or the typed error it is."""
    body: Any = None
    if response.content:
        if response.headers.get("content-type", "").startswith("application/json"):
            try:
                body = response.json()
            except ValueError:
                body = response.text
        else:
            body = response.text
    if response.status_code >= 400:
        raise error_from_response(response.status_code, body, dict(response.headers))
    return body


def transport_error(exc: httpx.HTTPError, request_id: str) -> TransportError:
    error = TransportError(f"{type(exc).__name__}: {exc}", request_id=request_id)
    error.__cause__ = exc
    return error


__all__ = ["ApiError", "RetryPolicy", "headers_for", "new_request_id", "result_of", "transport_error"]
