"""The home's pages to look around: the overview at the site root with one search, a source's
items, an item with its provenance and chain, and who read what."""

from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Page, Paginator
from django.http import QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from config.errors import InvalidInput
from config.http import AuthenticatedHttpRequest
from config.web import service_call
from identity_app.permissions import CREATE_TASK, READ, project_require_permission, role_permissions
from identity_app.selectors import membership_role
from memory_app.home import services
from memory_app.home.errors import ErrorCode
from memory_app.home.items import home_items
from memory_app.home.overview import EXPIRING_SOON_DAYS, expiring_soon, home_overview
from memory_app.home.reads import item_last_read, read_views, source_reads
from memory_app.home.search import MAX_QUERY_CHARS, SEARCH_FIRST, SEARCH_LIMIT, home_search
from memory_app.home.sources import (
    SOURCE_CHAT,
    SOURCE_NOTES,
    SOURCE_PROJECT,
    SOURCE_USER,
    SourceRef,
    chat_names,
    home_item_get,
    source_memories,
    source_parse,
    source_title,
)
from memory_app.memories.filters import EXPIRED, MemoryFilter
from memory_app.memories.forms import IDENTITY_KIND_CHOICES, MemoryCreateForm
from memory_app.memories.models import Kind, Origin, Status, Tier
from memory_app.memories.selectors import memory_chain
from memory_app.memories.services import memory_create
from memory_app.search.highlight import highlight

PAGE_SIZE = 25
STATUS_CHOICES = [
    *Status.choices,
    (EXPIRED, gettext_lazy("Expired")),
    ("all", gettext_lazy("All versions")),
]


def items_url(source: str, **params) -> str:
    return f"{reverse('web:memory_home_items')}?{urlencode({'source': source, **params})}"


def annotate(memories, *, user) -> list:
    """The home items (``home_items``), each with the link to its source's page."""
    items = home_items(user=user, memories=memories)
    for memory in items:
        vars(memory)["source_url"] = items_url(vars(memory)["source_key"])
    return items


@login_required
@require_http_methods(["GET"])
def memory_home(request: AuthenticatedHttpRequest):
    overview = home_overview(user=request.user)
    query = request.GET.get("q", "").strip()[:MAX_QUERY_CHARS]
    found = None
    more_url = ""
    if query:
        # The best few first; "show more" asks for the longest list the search gives.
        showing_more = request.GET.get("more") == "1"
        limit = SEARCH_LIMIT if showing_more else SEARCH_FIRST
        found = home_search(user=request.user, query=query, limit=limit)
        annotate([hit.memory for hit in found.hits], user=request.user)
        if found.more and not showing_more:
            more_url = f"{reverse('web:home')}?{urlencode({'q': query, 'more': '1'})}#home-results"
    expiring = annotate(expiring_soon(user=request.user), user=request.user)
    for source in overview.sources:
        source.items_url = items_url(source.ref.key) if source.ref.kind != SOURCE_NOTES else ""
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


def _source_filter_params(request: AuthenticatedHttpRequest, source: SourceRef) -> dict:
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
def source_items(request: AuthenticatedHttpRequest):
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
            raise InvalidInput(_("Memories of this source are not added by hand."), code=ErrorCode.INVALID_SOURCE)
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
                return redirect(items_url(source.key))
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
    page.object_list = annotate(page.object_list, user=request.user)
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
def item_detail(request: AuthenticatedHttpRequest, memory_id):
    memory = home_item_get(user=request.user, memory_id=memory_id)
    chain = annotate(memory_chain(memory=memory), user=request.user)
    memory = next(m for m in chain if m.pk == memory.pk)
    memory.last_read = item_last_read(user=request.user, memory=memory)
    memory.reads_url = _reads_url(memory.source_key)
    return render(request, "home/item.html", {"memory": memory, "chain": chain})


def _reads_url(source: str) -> str:
    return f"{reverse('web:memory_home_reads')}?{urlencode({'source': source})}"


READS_PAGE_SIZE = 50


@login_required
@require_http_methods(["GET"])
def reads_page(request: AuthenticatedHttpRequest):
    """Who read this source's items (or the notes file's versions), newest first, paginated."""
    source = source_parse(request.GET.get("source", ""))
    # Page[Any]: its reads are replaced by their views just below.
    page: Page[Any] = Paginator(source_reads(user=request.user, source=source), READS_PAGE_SIZE).get_page(
        request.GET.get("page")
    )
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
            "items_url": items_url(source.key) if source.kind != SOURCE_NOTES else "",
        },
    )
