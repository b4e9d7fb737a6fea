"""Server-rendered pages for identity memories (user and project tiers).

Thin: every read is a selector, every write a service; the same rules as the API apply
because they are the same functions. User-tier and project-tier pages share one set of views
parameterised by a ``MemoryScope``.
"""

from dataclasses import dataclass
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import QueryDict
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.translation import gettext, ngettext
from django.views.decorators.http import require_http_methods

from config.web import service_call
from identity_app.models import Project
from identity_app.permissions import CREATE_TASK, READ, project_require_permission, role_permissions
from identity_app.selectors import membership_role, projects_with_my_role
from identity_app.services import project_create
from memory_app.memories import selectors, services
from memory_app.memories.filters import MemoryFilter
from memory_app.memories.forms import MemoryCorrectForm, MemoryCreateForm, MemoryFilterForm, ProjectCreateForm
from memory_app.memories.models import Memory, Origin, Status, Tier, live_q
from memory_app.search.highlight import highlight

PAGE_SIZE = 20
PROJECTS_PAGE_SIZE = 50
MAX_QUERY_CHARS = 200  # MemoryFilter's limit for ``q``


@dataclass
class MemoryScope:
    """Which tier a page works on, and what the viewer may do there."""

    tier: str
    can_write: bool
    project: Project | None = None
    role: str | None = None

    @property
    def title(self) -> str:
        if self.project is None:
            return gettext("My memories")
        return gettext("Project %(name)s: memories") % {"name": self.project.name}

    def _args(self, *extra) -> list:
        return [*([self.project.pk] if self.project else []), *extra]

    URL_NAMES = {
        "list": ("web:my_memories", "web:project_memories"),
        "detail": ("web:my_memory", "web:project_memory"),
        "correct": ("web:my_memory_correct", "web:project_memory_correct"),
        "forget": ("web:my_memory_forget", "web:project_memory_forget"),
    }

    def url(self, name: str, memory_id: str | None = None) -> str:
        mine, project = self.URL_NAMES[name]
        return reverse(mine if self.project is None else project, args=self._args(*([memory_id] if memory_id else [])))

    def queryset(self, user):
        if self.project is None:
            return selectors.user_memories(user=user)
        return selectors.project_memories(user=user, project_id=self.project.pk)

    def get(self, user, memory_id: str) -> Memory:
        if self.project is None:
            return selectors.user_memory_get(user=user, memory_id=memory_id)
        return selectors.project_memory_get(user=user, project_id=self.project.pk, memory_id=memory_id)

    @property
    def url_list(self) -> str:
        return self.url("list")

    @property
    def project_id(self) -> str | None:
        return self.project.pk if self.project else None


def _user_scope(request) -> MemoryScope:
    return MemoryScope(tier=Tier.USER, can_write=True)


def _project_scope(request, project_id: str, *, write: bool) -> MemoryScope:
    """Non-members get 404; with ``write`` a member lacking ``create_task`` gets 403."""
    project = project_require_permission(
        user=request.user, project_id=project_id, permission=CREATE_TASK if write else READ
    )
    role = membership_role(user=request.user, project=project)
    return MemoryScope(tier=Tier.PROJECT, project=project, role=role, can_write=CREATE_TASK in role_permissions(role))


def _with_urls(scope: MemoryScope, memories):
    for memory in memories:
        memory.detail_url = scope.url("detail", memory.pk)
        memory.correct_url = scope.url("correct", memory.pk)
        memory.forget_url = scope.url("forget", memory.pk)
    return memories


def _filter_params(request) -> QueryDict:
    """The list filters that were actually filled in (empty selects mean "any")."""
    params = QueryDict(mutable=True)
    for name in ("q", "kind", "status"):
        value = request.GET.get(name, "").strip()[:MAX_QUERY_CHARS]
        if value:
            params[name] = value
    return params


def _memory_list(request, scope: MemoryScope):
    create_form = MemoryCreateForm()
    status = 200
    if request.method == "POST":
        create_form = MemoryCreateForm(request.POST)
        if create_form.is_valid():
            with service_call(create_form) as call:
                services.memory_create(
                    actor=request.user,
                    tier=scope.tier,
                    project_id=scope.project_id,
                    origin=Origin.MANUAL,
                    **create_form.cleaned_data,
                )
            if call.ok:
                messages.success(request, gettext("Memory saved."))
                return redirect(scope.url("list"))
            status = call.status
        else:
            status = 400
    params = _filter_params(request)
    filtered = MemoryFilter(params, queryset=scope.queryset(request.user).order_by("-created_at", "-id"))
    page = Paginator(filtered.qs, PAGE_SIZE).get_page(request.GET.get("page"))
    _with_urls(scope, page.object_list)
    found = getattr(filtered, "search_result", None)
    if found is not None:
        for memory in page.object_list:
            memory.highlighted = highlight(memory.content, found.terms)
    return render(
        request,
        "memories/memory_list.html",
        {
            "scope": scope,
            "page": page,
            "filter_form": MemoryFilterForm(params or None, initial={"status": Status.ACTIVE}),
            "filter_query": urlencode(params),
            "create_form": create_form,
            "search_warnings": found.warnings if found is not None else [],
            "searching": found is not None,
        },
        status=status,
    )


