"""Admin of auto-memory: settings (editable), the log and claims (read-only)."""

from django import forms
from django.contrib import admin

from config.errors import InvalidInput
from memory_app.automemory.models import AutoMemoryClaim, AutoMemoryLogEntry, AutoMemorySettings
from memory_app.automemory.services import SETTINGS_FIELDS, auto_memory_settings_validate


class AutoMemorySettingsAdminForm(forms.ModelForm):
    """Values are checked by the same rule as the API and the settings page."""

    class Meta:
        model = AutoMemorySettings
        fields = ["user", *SETTINGS_FIELDS]

    def clean(self):
        cleaned = super().clean()
        for name in SETTINGS_FIELDS:
            if name not in cleaned or name in self.errors:
                continue
            try:
                cleaned.update(auto_memory_settings_validate({name: cleaned[name]}))
            except InvalidInput as exc:
                self.add_error(name, exc.message)
        return cleaned


@admin.register(AutoMemorySettings)
class AutoMemorySettingsAdmin(admin.ModelAdmin):
    form = AutoMemorySettingsAdminForm
    list_display = ["user", "generate", "use", "min_idle_minutes", "min_length_chars", "updated_at"]
    list_filter = ["generate", "use", "redact_contact_info"]
    list_select_related = ["user"]
    raw_id_fields = ["user"]
    search_fields = ["user__username"]
    # ``generate`` and ``use`` are the user's consent: shown, changed only by the user.
    readonly_fields = ["generate", "use", "updated_at"]


@admin.register(AutoMemoryLogEntry)
class AutoMemoryLogEntryAdmin(admin.ModelAdmin):
    list_display = ["created_at", "user", "run_ref", "outcome", "gate", "error_class", "memory_id"]
    list_filter = ["outcome", "gate"]
    list_select_related = ["user"]
    search_fields = ["run_ref", "memory_id", "user__username"]
    date_hierarchy = "created_at"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(AutoMemoryClaim)
class AutoMemoryClaimAdmin(admin.ModelAdmin):
    list_display = ["run", "worker_id", "expires_at", "attempts", "last_error_class"]
    raw_id_fields = ["run"]
    readonly_fields = ["run", "token", "worker_id", "expires_at", "attempts", "last_error_class"]

    def has_add_permission(self, request):
        return False
