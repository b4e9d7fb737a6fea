"""The memory home pages (docs/home.md): the overview at the site root with one search, a
source's items with bulk forget, an item with its provenance and chain, correct and forget,
forget everything with a typed confirmation, export and import. Thin: the same reads and
services as the API."""

from typing import cast
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpResponse, JsonResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views.decorators.http import require_http_methods

from config.errors import DomainError, InvalidInput, NotFound, PermissionDenied
from config.sentences import join_sentences
from config.web import service_call
from identity_app.permissions import CREATE_TASK, READ, project_require_permission, role_permissions
from identity_app.selectors import membership_role
from memory_app.home import services
from memory_app.home.export import home_export
from memory_app.home.items import home_items, may_change, may_correct, project_roles
from memory_app.home.markdown import export_markdown
from memory_app.home.overview import EXPIRING_SOON_DAYS, expiring_soon, home_overview
from memory_app.home.reads import item_last_read, read_views, source_reads
from memory_app.home.search import MAX_QUERY_CHARS, SEARCH_FIRST, SEARCH_LIMIT, home_search
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
    home_item_get,
    home_memories,
    source_memories,
    source_of,
    source_parse,
    source_title,
)
from memory_app.memories.filters import EXPIRED, MemoryFilter
from memory_app.memories.forms import IDENTITY_KIND_CHOICES, ExpiresAtFormField, MemoryCreateForm
from memory_app.memories.models import IDENTITY_KINDS, Kind, Origin, Status, Tier, live_q
from memory_app.memories.selectors import memory_chain
from memory_app.memories.services import memory_create
from memory_app.scoped import services as scoped_services
from memory_app.search.highlight import highlight

PAGE_SIZE = 25
STATUS_CHOICES = [
    *Status.choices,
    (EXPIRED, gettext_lazy("Expired")),
    ("all", gettext_lazy("All versions")),
]


def _items_url(source: str, **params) -> str:
    return f"{reverse('web:memory_home_items')}?{urlencode({'source': source, **params})}"


def _annotate(memories, *, user) -> list:
    """The home items (``home_items``), each with the link to its source's page."""
    items = home_items(user=user, memories=memories)
    for memory in items:
        vars(memory)["source_url"] = _items_url(vars(memory)["source_key"])
    return items


@login_required
@require_http_methods(["GET"])
def memory_home(request):
    overview = home_overview(user=request.user)
    query = request.GET.get("q", "").strip()[:MAX_QUERY_CHARS]
    found = None
    more_url = ""
    if query:
        # The best few first; "show more" asks for the longest list the search gives.
        showing_more = request.GET.get("more") == "1"
        limit = SEARCH_LIMIT if showing_more else SEARCH_FIRST
        found = home_search(user=request.user, query=query, limit=limit)
        _annotate([hit.memory for hit in found.hits], user=request.user)
        if found.more and not showing_more:
            more_url = f"{reverse('web:home')}?{urlencode({'q': query, 'more': '1'})}#home-results"
    expiring = _annotate(expiring_soon(user=request.user), user=request.user)
    for source in overview.sources:
        source.items_url = _items_url(source.ref.key) if source.ref.kind != SOURCE_NOTES else ""
    return render(
        request,
        "home/home.html",
        {
            "overview": overview,
            "query": query,
            "found": found,
            "more_url": more_url,
            "expiring": expiring,
            "expiring_days": EXPIRING_SOON_DAYS,
            "confirm_word": services.CONFIRM_WORD,
        },
    )


def _source_filter_params(request, source: SourceRef) -> dict:
    """The filters that were filled in (an empty select means "any"), in the order of the URL."""
    params = {"source": source.key}
    for name in ("q", "kind", "status"):
        value = request.GET.get(name, "").strip()[:MAX_QUERY_CHARS]
        if value:
            params[name] = value
    return params


def _source_header(user, source: SourceRef) -> dict:
    """Title, project and role of a source's page; whether the reader may add to it."""
    if source.kind == SOURCE_PROJECT:
        project = project_require_permission(user=user, project_id=source.ident, permission=READ)
        role = membership_role(user=user, project=project)
        return {
            "title": source_title(source, project_name=project.name),
            "project": project,
            "role": role,
            "can_add": CREATE_TASK in role_permissions(role),
        }
    names = chat_names(user=user, keys=[source.ident]) if source.kind == SOURCE_CHAT else {}
    return {
        "title": source_title(source, chat_names=names),
        "project": None,
        "role": None,
        "can_add": source.kind == SOURCE_USER,
        "chat_name": names.get(source.ident, ""),
    }


