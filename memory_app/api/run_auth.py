"""``Authorization: Run <token>`` for the run-scoped endpoints only (context, tools, heartbeat,
finish). A run token never authenticates anything else."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions

from memory_app.runs import RunCredential, run_authenticate


class RunTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Run"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Invalid run token header.")
        try:
            token = header[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("Invalid run token.") from None
        found = run_authenticate(token)
        if found is None:
            raise exceptions.AuthenticationFailed("Invalid run token, or it was replaced by a newer claim.")
        user, credential = found
        if not user.is_active:
            raise exceptions.AuthenticationFailed("Invalid run token.")
        return user, credential

    def authenticate_header(self, request):
        return self.keyword


class HasRunCredential(permissions.BasePermission):
    def has_permission(self, request, view):
        return isinstance(request.auth, RunCredential)


class RunTokenScheme(OpenApiAuthenticationExtension):
    target_class = "memory_app.api.run_auth.RunTokenAuthentication"
    name = "runToken"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "header", "name": "Authorization", "description": "Run <run_token>"}
