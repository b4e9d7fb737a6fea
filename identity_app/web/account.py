"""First contact: a one-time sign-in link (for users created with an API token and no
password) that leads to setting a password, and Django's password reset by email, offered only
when an email backend is configured."""

import functools
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login, update_session_auth_hash
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import SetPasswordForm
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import path, reverse_lazy
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from config.http import AuthenticatedHttpRequest
from identity_app.services import sign_in_link_redeem

DISABLED_EMAIL_BACKENDS = {"", "django.core.mail.backends.dummy.EmailBackend"}


def email_enabled() -> bool:
    return settings.EMAIL_BACKEND not in DISABLED_EMAIL_BACKENDS


def first_contact(request: HttpRequest) -> dict[str, Any]:
    """Context of the login page: whom to ask for an account, whether reset by email works."""
    return {"account_contact": settings.ACCOUNT_CONTACT, "password_reset_enabled": email_enabled()}


@never_cache
@require_http_methods(["GET", "POST"])
def sign_in_link(request: HttpRequest, secret: str) -> HttpResponse:
    """GET shows a button (a link preview or a mail scanner that fetches the page does not use
    the link up); POST uses it: the user is signed in and asked to set a password."""
    if request.method == "GET":
        return render(request, "registration/sign_in_link.html")
    user = sign_in_link_redeem(secret=secret)
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    request.session["set_password_allowed"] = True
    messages.success(request, _("You are signed in. Choose a password to log in next time."))
    return redirect("set_password")


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def set_password(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Django's ``SetPasswordForm`` (no old password): reached through a sign-in link, or by a
    user who has no usable password yet. Everyone else changes it knowing the old one."""
    if not (request.session.get("set_password_allowed") or not request.user.has_usable_password()):
        raise Http404("Use the password change form.")
    form = SetPasswordForm(request.user, request.POST or None)
    if request.method == "POST" and form.is_valid():
        form.save()
        update_session_auth_hash(request, form.user)
        request.session.pop("set_password_allowed", None)
        messages.success(request, _("Password set. You can now log in with it."))
        return redirect("web:home")
    return render(request, "registration/set_password.html", {"form": form}, status=400 if form.errors else 200)


def _when_email(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not email_enabled():
            raise Http404("Password reset by email is not set up on this server.")
        return view(request, *args, **kwargs)

    return wrapped


urlpatterns = [
    path("accounts/sign-in/<str:secret>/", sign_in_link, name="sign_in_link"),
    path("accounts/set-password/", set_password, name="set_password"),
    path(
        "accounts/password-reset/",
        _when_email(auth_views.PasswordResetView.as_view(success_url=reverse_lazy("password_reset_done"))),
        name="password_reset",
    ),
    path(
        "accounts/password-reset/sent/",
        _when_email(auth_views.PasswordResetDoneView.as_view()),
        name="password_reset_done",
    ),
    path(
        "accounts/reset/<uidb64>/<token>/",
        _when_email(auth_views.PasswordResetConfirmView.as_view(success_url=reverse_lazy("password_reset_complete"))),
        name="password_reset_confirm",
    ),
    path(
        "accounts/reset/done/",
        _when_email(auth_views.PasswordResetCompleteView.as_view()),
        name="password_reset_complete",
    ),
]
