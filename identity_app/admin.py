from django.contrib import admin

from identity_app.models import ApiToken, Membership, Profile, Project


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):
    list_display = ["user", "display_name", "timezone", "updated_at"]
    list_select_related = ["user"]
    search_fields = ["user__username", "display_name"]
    raw_id_fields = ["user"]


class MembershipInline(admin.TabularInline):
    model = Membership
    raw_id_fields = ["user"]
    extra = 0


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "created_by", "created_at"]
    list_select_related = ["created_by"]
    search_fields = ["id", "name"]
    readonly_fields = ["id", "created_at"]
    raw_id_fields = ["created_by"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["project", "user", "role", "created_at"]
    list_filter = ["role"]
    list_select_related = ["project", "user"]
    search_fields = ["project__name", "user__username"]
    raw_id_fields = ["project", "user"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "user", "name", "created_at", "last_used_at", "revoked_at"]
    list_select_related = ["user"]
    search_fields = ["user__username", "prefix", "name"]
    readonly_fields = ["prefix", "key_hash", "created_at", "last_used_at"]
    raw_id_fields = ["user"]

    def has_add_permission(self, request):
        return False  # keys are issued by `manage.py issue_token`, which shows the key once
