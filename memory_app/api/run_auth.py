"""``Authorization: Run <token>`` for the run-scoped endpoints only (context, tools, heartbeat,
finish). A run token never authenticates anything else."""

from rest_framework import authentication, exceptions, permissions

from memory_app.runs import RunCredential, run_credential_from_token


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
        credential = run_credential_from_token(token)
        if credential is None:
            raise exceptions.AuthenticationFailed("Invalid run token, or it was replaced by a newer claim.")
        from memory_app.models import AgentRun

        user = AgentRun.objects.select_related("user").only("user").get(pk=credential.run_id).user
        if not user.is_active:
            raise exceptions.AuthenticationFailed("Invalid run token.")
        return user, credential

    def authenticate_header(self, request):
        return self.keyword


class HasRunCredential(permissions.BasePermission):
    def has_permission(self, request, view):
        return isinstance(request.auth, RunCredential)