@login_required
@require_http_methods(["GET", "POST"])
def source_items(request):
    """The one list of a source: search, kind and status filters, the add form (own memories and
    projects the reader may write in), bulk forget, and why each item is known."""
    source = source_parse(request.GET.get("source") or request.POST.get("source", ""))
    if source.kind == SOURCE_NOTES:
        return redirect("web:workspace")
    header = _source_header(request.user, source)
    create_form, status = MemoryCreateForm(), 200
    if request.method == "POST":
        if not header["can_add"]:
            source_memories(user=request.user, source=source)  # 404 for a chat not bound to the user
            if source.kind == SOURCE_PROJECT:
                project_require_permission(user=request.user, project_id=source.ident, permission=CREATE_TASK)
            raise InvalidInput(_("Memories of this source are not added by hand."), code="invalid_source")
        create_form = MemoryCreateForm(request.POST)
        if create_form.is_valid():
            with service_call(create_form) as call:
                memory_create(
                    actor=request.user,
                    tier=Tier.PROJECT if source.kind == SOURCE_PROJECT else Tier.USER,
                    project_id=source.ident or None,
                    origin=Origin.MANUAL,
                    **create_form.cleaned_data,
                )
            if call.ok:
                messages.success(request, _("Memory saved."))
                return redirect(_items_url(source.key))
            status = call.status
        else:
            status = 400
    params = _source_filter_params(request, source)
    data = QueryDict(mutable=True)
    data.update({k: v for k, v in params.items() if k != "source"})
    filtered = MemoryFilter(
        data,
        queryset=source_memories(user=request.user, source=source).order_by("-created_at", "-id"),
    )
    page = Paginator(filtered.qs, PAGE_SIZE).get_page(request.GET.get("page"))
    page.object_list = _annotate(page.object_list, user=request.user)
    found = getattr(filtered, "search_result", None)
    for memory in page.object_list:
        memory.highlighted = highlight(memory.content, found.terms) if found is not None else None
    kinds = IDENTITY_KIND_CHOICES if source.kind in (SOURCE_USER, SOURCE_PROJECT) else Kind.choices
    return render(
        request,
        "home/items.html",
        {
            **header,
            "source": source,
            "page": page,
            "params": params,
            "kind_choices": kinds,
            "status_choices": STATUS_CHOICES,
            "filter_query": urlencode(params),
            "filtered": len(params) > 1,
            "searching": found is not None,
            "search_warnings": found.warnings if found is not None else [],
            "create_form": create_form,
            "any_changeable": any(m.can_change for m in page.object_list),
            "forget_all_url": f"{reverse('web:memory_home_forget_all')}?{urlencode({'source': source.key})}",
            "reads_url": _reads_url(source.key),
        },
        status=status,
    )


@login_required
@require_http_methods(["GET"])
def item_detail(request, memory_id):
    memory = home_item_get(user=request.user, memory_id=memory_id)
    chain = _annotate(memory_chain(memory=memory), user=request.user)
    memory = next(m for m in chain if m.pk == memory.pk)
    memory.last_read = item_last_read(user=request.user, memory=memory)
    memory.reads_url = _reads_url(memory.source_key)
    return render(request, "home/item.html", {"memory": memory, "chain": chain})


def _reads_url(source: str) -> str:
    return f"{reverse('web:memory_home_reads')}?{urlencode({'source': source})}"


READS_PAGE_SIZE = 50


@login_required
@require_http_methods(["GET"])
def reads_page(request):
    """Who read this source's items (or the notes file's versions), newest first, paginated."""
    source = source_parse(request.GET.get("source", ""))
    page = Paginator(source_reads(user=request.user, source=source), READS_PAGE_SIZE).get_page(request.GET.get("page"))
    page.object_list = read_views(user=request.user, reads=list(page.object_list))
    project_name = ""
    if source.kind == SOURCE_PROJECT:
        project_name = project_require_permission(user=request.user, project_id=source.ident, permission=READ).name
    return render(
        request,
        "home/reads.html",
        {
            "source": source,
            "title": source_title(source, project_name=project_name),
            "page": page,
            "filter_query": urlencode({"source": source.key}),
            "retention_days": settings.MEMORY_READS_RETENTION_DAYS,
            "items_url": _items_url(source.key) if source.kind != SOURCE_NOTES else "",
        },
    )


class CorrectForm(forms.Form):
    kind = forms.ChoiceField(choices=Kind.choices)
    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), label=gettext_lazy("Corrected content"))
    expires_at = ExpiresAtFormField()

    def __init__(self, *args, tier: str, **kwargs):
        super().__init__(*args, **kwargs)
        if tier in (Tier.USER, Tier.PROJECT):
            kind = cast(forms.ChoiceField, self.fields["kind"])
            kind.choices = [(v, label) for v, label in Kind.choices if v in IDENTITY_KINDS]


