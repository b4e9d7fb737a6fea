"""Admin of auto-memory: settings (editable), the log and claims (read-only)."""

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from config.errors import InvalidInput
from memory_app.automemory.models import AutoMemoryClaim, AutoMemoryLogEntry, AutoMemorySettings
from memory_app.automemory.services import SETTINGS_FIELDS, auto_memory_settings_validate
from memory_app.automemory.words import GATE_WORDS, gate_words, reason_words


class AutoMemorySettingsAdminForm(forms.ModelForm):
    """Values are checked by the same rule as the API and the settings page."""

    class Meta:
        model = AutoMemorySettings
        fields = ["user", *SETTINGS_FIELDS]

    def clean(self):
        super().clean()
        cleaned = self.cleaned_data
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


class GateFilter(admin.SimpleListFilter):
    title = _("check")
    parameter_name = "gate"

    def lookups(self, request: HttpRequest, model_admin):
        return list(GATE_WORDS.items())

    def queryset(self, request: HttpRequest, queryset):
        return queryset.filter(gate=self.value()) if self.value() else queryset


@admin.register(AutoMemoryLogEntry)
class AutoMemoryLogEntryAdmin(admin.ModelAdmin):
    """Gates and reasons in the reader's language, as on the log page (stored in English)."""

    list_display = ["created_at", "user", "run_ref", "outcome", "gate_words", "error_class", "memory_id"]
    list_filter = ["outcome", GateFilter]
    exclude = ["gate", "reason"]
    readonly_fields = ["gate_words", "reason_words"]
    list_select_related = ["user"]
    search_fields = ["run_ref", "memory_id", "user__username"]
    date_hierarchy = "created_at"

    def has_add_permission(self, request: HttpRequest):
        return False

    def has_change_permission(self, request: HttpRequest, obj=None):
        return False

    @admin.display(description=_("check"), ordering="gate")
    def gate_words(self, entry):
        return gate_words(entry.gate) if entry.gate else ""

    @admin.display(description=_("reason"))
    def reason_words(self, entry):
        return reason_words(entry.reason)


@admin.register(AutoMemoryClaim)
class AutoMemoryClaimAdmin(admin.ModelAdmin):
    list_display = ["run", "worker_id", "expires_at", "attempts", "last_error_class"]
    raw_id_fields = ["run"]
    readonly_fields = ["run", "token", "worker_id", "expires_at", "attempts", "last_error_class"]

    def has_add_permission(self, request: HttpRequest):
        return False
