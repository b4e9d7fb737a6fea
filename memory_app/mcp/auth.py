"""Who an MCP session acts for (docs/mcp.md, Authentication).

The API token is resolved by the REST API's own ``ApiTokenAuthentication`` (hash lookup,
expiry, revocation, ``last_used_at``, the reach of a limited token); this module only adds the
MCP rule about whose memory a session works on: a user token acts as its user, a service token
only for the user it names and whose own memories it may reach (``user_get_subject``, as the
mem0-compatible API's ``user_id``: never through a token limited to projects).
"""

from dataclasses import dataclass
from types import SimpleNamespace
from typing import cast

from rest_framework import exceptions
from rest_framework.request import Request

from config.errors import DomainError, PermissionDenied
from identity_app.authentication import ApiTokenAuthentication
from identity_app.models import User
from identity_app.permissions import is_service_principal
from identity_app.selectors import user_get_subject
from memory_app.mcp.errors import ErrorCode


class NotAuthenticated(DomainError):
    status_code = 401
    code = ErrorCode.NOT_AUTHENTICATED


class AuthenticationFailed(DomainError):
    status_code = 401
    code = ErrorCode.AUTHENTICATION_FAILED


@dataclass(frozen=True)
class Principal:
    """``actor``: the token's user (carrying its reach); ``user``: whose memory the session
    works on — ``actor`` itself, or the user a service principal acts for."""

    actor: User
    user: User
    service: bool
    token_id: int | None = None  # the API token of the session (who read what, docs/home.md)

    @property
    def label(self) -> str:
        if self.service:
            return f"{self.actor.get_username()} for {self.user.get_username()}"
        return self.user.get_username()


def principal_resolve(*, authorization: str | None, acting_user: str | None = None) -> Principal:
    """The principal of an ``Authorization`` header value (``Token <key>``) and the optional
    name of the user to act for. Raises ``NotAuthenticated``/``AuthenticationFailed`` (401),
    ``PermissionDenied`` (403) or ``InvalidInput`` (400 ``unknown_user``)."""
    # The authentication reads only the header from META.
    request = cast(Request, SimpleNamespace(META={"HTTP_AUTHORIZATION": authorization or ""}))
    try:
        found = ApiTokenAuthentication().authenticate(request)
    except exceptions.AuthenticationFailed as exc:
        raise AuthenticationFailed(str(exc.detail)) from None
    if found is None:
        raise NotAuthenticated("An API token is required: 'Authorization: Token <key>'.")
    actor, token_id = found[0], found[1].pk
    acting_user = (acting_user or "").strip() or None
    if is_service_principal(actor):
        if acting_user is None:
            raise PermissionDenied(
                "A service token acts only for a named user; name one (MEMORY_MCP_USER, or the X-Memory-User header).",
                code=ErrorCode.USER_REQUIRED,
            )
        # Every tool of a session works on the user's own things (memories, notes file, history):
        # a token limited to projects reaches none of them, so it opens no session for a user.
        return Principal(
            actor=actor, user=user_get_subject(actor=actor, username=acting_user), service=True, token_id=token_id
        )
    if acting_user is not None and acting_user != actor.get_username():
        raise PermissionDenied("A user token acts only as its own user.", code=ErrorCode.NOT_YOUR_ACCOUNT)
    return Principal(actor=actor, user=actor, service=False, token_id=token_id)


def token_header(key: str | None) -> str | None:
    """The ``Authorization`` value for a key from the environment (stdio)."""
    key = (key or "").strip()
    if not key:
        return None
    return key if key.lower().startswith("token ") else f"Token {key}"