def _changeable(request, memory_id: str, *, correct: bool = False):
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
def item_correct(request, memory_id):
    memory = _changeable(request, memory_id, correct=True)
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
    chain = _annotate(memory_chain(memory=memory), user=request.user)
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
def item_change(request, memory_id):
    """Pause, resume or re-date an item in place: same id, no new version, the change recorded
    in its provenance (``memory_change``, whose write rule decides, as for correcting). A pause
    or resume comes from a button on the item or its source's list and leads back there."""
    memory = _changeable(request, memory_id, correct=True)
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
                return redirect(f"{_items_url(back)}#item-{memory.pk}")
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
    memory = _annotate([memory], user=request.user)[0]
    return render(request, "home/change.html", {"memory": memory, "form": form}, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def item_forget(request, memory_id):
    memory = _changeable(request, memory_id)
    if request.method == "POST":
        source = source_of(memory).key
        forgotten = services.home_item_forget(actor=request.user, memory_id=memory.pk)
        messages.success(
            request, ngettext("Forgot %(n)s memory.", "Forgot %(n)s memories.", len(forgotten)) % {"n": len(forgotten)}
        )
        return redirect(_items_url(source))
    chain = memory_chain(memory=memory)
    older = chain[: chain.index(memory)] if memory in chain else []
    memory = _annotate([memory], user=request.user)[0]
    return render(request, "home/forget.html", {"memory": memory, "older": older})


@login_required
@require_http_methods(["POST"])
def forget_selected(request):
    """Step one shows what was selected (nothing changes); step two (``confirmed``) forgets."""
    ids = request.POST.getlist("ids")[: services.MAX_SELECTED + 1]
    back = request.POST.get("source", "")
    back_url = _items_url(back) if back else reverse("web:home")
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
def forget_all(request):
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
def forget_undo(request, undo_id):
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
        return redirect(_items_url(f"{SOURCE_CHAT}:{report.chat_key}"))
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


@login_required
@require_http_methods(["GET"])
def export(request):
    data = home_export(user=request.user, now=timezone.now())
    stamp = timezone.now().strftime("%Y%m%d-%H%M")
    if request.GET.get("as") == "markdown":
        response = HttpResponse(export_markdown(data), content_type="text/markdown; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="memory-export-{stamp}.md"'
        return response
    response = JsonResponse(data, json_dumps_params={"ensure_ascii": False, "indent": 1})
    response["Content-Disposition"] = f'attachment; filename="memory-export-{stamp}.json"'
    return response


class ImportForm(forms.Form):
    file = forms.FileField(label=gettext_lazy("Export file (JSON)"))


@login_required
@require_http_methods(["GET", "POST"])
def import_page(request):
    form = ImportForm(request.POST or None, request.FILES or None)
    status, report = 200, None
    if request.method == "POST":
        if form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                if upload.size > services.MAX_IMPORT_BYTES:
                    raise InvalidInput(
                        _("The file is larger than %(n)s bytes.") % {"n": services.MAX_IMPORT_BYTES}, code="too_large"
                    )
                data = services.import_parse(upload.read(services.MAX_IMPORT_BYTES + 1))
                report = services.home_import(actor=request.user, data=data, origin=Origin.MANUAL)
            except DomainError as exc:
                form.add_error("file", exc.message)
                status = exc.status_code
        else:
            status = 400
    return render(request, "home/import.html", {"form": form, "report": report}, status=status)


urlpatterns = [
    path("", memory_home, name="home"),
    path("memory/items/", source_items, name="memory_home_items"),
    path("memory/items/<slug:memory_id>/", item_detail, name="memory_home_item"),
    path("memory/items/<slug:memory_id>/correct/", item_correct, name="memory_home_item_correct"),
    path("memory/items/<slug:memory_id>/change/", item_change, name="memory_home_item_change"),
    path("memory/items/<slug:memory_id>/forget/", item_forget, name="memory_home_item_forget"),
    path("memory/reads/", reads_page, name="memory_home_reads"),
    path("memory/forget/", forget_selected, name="memory_home_forget_selected"),
    path("memory/forget-all/", forget_all, name="memory_home_forget_all"),
    path("memory/forget-all/undo/<slug:undo_id>/", forget_undo, name="memory_home_forget_undo"),
    path("memory/export/", export, name="memory_home_export"),
    path("memory/import/", import_page, name="memory_home_import"),
]
