"""Admin of runs, with their lease state."""

from django.contrib import admin
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from config.admin import ReadOnlyAdmin
from memory_app.runs.models import AgentRun
from memory_app.runs.selectors import run_lease_state, runs_with_lease_state
from memory_app.runs.words import usage_words

LEASE_STATES = ("held", "expired", "released")
LEASE_STATE_WORDS = {"held": _("held"), "expired": _("expired (claimable)"), "released": _("released")}


class LeaseStateFilter(admin.SimpleListFilter):
    title = _("lease")
    parameter_name = "lease"

    def lookups(self, request: HttpRequest, model_admin):
        return [(state, LEASE_STATE_WORDS[state]) for state in LEASE_STATES]

    def queryset(self, request: HttpRequest, queryset):
        if (state := self.value()) in LEASE_STATES:
            return runs_with_lease_state(queryset, state)
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
    exclude = ["run_token_hash", "usage"]
    readonly_fields = ["usage_in_words"]
    date_hierarchy = "created_at"

    @admin.display(description=_("usage"))
    def usage_in_words(self, run):
        words = usage_words(run.usage)
        parts = [f"{label}: {value}" for label, value in words.known] + [
            f"{key}: {value}" for key, value in words.other
        ]
        return " · ".join(parts) or "—"

    @admin.display(description=_("lease"))
    def lease_state(self, run):
        state = run_lease_state(run)
        return LEASE_STATE_WORDS.get(state, state)
