import functools
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, TypedDict

from django.db.models import Q, QuerySet
from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from identity_app.models import ApiToken, User, hash_token
from identity_app.permissions import service_principal_attach, service_principal_exists, token_reach_attach

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

# ``last_used_at`` is at most this stale: a token is touched once per interval, not per request.
LAST_USED_RESOLUTION = timedelta(minutes=1)
# Only the holder of a key reads these, so naming why it stopped working tells an attacker nothing.
REFUSED_STATES = {"expired": "This token has expired.", "revoked": "This token has been revoked."}


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """``Authorization: Token <key>``; keys are looked up by their SHA-256, never stored.

    A revoked or expired key is refused (401). A limited key's reach travels with the user
    object of the request (``identity_app.permissions.token_reach``)."""

    keyword = "Token"

    def authenticate(self, request: Request) -> tuple[User, ApiToken] | None:
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Invalid token header.")
        try:
            key = header[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("Invalid token.") from None
        try:
            token = _token_lookup().get(key_hash=hash_token(key))  # unique: no ORDER BY as first() adds
        except ApiToken.DoesNotExist:
            raise exceptions.AuthenticationFailed("Invalid token.") from None
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid token.")
        service_principal_attach(token.user, token.user_runs_agents)
        now = timezone.now()
        state = token.state(now)
        if state != "active":
            raise exceptions.AuthenticationFailed(REFUSED_STATES[state])
        token_touch(token, now=now)
        token_reach_attach(token.user, token)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


class _RunsAgents(TypedDict):
    user_runs_agents: bool


@functools.cache
def _token_lookup() -> "QuerySet[WithAnnotations[ApiToken, _RunsAgents]]":
    """The token with its user and the user's ``run_agents`` grant, built once per process:
    resolving the grant's subquery costs more than running it. Only filtered clones of it are
    evaluated."""
    return ApiToken.objects.select_related("user").annotate(user_runs_agents=service_principal_exists("user_id"))


def token_touch(token: ApiToken, *, now: datetime) -> None:
    """Record use at most once per ``LAST_USED_RESOLUTION``: no write when the loaded value is
    fresh, and a conditional UPDATE otherwise, so concurrent requests write it once."""
    stale_before = now - LAST_USED_RESOLUTION
    if token.last_used_at is not None and token.last_used_at > stale_before:
        return
    ApiToken.objects.filter(Q(last_used_at__isnull=True) | Q(last_used_at__lte=stale_before), pk=token.pk).update(
        last_used_at=now
    )
    token.last_used_at = now
