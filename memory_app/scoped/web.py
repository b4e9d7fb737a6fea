"""The chat memories page: a user's bound private chats and what the bots remember there."""

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_http_methods

from memory_app.memories.filters import MemoryFilter
from memory_app.memories.models import Status
from memory_app.scoped.selectors import bound_chats
from memory_app.scoped.selectors import chat_memories as chat_memories_qs

PAGE_SIZE = 25
MAX_CHATS = 50


@login_required
@require_http_methods(["GET"])
def chat_memories(request):
    """The user's bound private chats and, for the chosen one, its memories."""
    chats = list(bound_chats(user=request.user)[:MAX_CHATS])
    keys = [c.chat_key for c in chats]
    selected = request.GET.get("chat") or (keys[0] if keys else "")
    page = None
    if selected in keys:
        # The memory list's own filter: active by default, "all", or one status.
        filters = MemoryFilter(
            {"status": request.GET.get("status", "")}, queryset=chat_memories_qs(user=request.user, chat_key=selected)
        )
        page = Paginator(filters.qs, PAGE_SIZE).get_page(request.GET.get("page"))
        status = filters.form.cleaned_data.get("status") or Status.ACTIVE
    else:
        selected, status = "", "active"
    return render(
        request,
        "scoped/chat_memories.html",
        {"chats": chats, "selected": selected, "page": page, "status": status},
    )


urlpatterns = [
    path("chats/", chat_memories, name="chat_memories"),
]
