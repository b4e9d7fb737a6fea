"""Admin of background jobs and worker heartbeats: read-only (a stuck job may be deleted)."""

from django.contrib import admin

from memory_app.ops.models import BackgroundJob, WorkerHeartbeat


@admin.register(BackgroundJob)
class BackgroundJobAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "user", "status", "attempts", "worker_id", "created_at", "finished_at"]
    list_filter = ["kind", "status"]
    list_select_related = ["user"]
    search_fields = ["id", "user__username", "worker_id"]
    date_hierarchy = "created_at"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(admin.ModelAdmin):
    list_display = ["worker_id", "started_at", "beat_at"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
