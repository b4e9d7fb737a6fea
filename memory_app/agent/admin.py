"""Admin of the agent part: runs with their lease state, read-only conversations and messages."""

from django.contrib import admin

from memory_app.agent.models import AgentRun, Conversation, Message, ToolCall, UserSettings
from memory_app.agent.selectors import run_lease_state, runs_with_lease_state


class ReadOnlyAdmin(admin.ModelAdmin):
    """Conversation history is written by agent runtimes only; the admin shows it."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


LEASE_STATES = ("held", "expired", "released")


class LeaseStateFilter(admin.SimpleListFilter):
    title = "lease"
    parameter_name = "lease"

    def lookups(self, request, model_admin):
        return [("held", "held"), ("expired", "expired (claimable)"), ("released", "released")]

    def queryset(self, request, queryset):
        if self.value() in LEASE_STATES:
            return runs_with_lease_state(queryset, self.value())
        return queryset


@admin.register(AgentRun)
class AgentRunAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "user",
        "kind",
        "status",
        "lease_state",
        "worker_id",
        "lease_expires_at",
        "lease_generation",
        "created_at",
    ]
    list_filter = ["status", "kind", LeaseStateFilter]
    list_select_related = ["user"]
    search_fields = ["id", "user__username", "request_id", "worker_id", "conversation__id"]
    raw_id_fields = ["user", "created_by", "conversation", "project", "parent_run"]
    exclude = ["run_token_hash"]
    date_hierarchy = "created_at"

    @admin.display(description="lease")
    def lease_state(self, run):
        return run_lease_state(run)


@admin.register(Conversation)
class ConversationAdmin(ReadOnlyAdmin):
    list_display = ["id", "title", "owner", "source", "status", "parent", "updated_at"]
    list_filter = ["status", "source"]
    list_select_related = ["owner", "parent"]
    search_fields = ["id", "title", "owner__username", "session_key"]
    raw_id_fields = ["owner", "project", "parent"]


class ToolCallInline(admin.TabularInline):
    model = ToolCall
    fk_name = "message"
    fields = ("name", "status", "input", "output", "error")
    readonly_fields = fields
    extra = 0
    max_num = 0


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ["id", "conversation", "role", "type", "created_at"]
    list_filter = ["role", "type"]
    list_select_related = ["conversation"]
    search_fields = ["conversation__id", "content"]
    raw_id_fields = ["conversation", "run"]
    inlines = [ToolCallInline]


@admin.register(UserSettings)
class UserSettingsAdmin(admin.ModelAdmin):
    """The memory switch, shown to operators and never changed by them: it is the user's consent,
    changed only by the user (settings page, API). Rows are never added or deleted here."""

    list_display = ["user", "enable_memory", "updated_at"]
    list_select_related = ["user"]
    raw_id_fields = ["user"]
    search_fields = ["user__username"]
    fields = ["user", "enable_memory", "updated_at"]
    readonly_fields = ["user", "enable_memory", "updated_at"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
