"""Forget an item, a selection, or everything of a source with a typed confirmation; undo
forgetting a chat."""

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views.decorators.http import require_http_methods

from config.errors import InvalidInput, NotFound
from config.http import AuthenticatedHttpRequest
from config.sentences import join_sentences
from config.web import service_call
from identity_app.permissions import CREATE_TASK, project_require_permission
from memory_app.home import services
from memory_app.home.overview import home_overview
from memory_app.home.sources import (
    SOURCE_ALL,
    SOURCE_AUTO,
    SOURCE_CHAT,
    SOURCE_NOTES,
    SOURCE_PROJECT,
    SOURCE_SHARED,
    SOURCE_USER,
    SourceRef,
    chat_names,
    home_memories,
    source_memories,
    source_of,
    source_parse,
    source_title,
)
from memory_app.home.web.browse import annotate, items_url
from memory_app.home.web.change import changeable
from memory_app.memories.models import Tier, live_q
from memory_app.memories.selectors import memory_chain
from memory_app.scoped import services as scoped_services


@login_required
@require_http_methods(["GET", "POST"])
def item_forget(request: AuthenticatedHttpRequest, memory_id):
    memory = changeable(request, memory_id)
    if request.method == "POST":
        source = source_of(memory).key
        forgotten = services.home_item_forget(actor=request.user, memory_id=memory.pk)
        messages.success(
            request, ngettext("Forgot %(n)s memory.", "Forgot %(n)s memories.", len(forgotten)) % {"n": len(forgotten)}
        )
        return redirect(items_url(source))
    chain = memory_chain(memory=memory)
    older = chain[: chain.index(memory)] if memory in chain else []
    memory = annotate([memory], user=request.user)[0]
    return render(request, "home/forget.html", {"memory": memory, "older": older})


@login_required
@require_http_methods(["POST"])
def forget_selected(request: AuthenticatedHttpRequest):
    """Step one shows what was selected (nothing changes); step two (``confirmed``) forgets."""
    ids = request.POST.getlist("ids")[: services.MAX_SELECTED + 1]
    back = request.POST.get("source", "")
    back_url = items_url(back) if back else reverse("web:home")
    if not ids:
        messages.error(request, _("Select at least one memory to forget."))
        return redirect(back_url)
    if request.POST.get("confirmed") == "yes":
        forgotten = services.home_forget_selected(actor=request.user, memory_ids=ids)
        messages.success(
            request, ngettext("Forgot %(n)s memory.", "Forgot %(n)s memories.", len(forgotten)) % {"n": len(forgotten)}
        )
        return redirect(back_url)
    if len(ids) > services.MAX_SELECTED:
        raise InvalidInput(_("Select at most %(n)s memories at once.") % {"n": services.MAX_SELECTED})
    selected = list(home_memories(user=request.user).filter(pk__in=ids).order_by("-created_at", "-id"))
    if len(selected) != len(set(ids)):
        raise NotFound("Memory not found.")
    return render(request, "home/forget_selected.html", {"selected": selected, "source": back, "back_url": back_url})


class ForgetAllForm(forms.Form):
    source = forms.CharField(widget=forms.HiddenInput, max_length=250)
    confirm = forms.CharField(max_length=20, required=False, strip=False, label=gettext_lazy("Type FORGET to confirm"))


@login_required
@require_http_methods(["GET", "POST"])
def forget_all(request: AuthenticatedHttpRequest):
    data = request.POST if request.method == "POST" else None
    source_value = (data or request.GET).get("source", SOURCE_ALL)
    source = source_parse(source_value, allow_all=True)
    form = ForgetAllForm(data, initial={"source": source.key})
    status = 200
    if request.method == "POST" and form.is_valid():
        with service_call(form) as call:
            report = services.home_forget_source(
                actor=request.user, source=form.cleaned_data["source"], confirm=form.cleaned_data["confirm"]
            )
        if call.ok:
            parts = [
                ngettext("Forgot %(n)s memory.", "Forgot %(n)s memories.", len(report.forgotten))
                % {"n": len(report.forgotten)}
            ]
            if report.notes_deleted:
                parts.append(_("The notes file is deleted."))
            if report.remaining:
                parts.append(_("%(n)s more are left: forget everything again to continue.") % {"n": report.remaining})
            if report.kept_read_only:
                parts.append(
                    _("%(n)s auto-extracted memories stay: you may no longer write in their project.")
                    % {"n": report.kept_read_only}
                )
            messages.success(request, join_sentences(*parts))
            if report.undo is not None:
                return redirect("web:memory_home_forget_undo", report.undo.pk)
            return redirect("web:home")
        status = call.status
    elif request.method == "POST":
        status = 400
    counts = _forget_all_counts(request.user, source)
    return render(
        request,
        "home/forget_all.html",
        {"form": form, "source": source, "counts": counts, "confirm_word": services.CONFIRM_WORD},
        status=status,
    )


