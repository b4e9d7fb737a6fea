"""Python client for the memory service (docs/quickstart-agents.md).

``Client`` and ``AsyncClient`` have the same methods; ``client.run(...)`` holds a leased run
for a block of work. Errors are typed (:mod:`memsvc.errors`); shapes are in :mod:`memsvc.models`.
"""

from memsvc._api import Call
from memsvc._core import NO_RETRY, VERSION, RetryPolicy
from memsvc.aio import AsyncClient, AsyncRun
from memsvc.client import Client, Run
from memsvc.errors import (
    ApiError,
    AuthenticationFailed,
    Conflict,
    Forbidden,
    LeaseHeld,
    LeaseLost,
    LockBusy,
    MemsvcError,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    RateLimited,
    RunNotRunning,
    ServerError,
    ServiceUnavailable,
    TransportError,
    ValidationError,
)
from memsvc.framing import DATA_MARK, data_text

__version__ = VERSION

__all__ = [
    "DATA_MARK",
    "NO_RETRY",
    "ApiError",
    "AsyncClient",
    "AsyncRun",
    "AuthenticationFailed",
    "Call",
    "Client",
    "Conflict",
    "Forbidden",
    "LeaseHeld",
    "LeaseLost",
    "LockBusy",
    "MemsvcError",
    "MethodNotAllowed",
    "NotFound",
    "PayloadTooLarge",
    "PermissionDenied",
    "RateLimited",
    "RetryPolicy",
    "Run",
    "RunNotRunning",
    "ServerError",
    "ServiceUnavailable",
    "TransportError",
    "ValidationError",
    "__version__",
    "data_text",
]
