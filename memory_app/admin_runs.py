"""Admin of the runs part: runs with their lease state, read-only conversations and messages."""

from django.contrib import admin
from django.utils import timezone

from memory_app.models import AgentRun, Conversation, Message, ToolCall, UserSettings
from memory_app.runs import run_lease_state


class ReadOnlyAdmin(admin.ModelAdmin):
    """Conversation history is written by agent runtimes only; the admin shows it."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class LeaseStateFilter(admin.SimpleListFilter):
    title = "lease"
    parameter_name = "lease"

    def lookups(self, request, model_admin):
        return [("held", "held"), ("expired", "expired (claimable)"), ("released", "released")]

    def queryset(self, request, queryset):
        now = timezone.now()
        if self.value() == "held":
            return queryset.filter(status="running", lease_expires_at__gt=now)
        if self.value() == "expired":
            return queryset.filter(status="running", lease_expires_at__lte=now)
        if self.value() == "released":
            return queryset.exclude(status="running")
        return queryset


@admin.register(AgentRun)
class AgentRunAdmin(ReadOnlyAdmin):
    list_display = ["id", "user", "kind", "status", "lease_state", "worker_id", "lease_expires_at", "lease_generation", "created_at"]
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
    fields = ["name", "status", "input", "output", "error"]
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
    list_display = ["user", "enable_memory", "updated_at"]
    list_select_related = ["user"]
    raw_id_fields = ["user"]
    search_fields = ["user__username"]

    def save_model(self, request, obj, form, change):
        # Through the service, so the switch takes the per-user lock like every other writer.
        from memory_app.notes import user_settings_update

        user_settings_update(user=obj.user, enable_memory=obj.enable_memory)
