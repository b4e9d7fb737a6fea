"""Errors as types: one class per family of the service's error shape.

Every error answer of the service is ``{"error": {"code", "message", "details"?, "request_id"}}``
(docs/API.md, "Errors"). :func:`error_from_response` turns one into the class of its status,
narrowed by its ``code`` where a code has a meaning of its own (``lease_lost``, ``lease_held``,
``memory_lock_failed``). Every instance carries ``status``, ``code``, ``message``, ``details``
and ``request_id`` (what the operator asks for when you report a problem).
"""

from __future__ import annotations

from typing import Any


class MemsvcError(Exception):
    """Base of every error this client raises."""

    status: int | None = None

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str = "error",
        details: Any = None,
        request_id: str | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        self.code = code
        self.details = details
        self.request_id = request_id
        self.headers = dict(headers or {})

    def __str__(self) -> str:
        where = f", request {self.request_id}" if self.request_id else ""
        return f"{self.status or '-'} {self.code}: {self.message}{where}"


class TransportError(MemsvcError):
    """No answer: the connection failed or timed out (``__cause__`` holds the httpx error)."""

    def __init__(self, message: str, *, request_id: str | None = None):
        super().__init__(message, code="transport_error", request_id=request_id)


class ApiError(MemsvcError):
    """An error answer of the service; the subclasses name its family."""


class ValidationError(ApiError):
    """400: bad input; nothing was written. ``field_errors`` maps each field to its messages."""

    status = 400

    @property
    def field_errors(self) -> dict[str, Any]:
        return self.details if isinstance(self.details, dict) else {}


class AuthenticationFailed(ApiError):
    """401: a missing, forged, revoked or expired token (or a run token replaced by a claim)."""

    status = 401


class PermissionDenied(ApiError):
    """403: visible but not allowed."""

    status = 403


Forbidden = PermissionDenied


class LeaseLost(PermissionDenied):
    """The run's lease expired or another worker claimed the run: this worker must stop.

    Raised for ``403 lease_lost``, and by a :class:`~memsvc.Run` for the ``401`` its token gets
    once a claim replaced it."""


class RunNotRunning(PermissionDenied):
    """403 ``run_not_running``: the run has finished."""


class NotFound(ApiError):
    """404: missing **or not yours** (the service never says which)."""

    status = 404


class MethodNotAllowed(ApiError):
    status = 405


class Conflict(ApiError):
    """409: a state conflict (a version that is not active, a file changed since it was read,
    ``replaces`` matching zero or several places, a lease held by another worker, …)."""

    status = 409


class LeaseHeld(Conflict):
    """409 ``lease_held``: a claim while another worker's lease is still live."""


class PayloadTooLarge(ApiError):
    """413: the request body is over the service's limit; it was not read."""

    status = 413


class RateLimited(ApiError):
    """429: too many requests; ``retry_after`` is the seconds to wait (``Retry-After``)."""

    status = 429

    @property
    def retry_after(self) -> float | None:
        return parse_retry_after(self.headers.get("retry-after"))


class ServerError(ApiError):
    """5xx: the service failed; nothing is known about what it did unless the code says so."""

    status = 500


class ServiceUnavailable(ServerError):
    status = 503


class LockBusy(ServiceUnavailable, Conflict):
    """503 ``memory_lock_failed``: the user's notes-file lock could not be taken in time.

    Nothing was written, so any request may be repeated; the client does so within its retry
    budget. Also a :class:`Conflict`: the notes file is busy."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: ValidationError,
    401: AuthenticationFailed,
    403: PermissionDenied,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    413: PayloadTooLarge,
    429: RateLimited,
    503: ServiceUnavailable,
}
_BY_CODE: dict[str, type[ApiError]] = {
    "lease_lost": LeaseLost,
    "run_not_running": RunNotRunning,
    "lease_held": LeaseHeld,
    "memory_lock_failed": LockBusy,
}


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (the service sends whole seconds)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def error_class(status: int, code: str) -> type[ApiError]:
    if code in _BY_CODE:
        return _BY_CODE[code]
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return ServerError
    return ApiError


def error_from_response(status: int, body: Any, headers: dict[str, str]) -> ApiError:
    """The typed error for one error answer; a body that is not the service's shape (a proxy's
    page) still gets the class of its status."""
    headers = {k.lower(): v for k, v in headers.items()}
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        code = str(error.get("code") or f"http_{status}")
        message = str(error.get("message") or "")
        details = error.get("details")
        request_id = error.get("request_id") or headers.get("x-request-id")
    else:
        code, message, details = f"http_{status}", (body if isinstance(body, str) else "")[:500], None
        request_id = headers.get("x-request-id")
    cls = error_class(status, code)
    return cls(message, status=status, code=code, details=details, request_id=request_id, headers=headers)
