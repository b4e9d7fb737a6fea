"""Identity pages: profile, API tokens (the key shown once), invitations received, and a
project's members with its invitations."""

import json
import zoneinfo
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import path
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods
from django.views.i18n import set_language

from config.http import AuthenticatedHttpRequest
from config.web import service_call
from identity_app import selectors, services
from identity_app.models import TOKEN_STATE_LABELS
from identity_app.permissions import MANAGE, READ, is_service_principal, project_require_permission, role_permissions
from identity_app.selectors import profile_get
from identity_app.services import profile_update
from identity_app.web.forms import InviteForm, ProfileForm, TokenCreateForm

MAX_TOKENS_SHOWN = 200
MAX_INVITATIONS_SHOWN = 200
MAX_MEMBERS_SHOWN = 500
# The same words whether or not the username exists (or is already a member).
INVITED_MESSAGE = _("If an account with this username exists and is not a member yet, it has been invited.")


@lru_cache(maxsize=1)
def _timezone_names() -> list[str]:
    return sorted(zoneinfo.available_timezones())


@login_required
@require_http_methods(["GET", "POST"])
def profile(request: AuthenticatedHttpRequest) -> HttpResponse:
    profile = profile_get(user=request.user)
    status = 200
    if request.method == "POST":
        form = ProfileForm(request.POST)
        if form.is_valid():
            with service_call(form) as call:
                profile_update(user=request.user, **form.cleaned_data)
            if call.ok:
                messages.success(request, _("Profile saved."))
                return redirect("web:profile")
            status = call.status
        else:
            status = 400
    else:
        form = ProfileForm(
            initial={
                "display_name": profile.display_name,
                "timezone": profile.timezone,
                "language": profile.language,
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
def _token_form(request: AuthenticatedHttpRequest, data: QueryDict | None = None) -> TokenCreateForm:
    return TokenCreateForm(
        data,
        max_days=settings.API_TOKEN_MAX_DAYS,
        default_days=settings.API_TOKEN_DEFAULT_DAYS,
        limits=is_service_principal(request.user),
    )


def _tokens_page(
    request: AuthenticatedHttpRequest,
    *,
    form: TokenCreateForm,
    issued: dict[str, Any] | None = None,
    status: int = 200,
) -> HttpResponse:
    tokens = list(selectors.tokens_visible(user=request.user)[:MAX_TOKENS_SHOWN])
    names = selectors.usernames_by_id({i for t in tokens for i in t.only_user_ids or ()})
    now = timezone.now()
    for token in tokens:
        token.state_now = token.state(now)
        token.state_label = TOKEN_STATE_LABELS[token.state_now]
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
def tokens(request: AuthenticatedHttpRequest) -> HttpResponse:
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


def _token_confirm(request: AuthenticatedHttpRequest, token_id: str, *, action: str) -> HttpResponse:
    """Revoking or rotating kills the key an agent may be using: the link (GET) or a bare POST
    shows what will happen; only the confirmation form (``confirmed=yes``) does it."""
    token = selectors.token_get(user=request.user, token_id=token_id)
    return render(request, "identity_app/token_confirm.html", {"token": token, "action": action})


@login_required
@require_http_methods(["GET", "POST"])
def token_revoke(request: AuthenticatedHttpRequest, token_id: str) -> HttpResponse:
    if request.method != "POST" or request.POST.get("confirmed") != "yes":
        return _token_confirm(request, token_id, action="revoke")
    token = services.token_revoke(actor=request.user, token_id=token_id)
    messages.success(request, _("Token %(prefix)s… revoked; it no longer works.") % {"prefix": token.prefix})
    return redirect("web:tokens")


@login_required
@require_http_methods(["GET", "POST"])
def token_rotate(request: AuthenticatedHttpRequest, token_id: str) -> HttpResponse:
    if request.method != "POST" or request.POST.get("confirmed") != "yes":
        return _token_confirm(request, token_id, action="rotate")
    token, key = services.token_rotate(actor=request.user, token_id=token_id)
    return _tokens_page(request, form=_token_form(request), issued={"token": token, "key": key, "rotated": True})


# --- invitations ---------------------------------------------------------------------------
@login_required
@require_http_methods(["GET"])
def invitations(request: AuthenticatedHttpRequest) -> HttpResponse:
    pending = list(selectors.invitations_pending_for(user=request.user)[:MAX_INVITATIONS_SHOWN])
    return render(request, "identity_app/invitations.html", {"invitations": pending})


@login_required
@require_http_methods(["POST"])
def invitation_accept(request: AuthenticatedHttpRequest, invitation_id: str) -> HttpResponse:
    membership = services.invitation_accept(actor=request.user, invitation_id=invitation_id)
    messages.success(
        request,
        _("You joined %(project)s as %(role)s.")
        % {"project": membership.project.name, "role": membership.get_role_display()},
    )
    return redirect("web:project_members", membership.project_id)


@login_required
@require_http_methods(["POST"])
def invitation_decline(request: AuthenticatedHttpRequest, invitation_id: str) -> HttpResponse:
    services.invitation_decline(actor=request.user, invitation_id=invitation_id)
    messages.success(request, _("Invitation declined."))
    return redirect("web:invitations")


@login_required
@require_http_methods(["GET", "POST"])
def project_members(request: AuthenticatedHttpRequest, project_id: str) -> HttpResponse:
    """Members (anyone with ``read``); inviting and the invitations (``manage``)."""
    writing = request.method == "POST"  # a member without ``manage`` gets 403 before any form error
    project = project_require_permission(
        user=request.user, project_id=project_id, permission=MANAGE if writing else READ
    )
    can_manage = MANAGE in role_permissions(selectors.membership_role(user=request.user, project=project))
    form, status = InviteForm(), 200
    if writing:
        form = InviteForm(request.POST)
        if form.is_valid():
            with service_call(form) as call:
                services.invitation_create(actor=request.user, project_id=project.pk, **form.cleaned_data)
            if call.ok:
                messages.success(request, INVITED_MESSAGE)
                return redirect("web:project_members", project.pk)
            status = call.status
        else:
            status = 400
    context = {
        "project": project,
        "members": selectors.project_members(project=project)[:MAX_MEMBERS_SHOWN],
        "can_manage": can_manage,
        "form": form,
        "invitations": (
            selectors.project_invitations(user=request.user, project_id=project.pk)[:MAX_INVITATIONS_SHOWN]
            if can_manage
            else []
        ),
    }
    return render(request, "identity_app/project_members.html", context, status=status)


@login_required
@require_http_methods(["POST"])
def project_invitation_cancel(request: AuthenticatedHttpRequest, project_id: str, invitation_id: str) -> HttpResponse:
    services.invitation_cancel(actor=request.user, project_id=project_id, invitation_id=invitation_id)
    messages.success(request, _("Invitation cancelled."))
    return redirect("web:project_members", project_id)


# --- the interface language -------------------------------------------------------------------
@require_http_methods(["POST"])
def language_set(request: HttpRequest) -> HttpResponse:
    """The language switch: Django's ``set_language`` (the cookie, and back to ``next`` when it is
    a page of this site), and for a signed-in user the profile too, so the choice follows them."""
    response = set_language(request)
    language = request.POST.get("language")
    if request.user.is_authenticated and language in {code for code, _name in settings.LANGUAGES}:
        profile_update(user=request.user, language=language)
    return response


urlpatterns = [
    path("language/", language_set, name="set_language"),
    path("profile/", profile, name="profile"),
    path("tokens/", tokens, name="tokens"),
    path("tokens/<int:token_id>/revoke/", token_revoke, name="token_revoke"),
    path("tokens/<int:token_id>/rotate/", token_rotate, name="token_rotate"),
    path("invitations/", invitations, name="invitations"),
    path("invitations/<slug:invitation_id>/accept/", invitation_accept, name="invitation_accept"),
    path("invitations/<slug:invitation_id>/decline/", invitation_decline, name="invitation_decline"),
    path("projects/<slug:project_id>/members/", project_members, name="project_members"),
    path(
        "projects/<slug:project_id>/invitations/<slug:invitation_id>/cancel/",
        project_invitation_cancel,
        name="project_invitation_cancel",
    ),
]
