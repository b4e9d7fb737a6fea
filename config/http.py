"""Request types for views that only a signed-in account reaches (``login_required``, DRF's
default ``IsAuthenticated``): their ``request.user`` is an account, not ``AnonymousUser``, so
mypy checks what a view reads from it (as healthchecks' ``AuthenticatedHttpRequest``).

Types only: nothing is constructed from these classes. ``User`` is the account model
(``settings.AUTH_USER_MODEL``), the same type as ``identity_app.models.User``; it is imported
from Django because ``config`` sits below the apps.
"""

from typing import cast

from django.contrib.auth.models import User
from django.http import HttpRequest
from rest_framework.request import Request


class AuthenticatedHttpRequest(HttpRequest):
    user: User


class AuthenticatedRequest(Request):
    user: User


def signed_in_user(request: HttpRequest) -> User:
    """``request.user`` where only a signed-in account gets in but the type cannot say so: a
    method of the admin site (which lets in active staff only) keeps Django's signature."""
    return cast(User, request.user)
