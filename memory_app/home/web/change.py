"""Correct an item (a new version) and change it in place (expiry, pause)."""

from typing import cast

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from config.errors import PermissionDenied
from config.http import AuthenticatedHttpRequest
from config.web import service_call
from memory_app.home import services
from memory_app.home.items import may_change, may_correct, project_roles
from memory_app.home.sources import (
    home_item_get,
    source_parse,
)
from memory_app.home.web.browse import annotate, items_url
from memory_app.memories.forms import ExpiresAtFormField
from memory_app.memories.models import IDENTITY_KINDS, Kind, Origin, Tier
from memory_app.memories.selectors import memory_chain


class CorrectForm(forms.Form):
    kind = forms.ChoiceField(choices=Kind.choices)
    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), label=gettext_lazy("Corrected content"))
    expires_at = ExpiresAtFormField()

    def __init__(self, *args, tier: str, **kwargs):
        super().__init__(*args, **kwargs)
        if tier in (Tier.USER, Tier.PROJECT):
            kind = cast(forms.ChoiceField, self.fields["kind"])
            kind.choices = [(v, label) for v, label in Kind.choices if v in IDENTITY_KINDS]


def changeable(request: AuthenticatedHttpRequest, memory_id: str, *, correct: bool = False):
    """An item of the home the user may change; a project item their role may only read is a
    403, on the form as on its submission (the services decide again when it is sent), and so
    is correcting an item shared with everyone (it may only be forgotten)."""
    memory = home_item_get(user=request.user, memory_id=memory_id)
    roles = project_roles(user=request.user, project_ids=[memory.project_id] if memory.project_id else [])
    if not may_change(memory, roles=roles):
        raise PermissionDenied(_("Your role in this project may read its memories but not change them."))
    if correct and not may_correct(memory, roles=roles):
        raise PermissionDenied(_("An item shared with everyone can be forgotten here, not corrected."))
    return memory


@login_required
@require_http_methods(["GET", "POST"])
def item_correct(request: AuthenticatedHttpRequest, memory_id):
    memory = changeable(request, memory_id, correct=True)
    form = CorrectForm(
        request.POST or None,
        tier=memory.scope_type,
        initial={"kind": memory.kind, "content": memory.content, "expires_at": memory.expires_at},
    )
    status = 200
    if request.method == "POST":
        if form.is_valid():
            with service_call(form) as call:
                new = services.home_item_correct(
                    actor=request.user, memory_id=memory.pk, origin=Origin.MANUAL, **form.cleaned_data
                )
            if call.ok:
                messages.success(request, _("Memory corrected. The old version stays in the chain."))
                return redirect("web:memory_home_item", new.pk)
            status = call.status
            memory = home_item_get(user=request.user, memory_id=memory_id)
        else:
            status = 400
    chain = annotate(memory_chain(memory=memory), user=request.user)
    memory = next(m for m in chain if m.pk == memory.pk)
    return render(request, "home/correct.html", {"memory": memory, "chain": chain, "form": form}, status=status)


class ExpiryForm(forms.Form):
    """A new expiry in place (no new version); empty, or "no expiry" ticked: it never expires."""

    expires_at = ExpiresAtFormField(
        label=gettext_lazy("True until"),
        help_text=gettext_lazy("After this time agents no longer use or find it. Your time zone. Empty: no expiry."),
    )
    no_expiry = forms.BooleanField(required=False, label=gettext_lazy("It does not expire"))


PAUSE_ACTIONS = {"pause": True, "resume": False}


@login_required
@require_http_methods(["GET", "POST"])
def item_change(request: AuthenticatedHttpRequest, memory_id):
    """Pause, resume or re-date an item in place: same id, no new version, the change recorded
    in its provenance (``memory_change``, whose write rule decides, as for correcting). A pause
    or resume comes from a button on the item or its source's list and leads back there."""
    memory = changeable(request, memory_id, correct=True)
    form, status = ExpiryForm(initial={"expires_at": memory.expires_at}), 200
    if request.method == "POST":
        action = request.POST.get("action", "")
        if action in PAUSE_ACTIONS:
            services.home_item_change(actor=request.user, memory_id=memory.pk, paused=PAUSE_ACTIONS[action])
            messages.success(
                request,
                _("Paused: no agent uses this memory until you resume it. It stays in your lists.")
                if PAUSE_ACTIONS[action]
                else _("Resumed: agents may use this memory again."),
            )
            back = request.POST.get("source", "")
            if back:
                source_parse(back)  # only a source of the home: never a link to somewhere else
                return redirect(f"{items_url(back)}#item-{memory.pk}")
            return redirect("web:memory_home_item", memory.pk)
        form = ExpiryForm(request.POST)
        if form.is_valid():
            expires_at = None if form.cleaned_data["no_expiry"] else form.cleaned_data["expires_at"]
            with service_call(form) as call:
                services.home_item_change(actor=request.user, memory_id=memory.pk, expires_at=expires_at)
            if call.ok:
                messages.success(
                    request,
                    _("Expiry removed; the memory is unchanged otherwise, with no new version.")
                    if expires_at is None
                    else _("Expiry changed; the memory is unchanged otherwise, with no new version."),
                )
                return redirect("web:memory_home_item", memory.pk)
            status = call.status
        else:
            status = 400
    memory = annotate([memory], user=request.user)[0]
    return render(request, "home/change.html", {"memory": memory, "form": form}, status=status)