def _memory_detail(request, scope: MemoryScope, memory_id: str):
    memory = scope.get(request.user, memory_id)
    chain = _with_urls(scope, selectors.memory_chain(memory=memory))
    _with_urls(scope, [memory])
    return render(request, "memories/memory_detail.html", {"scope": scope, "memory": memory, "chain": chain})


def _memory_correct(request, scope: MemoryScope, memory_id: str):
    memory = scope.get(request.user, memory_id)
    form = MemoryCorrectForm(initial={"kind": memory.kind, "content": memory.content, "expires_at": memory.expires_at})
    status = 200
    if request.method == "POST":
        form = MemoryCorrectForm(request.POST)
        if form.is_valid():
            with service_call(form) as call:
                new = services.memory_supersede(
                    actor=request.user,
                    memory_id=memory.pk,
                    tier=scope.tier,
                    project_id=scope.project_id,
                    origin=Origin.MANUAL,
                    **form.cleaned_data,
                )
            if call.ok:
                messages.success(request, gettext("Memory corrected. The old version stays in the chain."))
                return redirect(scope.url("detail", new.pk))
            status = call.status
            memory = scope.get(request.user, memory_id)  # it may have changed meanwhile
        else:
            status = 400
    chain = _with_urls(scope, selectors.memory_chain(memory=memory))
    return render(
        request,
        "memories/memory_correct.html",
        {"scope": scope, "memory": memory, "chain": chain, "form": form},
        status=status,
    )


def _memory_forget(request, scope: MemoryScope, memory_id: str):
    memory = scope.get(request.user, memory_id)
    if request.method == "POST":
        forgotten = services.memory_forget(
            actor=request.user, memory_id=memory.pk, tier=scope.tier, project_id=scope.project_id
        )
        count = len(forgotten)
        messages.success(request, ngettext("Forgot %(n)s memory.", "Forgot %(n)s memories.", count) % {"n": count})
        return redirect(scope.url("list"))
    older = selectors.memory_chain(memory=memory)
    older = older[: older.index(memory)] if memory in older else []
    _with_urls(scope, [memory])
    return render(request, "memories/memory_forget.html", {"scope": scope, "memory": memory, "older": older})


@login_required
@require_http_methods(["GET", "POST"])
def my_memories(request):
    return _memory_list(request, _user_scope(request))


@login_required
@require_http_methods(["GET"])
def my_memory(request, memory_id):
    return _memory_detail(request, _user_scope(request), memory_id)


@login_required
@require_http_methods(["GET", "POST"])
def my_memory_correct(request, memory_id):
    return _memory_correct(request, _user_scope(request), memory_id)


@login_required
@require_http_methods(["GET", "POST"])
def my_memory_forget(request, memory_id):
    return _memory_forget(request, _user_scope(request), memory_id)


def _projects_with_role(user):
    return (
        projects_with_my_role(user=user)
        .annotate(active_memories=Count("memories", filter=live_q(prefix="memories__")))
        .order_by("name", "id")
    )


@login_required
@require_http_methods(["GET", "POST"])
def projects(request):
    form = ProjectCreateForm()
    status = 200
    if request.method == "POST":
        form = ProjectCreateForm(request.POST)
        if form.is_valid():
            with service_call(form) as call:
                project = project_create(actor=request.user, **form.cleaned_data)
            if call.ok:
                messages.success(
                    request, gettext("Project %(name)s created; you are its owner.") % {"name": project.name}
                )
                return redirect("web:project_memories", project.pk)
            status = call.status
        else:
            status = 400
    page = Paginator(_projects_with_role(request.user), PROJECTS_PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "memories/projects.html", {"page": page, "form": form}, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def project_memories(request, project_id):
    return _memory_list(request, _project_scope(request, project_id, write=request.method == "POST"))


@login_required
@require_http_methods(["GET"])
def project_memory(request, project_id, memory_id):
    return _memory_detail(request, _project_scope(request, project_id, write=False), memory_id)


@login_required
@require_http_methods(["GET", "POST"])
def project_memory_correct(request, project_id, memory_id):
    return _memory_correct(request, _project_scope(request, project_id, write=True), memory_id)


@login_required
@require_http_methods(["GET", "POST"])
def project_memory_forget(request, project_id, memory_id):
    return _memory_forget(request, _project_scope(request, project_id, write=True), memory_id)


urlpatterns = [
    path("memories/", my_memories, name="my_memories"),
    path("memories/<slug:memory_id>/", my_memory, name="my_memory"),
    path("memories/<slug:memory_id>/correct/", my_memory_correct, name="my_memory_correct"),
    path("memories/<slug:memory_id>/forget/", my_memory_forget, name="my_memory_forget"),
    path("projects/", projects, name="projects"),
    path("projects/<slug:project_id>/", project_memories, name="project_memories"),
    path("projects/<slug:project_id>/memories/<slug:memory_id>/", project_memory, name="project_memory"),
    path(
        "projects/<slug:project_id>/memories/<slug:memory_id>/correct/",
        project_memory_correct,
        name="project_memory_correct",
    ),
    path(
        "projects/<slug:project_id>/memories/<slug:memory_id>/forget/",
        project_memory_forget,
        name="project_memory_forget",
    ),
]
