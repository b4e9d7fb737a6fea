"""The projects page, and the old addresses of the memory lists, which lead to the memory
home's one list per source (``memory_app.home.web``)."""

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import HttpResponsePermanentRedirect
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.translation import gettext
from django.views.decorators.http import require_http_methods

from config.http import AuthenticatedHttpRequest
from config.web import service_call
from identity_app.selectors import projects_with_my_role
from identity_app.services import project_create
from memory_app.memories.forms import ProjectCreateForm
from memory_app.memories.models import live_q

PROJECTS_PAGE_SIZE = 50
MAX_QUERY_CHARS = 200  # MemoryFilter's limit for ``q``


# --- the old list pages ---------------------------------------------------------------------
# "My memories" and each project's memory list were a second list of the rows the memory home
# lists per source; their addresses now lead there for good, with the filters carried over.
REDIRECTED_PARAMS = ("q", "kind", "status", "page")


def _moved(request: AuthenticatedHttpRequest, source: str, *, memory_id: str | None = None, action: str = ""):
    if memory_id is not None:
        name = {"": "web:memory_home_item", "correct": "web:memory_home_item_correct"}.get(
            action, "web:memory_home_item_forget"
        )
        return HttpResponsePermanentRedirect(reverse(name, args=[memory_id]))
    params = {"source": source}
    for name in REDIRECTED_PARAMS:
        value = request.GET.get(name, "")[:MAX_QUERY_CHARS]
        if value:
            params[name] = value
    return HttpResponsePermanentRedirect(f"{reverse('web:memory_home_items')}?{urlencode(params)}")


@login_required
@require_http_methods(["GET"])
def my_memories(request: AuthenticatedHttpRequest):
    return _moved(request, "user")


@login_required
@require_http_methods(["GET"])
def my_memory(request: AuthenticatedHttpRequest, memory_id, action=""):
    return _moved(request, "user", memory_id=memory_id, action=action)


@login_required
@require_http_methods(["GET"])
def project_memories(request: AuthenticatedHttpRequest, project_id):
    return _moved(request, f"project:{project_id}")


@login_required
@require_http_methods(["GET"])
def project_memory(request: AuthenticatedHttpRequest, project_id, memory_id, action=""):
    return _moved(request, f"project:{project_id}", memory_id=memory_id, action=action)


def _projects_with_role(user):
    return (
        projects_with_my_role(user=user)
        .annotate(active_memories=Count("memories", filter=live_q(prefix="memories__")))
        .order_by("name", "id")
    )


@login_required
@require_http_methods(["GET", "POST"])
def projects(request: AuthenticatedHttpRequest):
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
                return redirect(f"{reverse('web:memory_home_items')}?{urlencode({'source': f'project:{project.pk}'})}")
            status = call.status
        else:
            status = 400
    page = Paginator(_projects_with_role(request.user), PROJECTS_PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "memories/projects.html", {"page": page, "form": form}, status=status)


urlpatterns = [
    path("memories/", my_memories, name="my_memories"),
    path("memories/<slug:memory_id>/", my_memory, name="my_memory"),
    path("memories/<slug:memory_id>/correct/", my_memory, {"action": "correct"}, name="my_memory_correct"),
    path("memories/<slug:memory_id>/forget/", my_memory, {"action": "forget"}, name="my_memory_forget"),
    path("projects/", projects, name="projects"),
    path("projects/<slug:project_id>/", project_memories, name="project_memories"),
    path("projects/<slug:project_id>/memories/<slug:memory_id>/", project_memory, name="project_memory"),
    path(
        "projects/<slug:project_id>/memories/<slug:memory_id>/correct/",
        project_memory,
        {"action": "correct"},
        name="project_memory_correct",
    ),
    path(
        "projects/<slug:project_id>/memories/<slug:memory_id>/forget/",
        project_memory,
        {"action": "forget"},
        name="project_memory_forget",
    ),
]
