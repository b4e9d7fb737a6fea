"""Django admin for memories and project summaries.

Memories are read-only here: every change is an action that calls the memory services
(``memory_supersede`` / ``memory_forget`` with ``staff_review=True``), so the admin keeps the
chain and the derived data consistent exactly like the API and the web pages. The list shows
the content first and wide; the page of one memory shows its provenance, its correction chain
(a link to each version) and the two actions, which lead to the same confirmation pages as the
list's actions.
"""

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils.text import Truncator
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from config.admin import InstantListFilter, WideListMixin
from config.errors import DomainError, NotFound
from config.http import signed_in_user
from memory_app.memories import services
from memory_app.memories.models import Memory, Origin, ProjectSummary, Tier
from memory_app.memories.selectors import memory_chain

MAX_ACTION_ROWS = 20
PREVIEW_CHARS = 160


@admin.register(Memory)
class MemoryAdmin(WideListMixin, admin.ModelAdmin):
    # Content first; the scope says whose (a user by name, a project by name, a chat by key);
    # the status carries "paused" and "expired".
    list_display = ["preview", "scope_type", "scope", "kind", "status_words", "origin", "created_at"]
    list_display_links = ["preview"]
    list_filter = ["scope_type", "kind", "status", "paused", "origin", ("created_at", InstantListFilter)]
    search_fields = ["id", "content", "scope_id", "owner__username", "project__name", "source_thread_id"]
    list_select_related = ["owner", "project"]
    raw_id_fields = ["owner", "project", "superseded_by", "created_by"]
    readonly_fields = [
        "content",
        "id",
        "scope_type",
        "scope_id",
        "owner",
        "project",
        "kind",
        "status",
        "paused",
        "expires_at",
        "superseded_by",
        # provenance
        "origin",
        "origin_label",
        "source_thread_id",
        "created_by",
        "metadata",
        "evidence",
        "created_at",
        "updated_at",
    ]
    ordering = ["-created_at", "-id"]
    show_full_result_count = False
    actions = ["supersede_memories", "forget_memories"]
    change_form_template = "admin/memory_app/memory/change_form.html"

    class Media:
        css = {"all": ["css/admin-memory.css"]}

    @admin.display(description=gettext_lazy("content"))
    def preview(self, obj):
        return Truncator(obj.content).chars(PREVIEW_CHARS)

    @admin.display(description=gettext_lazy("scope"))
    def scope(self, obj):
        # Whose: the user's name or the project's (both selected with the row), else the chat key.
        if obj.scope_type == Tier.USER and obj.owner_id:
            return obj.owner.get_username()
        if obj.project_id:
            return obj.project.name
        if obj.scope_type == Tier.GLOBAL:
            return _("everyone")
        return obj.scope_id

    @admin.display(description=gettext_lazy("status"), ordering="status")
    def status_words(self, obj):
        words = [obj.get_status_display()]
        if obj.paused:
            words.append(_("paused"))
        if obj.status == "active" and obj.expired:
            words.append(_("expired"))
        return ", ".join(str(word) for word in words)

    @admin.display(description=gettext_lazy("origin, in words"))
    def origin_label(self, obj):
        return obj.origin_label

    def change_view(self, request: HttpRequest, object_id, form_url="", extra_context=None):
        memory = self.get_object(request, unquote(object_id))
        extra = dict(extra_context or {})
        if memory is not None and self.has_view_permission(request, memory):
            extra.update(
                chain=memory_chain(memory=memory),
                may_review=self.has_review_permission(request),
                action_checkbox_name=helpers.ACTION_CHECKBOX_NAME,
            )
        return super().change_view(request, object_id, form_url, extra)

    # Rows change only through the actions below (services), never through the change form.
    def has_add_permission(self, request: HttpRequest):
        return False

    def has_change_permission(self, request: HttpRequest, obj=None):
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None):
        return False

    def has_review_permission(self, request: HttpRequest):
        return services.staff_may_review_memories(signed_in_user(request))

    def _selected(self, request: HttpRequest, queryset):
        rows = list(queryset.order_by("-created_at", "-id")[: MAX_ACTION_ROWS + 1])
        if len(rows) > MAX_ACTION_ROWS:
            self.message_user(
                request, _("Select at most %(n)s memories at a time.") % {"n": MAX_ACTION_ROWS}, messages.ERROR
            )
            return None
        return rows

    def _intermediate(self, request: HttpRequest, rows, *, template, title, action):
        context = {
            **self.admin_site.each_context(request),
            "title": title,
            "opts": self.model._meta,
            "memories": rows,
            "action": action,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, template, context)

    @admin.action(description=gettext_lazy("Supersede (correct) selected memories…"), permissions=["review"])
    def supersede_memories(self, request: HttpRequest, queryset):
        rows = self._selected(request, queryset)
        if rows is None:
            return None
        if "apply" not in request.POST:
            return self._intermediate(
                request,
                rows,
                template="admin/memory_app/memory/supersede.html",
                title=_("Supersede memories"),
                action="supersede_memories",
            )
        done, unchanged = 0, 0
        for memory in rows:
            content = request.POST.get(f"content_{memory.pk}", "")
            if content.strip() == memory.content.strip():
                unchanged += 1
                continue
            try:
                services.memory_supersede(
                    actor=signed_in_user(request),
                    memory_id=memory.pk,
                    content=content,
                    origin=Origin.MANUAL,
                    staff_review=True,
                )
            except DomainError as exc:
                self.message_user(request, f"{memory.pk}: {exc.message}", messages.ERROR)
            else:
                done += 1
        if done:
            self.message_user(
                request,
                ngettext("Superseded %(n)s memory.", "Superseded %(n)s memories.", done) % {"n": done},
                messages.SUCCESS,
            )
        if unchanged:
            self.message_user(
                request, _("%(n)s left as they were (content unchanged).") % {"n": unchanged}, messages.WARNING
            )
        return None

    @admin.action(
        description=gettext_lazy("Forget selected memories (with their older versions)…"), permissions=["review"]
    )
    def forget_memories(self, request: HttpRequest, queryset):
        rows = self._selected(request, queryset)
        if rows is None:
            return None
        if "apply" not in request.POST:
            return self._intermediate(
                request,
                rows,
                template="admin/memory_app/memory/forget.html",
                title=_("Forget memories"),
                action="forget_memories",
            )
        forgotten: set[str] = set()
        for memory in rows:
            if memory.pk in forgotten:
                continue  # already gone as an older version of another selected row
            try:
                forgotten.update(
                    services.memory_forget(actor=signed_in_user(request), memory_id=memory.pk, staff_review=True)
                )
            except NotFound:
                continue
            except DomainError as exc:
                self.message_user(request, f"{memory.pk}: {exc.message}", messages.ERROR)
        n = len(forgotten)
        self.message_user(
            request, ngettext("Forgot %(n)s memory.", "Forgot %(n)s memories.", n) % {"n": n}, messages.SUCCESS
        )
        return None


@admin.register(ProjectSummary)
class ProjectSummaryAdmin(admin.ModelAdmin):
    list_display = ["title", "project", "preview", "created_by", "updated_at"]
    list_select_related = ["project", "created_by"]
    search_fields = ["title", "content", "project__name", "project__id"]
    raw_id_fields = ["project", "created_by"]
    readonly_fields = ["created_by", "created_at", "updated_at"]
    ordering = ["-updated_at", "-id"]

    @admin.display(description=gettext_lazy("content"))
    def preview(self, obj):
        return Truncator(obj.content).chars(80)

    def save_model(self, request: HttpRequest, obj, form, change):
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)
