"""The chats page: the user's bound bot chats, each with a readable name they choose, its key and
how many memories the bots keep there; the memories themselves are listed on the memory home's
one list per source."""

from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpResponsePermanentRedirect
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from config.http import AuthenticatedHttpRequest
from config.web import service_call
from identity_app.chat_bindings import MAX_DISPLAY_NAME, chat_binding_rename
from memory_app.memories.models import live_q
from memory_app.scoped.selectors import bound_chats, chat_memories_visible

MAX_CHATS = 50


class RenameForm(forms.Form):
    chat = forms.CharField(widget=forms.HiddenInput, max_length=200)
    display_name = forms.CharField(required=False, max_length=MAX_DISPLAY_NAME, label=gettext_lazy("Name"))
    # "items": back to the chat's own list (the rename form at its top), else this page.
    back = forms.ChoiceField(choices=[("", ""), ("items", "items")], required=False, widget=forms.HiddenInput)


def chat_items_url(chat_key: str, **params) -> str:
    return f"{reverse('web:memory_home_items')}?{urlencode({'source': f'chat:{chat_key}', **params})}"


@login_required
@require_http_methods(["GET", "POST"])
def chat_memories(request: AuthenticatedHttpRequest):
    """The user's bound chats; POST renames one. The old ``?chat=`` list leads to that chat's list."""
    if request.method == "GET" and request.GET.get("chat"):
        params = {k: request.GET[k][:200] for k in ("status", "page") if request.GET.get(k)}
        return HttpResponsePermanentRedirect(chat_items_url(request.GET["chat"][:200], **params))
    form, status = RenameForm(request.POST or None), 200
    if request.method == "POST":
        if form.is_valid():
            with service_call(form) as call:
                binding = chat_binding_rename(
                    actor=request.user,
                    chat_key=form.cleaned_data["chat"],
                    display_name=form.cleaned_data["display_name"],
                )
            if call.ok:
                messages.success(request, _("Chat renamed to “%(name)s”.") % {"name": binding.name})
                if form.cleaned_data["back"] == "items":
                    return redirect(chat_items_url(binding.chat_key))
                return redirect("web:chat_memories")
            status = call.status
        else:
            status = 400
    chats = list(bound_chats(user=request.user)[:MAX_CHATS])
    counts = dict(
        chat_memories_visible(user=request.user, chat_keys=[c.chat_key for c in chats])
        .filter(live_q())
        .order_by()
        .values_list("scope_id")
        .annotate(n=Count("pk"))
    )
    for chat in chats:
        chat.active_count = counts.get(chat.chat_key, 0)
        chat.items_url = chat_items_url(chat.chat_key)
    return render(request, "scoped/chat_memories.html", {"chats": chats, "form": form}, status=status)


urlpatterns = [
    path("chats/", chat_memories, name="chat_memories"),
]
