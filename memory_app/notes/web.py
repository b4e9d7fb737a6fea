"""End-user pages of the notes file: the editor of the three workspace files and their change
history (with undo). The memory switches panel is in ``automemory.web``."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_http_methods

from config.errors import DomainError, NotFound
from config.http import AuthenticatedHttpRequest
from memory_app.notes import history, selectors, services
from memory_app.notes.history import Author, UndoConflict
from memory_app.notes.models import WorkspaceChangeSource
from memory_app.notes.workspace import MAX_WORKSPACE_FILE_BYTES, MEMORY_FILE, WORKSPACE_FILES, WorkspaceEditConflict


@login_required
@require_http_methods(["GET", "POST"])
def workspace(request: AuthenticatedHttpRequest) -> HttpResponse:
    unsaved = None
    if request.method == "POST":
        # The name rule is the service's: an unknown name is refused there, never replaced.
        name = request.POST.get("name", "")
        # The version the form was opened on: a change made meanwhile (a note the agent saved)
        # is a conflict, never silently overwritten.
        base = request.POST.get("base_sha256") or None
        content = request.POST.get("content", "").replace("\r\n", "\n")  # browsers send CRLF
        try:
            if request.POST.get("action") == "delete":
                services.workspace_file_delete(
                    user=request.user, name=name, base_sha256=base, author=_web_author(request)
                )
                messages.success(request, _("%(name)s deleted.") % {"name": name})
            else:
                services.workspace_file_write(
                    user=request.user, name=name, content=content, base_sha256=base, author=_web_author(request)
                )
                messages.success(request, _("%(name)s saved.") % {"name": name})
            return redirect(f"{reverse('web:workspace')}?name={name}")
        except WorkspaceEditConflict:
            messages.error(
                request,
                _(
                    "%(name)s was changed since you opened it (for example your agent saved a note), so your "
                    "change was not saved. The current version is shown below; your text is kept underneath "
                    "so you can apply it again."
                )
                % {"name": name},
            )
            if request.POST.get("action") != "delete":
                unsaved = content
        except NotFound as exc:
            messages.error(request, exc.message)
            return redirect("web:workspace")
        except DomainError as exc:
            messages.error(request, exc.message)
    else:
        asked = request.GET.get("name")
        name = asked if asked in WORKSPACE_FILES else MEMORY_FILE  # the tabs; anything else shows MEMORY.md
    file, error = None, None
    try:
        file = selectors.workspace_file_get(user=request.user, name=name)
    except DomainError as exc:
        error = exc.message
    return render(
        request,
        "notes/workspace.html",
        {
            "name": name,
            "names": WORKSPACE_FILES,
            "file": file,
            "error": error,
            "unsaved": unsaved,
            "max_bytes": MAX_WORKSPACE_FILE_BYTES,
        },
        status=409 if unsaved is not None else 200,
    )


def _web_author(request: AuthenticatedHttpRequest) -> Author:
    return Author(WorkspaceChangeSource.WEB, actor=request.user)


HISTORY_PAGE_SIZE = 20


def _history_page(request: AuthenticatedHttpRequest, *, status: int = 200) -> HttpResponse:
    name = request.GET.get("name")
    name = name if name in WORKSPACE_FILES else None  # the tabs; anything else shows every file
    qs = selectors.workspace_changes_visible(user=request.user)
    if name:
        qs = qs.filter(name=name)
    page = Paginator(qs, HISTORY_PAGE_SIZE).get_page(request.GET.get("page"))
    current = {}
    for file_name in WORKSPACE_FILES:
        try:
            current[file_name] = selectors.workspace_file_get(user=request.user, name=file_name).sha256
        except DomainError:
            current[file_name] = ""  # unreadable now: an undo is refused by the service anyway
    changes = [(change, history.diff_view(change), current[change.name]) for change in page.object_list]
    return render(
        request,
        "notes/workspace_history.html",
        {
            "name": name,
            "names": WORKSPACE_FILES,
            "page": page,
            "changes": changes,
            "filter_query": f"name={name}" if name else "",
        },
        status=status,
    )


@login_required
@require_http_methods(["GET"])
def workspace_history(request: AuthenticatedHttpRequest) -> HttpResponse:
    return _history_page(request)


@login_required
@require_http_methods(["POST"])
def workspace_change_undo(request: AuthenticatedHttpRequest, change_id: str) -> HttpResponse:
    # The version of the file the page showed: a change made since (a note the agent saved
    # meanwhile) is a conflict, never overwritten.
    base = request.POST.get("base_sha256") or None
    try:
        undo = services.workspace_change_undo(
            user=request.user, change_id=change_id, base_sha256=base, author=_web_author(request)
        )
    except WorkspaceEditConflict:
        messages.error(
            request,
            _(
                "The file changed since this page was shown (for example your agent saved a note), so nothing "
                "was undone. The newest changes are listed below; try again if you still want to."
            ),
        )
        return _history_page(request, status=409)
    except UndoConflict as exc:
        messages.error(request, exc.message)
        return _history_page(request, status=409)
    assert undo.reverts is not None  # an undo reverts the change it undid
    messages.success(
        request,
        _("Undone: %(name)s is back as it was before change #%(seq)s.") % {"name": undo.name, "seq": undo.reverts.seq},
    )
    return redirect(f"{reverse('web:workspace_history')}?name={undo.name}")


@login_required
@require_http_methods(["POST"])
def workspace_history_clear(request: AuthenticatedHttpRequest) -> HttpResponse:
    name = request.POST.get("name") or None
    count = services.workspace_history_clear(user=request.user, name=name)
    messages.success(
        request, ngettext("Forgot %(count)d change.", "Forgot %(count)d changes.", count) % {"count": count}
    )
    return redirect("web:workspace_history")


urlpatterns = [
    path("workspace/", workspace, name="workspace"),
    path("workspace/history/", workspace_history, name="workspace_history"),
    path("workspace/history/clear/", workspace_history_clear, name="workspace_history_clear"),
    path("workspace/history/<slug:change_id>/undo/", workspace_change_undo, name="workspace_change_undo"),
]
