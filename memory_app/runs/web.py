"""End-user pages of conversations (with their "don't remember this chat" mode) and runs. A
conversation's page lists its runs, so the pages of both live here, above the threads."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from config.http import AuthenticatedHttpRequest
from memory_app.runs import selectors
from memory_app.runs.words import usage_words
from memory_app.threads import selectors as thread_selectors
from memory_app.threads import services as thread_services

PAGE_SIZE = 25


@login_required
@require_http_methods(["GET"])
def conversation_list(request: AuthenticatedHttpRequest):
    qs = thread_selectors.conversations_visible(user=request.user).order_by("-updated_at", "-id")
    page = Paginator(qs, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "runs/conversations.html", {"page": page})


@login_required
@require_http_methods(["GET"])
def conversation_detail(request: AuthenticatedHttpRequest, conversation_id):
    return _conversation_page(request, conversation_id)


def _conversation_page(request: AuthenticatedHttpRequest, conversation_id, *, status: int = 200):
    conversation = thread_selectors.conversation_get(user=request.user, conversation_id=conversation_id)
    page = Paginator(
        thread_selectors.conversation_messages(user=request.user, conversation_id=conversation_id), 50
    ).get_page(request.GET.get("page"))
    run_list = selectors.runs_visible(user=request.user).filter(conversation=conversation).order_by("-created_at")[:50]
    return render(
        request,
        "runs/conversation_detail.html",
        {
            "conversation": conversation,
            "page": page,
            "runs": run_list,
            "settings_url": reverse("web:settings"),
        },
        status=status,
    )


NO_MEMORY_CHOICES = {"on": True, "off": False}


@login_required
@require_http_methods(["POST"])
def conversation_memory(request: AuthenticatedHttpRequest, conversation_id):
    """Turn a conversation's "don't remember this chat" mode on or off (the owner only; anyone
    else gets 404 from the service's lookup)."""
    value = NO_MEMORY_CHOICES.get(request.POST.get("no_memory", ""))
    if value is None:
        thread_selectors.conversation_get(user=request.user, conversation_id=conversation_id)  # 404 before 400
        messages.error(request, _("Choose whether this chat should be remembered."))
        return _conversation_page(request, conversation_id, status=400)
    thread_services.conversation_update(actor=request.user, conversation_id=conversation_id, no_memory=value)
    if value:
        messages.success(
            request,
            _(
                "This chat will not be remembered: its agent tasks get no memory, nothing is extracted from it, and "
                "other chats cannot look it up."
            ),
        )
    else:
        messages.success(request, _("This chat is remembered again, from its next agent task on."))
    return redirect("web:conversation_detail", conversation_id=conversation_id)


@login_required
@require_http_methods(["GET"])
def run_detail(request: AuthenticatedHttpRequest, run_id):
    run = selectors.run_get(user=request.user, run_id=run_id)
    return render(
        request,
        "runs/run_detail.html",
        {"run": run, "lease_state": selectors.run_lease_state(run), "usage": usage_words(run.usage)},
    )


urlpatterns = [
    path("conversations/", conversation_list, name="conversations"),
    path("conversations/<slug:conversation_id>/", conversation_detail, name="conversation_detail"),
    path("conversations/<slug:conversation_id>/memory/", conversation_memory, name="conversation_memory"),
    path("runs/<slug:run_id>/", run_detail, name="run_detail"),
]
