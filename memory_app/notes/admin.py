"""Admin of the memory switch: shown to operators, never changed by them."""

from django.contrib import admin
from django.http import HttpRequest

from memory_app.notes.models import UserSettings


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

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: UserSettings | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: UserSettings | None = None) -> bool:
        return False
