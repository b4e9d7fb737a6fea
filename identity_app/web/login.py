"""The web and admin login forms under brute-force protection.

django-axes counts failed logins per username and address (``AXES_*`` in settings). Once the
limit is reached, axes refuses even the right password until the cool-off has passed; these
forms say so on the login page itself, and ``lockout_response`` answers that page with 429.
"""

from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.utils.translation import ngettext


def lockout_message() -> str:
    minutes = max(1, round(settings.AXES_COOLOFF_TIME.total_seconds() / 60))
    return ngettext(
        "Too many failed login attempts for this account from your address. Logging in is blocked for "
        "%(n)s minute; try again later.",
        "Too many failed login attempts for this account from your address. Logging in is blocked for "
        "%(n)s minutes; try again later.",
        minutes,
    ) % {"n": minutes}


# What the mixin below is mixed into, for mypy only.
if TYPE_CHECKING:
    _AuthenticationForm = AuthenticationForm
else:
    _AuthenticationForm = object


class LockoutMessageMixin(_AuthenticationForm):
    def get_invalid_login_error(self) -> ValidationError:
        if getattr(self.request, "axes_locked_out", False):
            return ValidationError(lockout_message(), code="locked_out")
        return super().get_invalid_login_error()


class LoginForm(LockoutMessageMixin, AuthenticationForm):
    pass


class AdminLoginForm(LockoutMessageMixin, AdminAuthenticationForm):
    pass


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: object = None
) -> HttpResponse:
    """``AXES_LOCKOUT_CALLABLE``: the login page the view rendered (it already carries the
    lockout message), with status 429."""
    if original_response is None:
        return HttpResponse(lockout_message(), status=429, content_type="text/plain; charset=utf-8")
    original_response.status_code = 429
    return original_response
