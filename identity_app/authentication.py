from django.utils import timezone
from rest_framework import authentication, exceptions

from identity_app.models import ApiToken, hash_token


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """``Authorization: Token <key>``; keys are looked up by their SHA-256, never stored."""

    keyword = "Token"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Invalid token header.")
        try:
            key = header[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("Invalid token.") from None
        token = (
            ApiToken.objects.select_related("user").filter(key_hash=hash_token(key), revoked_at__isnull=True).first()
        )
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid token.")
        now = timezone.now()
        # Touch at most once a minute so reads do not turn every request into a write.
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request):
        return self.keyword
