"""Admin of background jobs and worker heartbeats: read-only (a stuck job may be deleted)."""

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy

from memory_app.ops.models import BackgroundJob, WorkerHeartbeat
from memory_app.ops.services import job_kind_words, job_kinds


class JobKindFilter(admin.SimpleListFilter):
    title = gettext_lazy("kind")
    parameter_name = "kind"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return job_kinds()

    def queryset(self, request: HttpRequest, queryset: QuerySet[BackgroundJob]) -> QuerySet[BackgroundJob]:
        return queryset.filter(kind=self.value()) if self.value() else queryset


@admin.register(BackgroundJob)
class BackgroundJobAdmin(admin.ModelAdmin):
    list_display = ["id", "kind_words", "user", "status", "attempts", "worker_id", "created_at", "finished_at"]
    list_filter = [JobKindFilter, "status"]
    readonly_fields = ["kind_words"]
    list_select_related = ["user"]
    search_fields = ["id", "user__username", "worker_id"]
    date_hierarchy = "created_at"

    @admin.display(description=gettext_lazy("kind"), ordering="kind")
    def kind_words(self, job: BackgroundJob) -> str:
        return job_kind_words(job.kind)

    def get_exclude(self, request: HttpRequest, obj: BackgroundJob | None = None) -> list[str]:
        return ["kind"]  # shown in words (kind_words)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: BackgroundJob | None = None) -> bool:
        return False


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(admin.ModelAdmin):
    list_display = ["worker_id", "started_at", "beat_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: WorkerHeartbeat | None = None) -> bool:
        return False