CHAT_ITEMS_SHOWN = 50


@login_required
@require_http_methods(["GET", "POST"])
def forget_undo(request: AuthenticatedHttpRequest, undo_id):
    """After a whole chat was forgotten: what went, and for a while a way back (``undo``) or
    to forget it for good at once (``drop``). Another user's, or one used or dropped: 404."""
    if request.method == "POST":
        if request.POST.get("action") == "drop":
            scoped_services.chat_forget_undo_drop(actor=request.user, undo_id=undo_id)
            messages.success(request, _("The chat is forgotten for good; it can no longer be brought back."))
            return redirect("web:home")
        report = scoped_services.chat_forget_undo(actor=request.user, undo_id=undo_id)
        messages.success(
            request,
            ngettext(
                "Undone: %(n)s memory of the chat is back, with its reviews.",
                "Undone: %(n)s memories of the chat are back, with their reviews.",
                len(report.restored),
            )
            % {"n": len(report.restored)},
        )
        return redirect(items_url(f"{SOURCE_CHAT}:{report.chat_key}"))
    undo = scoped_services.chat_forget_undo_get(actor=request.user, undo_id=undo_id)
    source = SourceRef(SOURCE_CHAT, undo.chat_key)
    return render(
        request,
        "home/forget_undo.html",
        {
            "undo": undo,
            "title": source_title(source, chat_names=chat_names(user=request.user, keys=[undo.chat_key])),
            "open": undo.expires_at > timezone.now(),
        },
    )


def _forget_all_counts(user, source: SourceRef) -> dict:
    """What the page says will go: rows per kind of source (notes: whether the file exists)."""
    overview = home_overview(user=user)
    by_key = {s.ref.key: s for s in overview.sources}
    if source.kind == SOURCE_PROJECT:
        # 404 for a project the user may not read, 403 where their role may not forget.
        project_require_permission(user=user, project_id=source.ident, permission=CREATE_TASK)
        mine = (
            home_memories(user=user).filter(scope_type=Tier.PROJECT, project_id=source.ident, created_by=user).count()
        )
        return {"title": by_key[source.key].title if source.key in by_key else source.key, "rows": mine}
    if source.kind == SOURCE_CHAT:
        rows = source_memories(user=user, source=source)  # 404 for a chat not bound to the user
        items = rows.filter(live_q())
        found = by_key.get(source.key)
        # A chat too large to keep for an undo is forgotten without one: the page says so.
        undoable = rows.count() <= scoped_services.UNDO_MAX_ROWS
        return {
            "title": found.title if found else source.key,
            "parts": [found] if found else [],
            "items": list(items.order_by("-created_at", "-id")[:CHAT_ITEMS_SHOWN]),
            "more_items": max(0, (found.count if found else 0) - CHAT_ITEMS_SHOWN),
            "pending": scoped_services.chat_pending_reviews(chat_key=source.ident),
            "undo_minutes": settings.MEMORY_FORGET_UNDO_MINUTES if undoable else 0,
        }
    if source.kind == SOURCE_ALL:
        kinds = (
            SOURCE_USER,
            SOURCE_AUTO,
            SOURCE_CHAT,
            SOURCE_SHARED,
            SOURCE_NOTES,
        )
        parts = [s for s in overview.sources if s.ref.kind in kinds]
        return {"title": _("everything"), "parts": parts}
    found = by_key.get(source.key)
    return {"title": found.title if found else source.key, "parts": [found] if found else []}
