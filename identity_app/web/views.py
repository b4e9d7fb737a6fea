"""Identity pages: profile, and API tokens (the key shown once)."""

import json
import zoneinfo
from functools import lru_cache

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import path
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from config.web import service_call
from identity_app import selectors, services
from identity_app.permissions import is_service_principal
from identity_app.selectors import profile_get
from identity_app.services import profile_update
from identity_app.web.forms import ProfileForm, TokenCreateForm

MAX_TOKENS_SHOWN = 200


@lru_cache(maxsize=1)
def _timezone_names() -> list[str]:
    return sorted(zoneinfo.available_timezones())


@login_required
@require_http_methods(["GET", "POST"])
def profile(request):
    profile = profile_get(user=request.user)
    status = 200
    if request.method == "POST":
        form = ProfileForm(request.POST)
        if form.is_valid():
            with service_call(form) as call:
                profile_update(user=request.user, **form.cleaned_data)
            if call.ok:
                messages.success(request, "Profile saved.")
                return redirect("web:profile")
            status = call.status
        else:
            status = 400
    else:
        form = ProfileForm(
            initial={
                "display_name": profile.display_name,
                "timezone": profile.timezone,
                "preferences": json.dumps(profile.preferences, indent=2, ensure_ascii=False, sort_keys=True),
            }
        )
    return render(
        request,
        "identity_app/profile.html",
        {"form": form, "profile": profile, "timezones": _timezone_names()},
        status=status,
    )


# --- API tokens ----------------------------------------------------------------------------
def _token_form(request, data=None) -> TokenCreateForm:
    return TokenCreateForm(
        data,
        max_days=settings.API_TOKEN_MAX_DAYS,
        default_days=settings.API_TOKEN_DEFAULT_DAYS,
        limits=is_service_principal(request.user),
    )


def _tokens_page(request, *, form, issued=None, status=200):
    tokens = list(selectors.tokens_visible(user=request.user)[:MAX_TOKENS_SHOWN])
    names = selectors.usernames_by_id({i for t in tokens for i in t.only_user_ids or ()})
    now = timezone.now()
    for token in tokens:
        token.state_now = token.state(now)
        token.only_usernames = [names.get(i, f"#{i}") for i in token.only_user_ids or ()]
    response = render(
        request,
        "identity_app/tokens.html",
        {"tokens": tokens, "form": form, "issued": issued, "max_days": settings.API_TOKEN_MAX_DAYS},
        status=status,
    )
    if issued:
        response["Cache-Control"] = "no-store"  # the key is on this page and nowhere else
    return response


@login_required
@require_http_methods(["GET", "POST"])
def tokens(request):
    """The caller's API tokens and a form for a new one; a new key is shown on this response only."""
    if request.method != "POST":
        return _tokens_page(request, form=_token_form(request))
    form = _token_form(request, request.POST)
    if not form.is_valid():
        return _tokens_page(request, form=form, status=400)
    with service_call(form) as call:
        token, key = services.token_create(actor=request.user, **form.cleaned_data)
    if not call.ok:
        return _tokens_page(request, form=form, status=call.status)
    return _tokens_page(request, form=_token_form(request), issued={"token": token, "key": key})


@login_required
@require_http_methods(["POST"])
def token_revoke(request, token_id):
    token = services.token_revoke(actor=request.user, token_id=token_id)
    messages.success(request, f"Token {token.prefix}… revoked; it no longer works.")
    return redirect("web:tokens")


@login_required
@require_http_methods(["POST"])
def token_rotate(request, token_id):
    token, key = services.token_rotate(actor=request.user, token_id=token_id)
    return _tokens_page(request, form=_token_form(request), issued={"token": token, "key": key, "rotated": True})


urlpatterns = [
    path("profile/", profile, name="profile"),
    path("tokens/", tokens, name="tokens"),
    path("tokens/<int:token_id>/revoke/", token_revoke, name="token_revoke"),
    path("tokens/<int:token_id>/rotate/", token_rotate, name="token_rotate"),
]
