"""Identity admin. Projects, memberships (and chat bindings, in
``memory_app.scoped.admin.chat_bindings``) are saved and deleted through the identity
services, so the last-owner rule lives only there."""

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from config.admin import ServiceModelAdmin
from config.http import signed_in_user
from identity_app import services
from identity_app.models import ApiToken, Invitation, Membership, Profile, Project


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):
    list_display = ["user", "display_name", "timezone", "updated_at"]
    list_select_related = ["user"]
    search_fields = ["user__username", "display_name"]
    raw_id_fields = ["user"]


class MembershipInline(admin.TabularInline):
    """Members at a glance; they are changed on the membership pages, through the services."""

    model = Membership
    fields = ("user", "role", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Project | None = None) -> bool:
        return False


@admin.register(Project)
class ProjectAdmin(ServiceModelAdmin):
    list_display = ["id", "name", "created_by", "created_at"]
    list_select_related = ["created_by"]
    search_fields = ["id", "name"]
    fields = ["id", "name", "description", "created_by", "created_at"]
    readonly_fields = ["id", "created_by", "created_at"]
    inlines = [MembershipInline]

    def save_model(self, request: HttpRequest, obj: Project, form: forms.ModelForm, change: bool) -> None:
        data = form.cleaned_data
        if change:
            services.project_update(
                actor=signed_in_user(request),
                project_id=obj.pk,
                name=data["name"],
                description=data["description"],
                staff_review=True,
            )
        else:  # the admin who creates a project becomes its first owner, as anywhere else
            created = services.project_create(
                actor=signed_in_user(request), name=data["name"], description=data["description"]
            )
            obj.pk, obj.created_by, obj.created_at = created.pk, created.created_by, created.created_at

    def save_related(self, request: HttpRequest, form: forms.ModelForm, formsets: list[Any], change: bool) -> None:
        # Memberships are read-only here; save(commit=False) writes nothing but records the
        # (empty) changes the admin's change message reads.
        for formset in formsets:
            formset.save(commit=False)

    def delete_model(self, request: HttpRequest, obj: Project) -> None:
        services.project_delete(actor=signed_in_user(request), project_id=obj.pk, staff_review=True)


@admin.register(Membership)
class MembershipAdmin(ServiceModelAdmin):
    list_display = ["project", "user", "role", "created_at"]
    list_filter = ["role"]
    list_select_related = ["project", "user"]
    search_fields = ["project__name", "user__username"]
    raw_id_fields = ["project", "user"]

    def get_readonly_fields(self, request: HttpRequest, obj: Membership | None = None) -> list[str]:
        return ["project", "user", "created_at"] if obj is not None else []

    def save_model(self, request: HttpRequest, obj: Membership, form: forms.ModelForm, change: bool) -> None:
        if change:
            services.membership_change(
                actor=signed_in_user(request),
                project_id=obj.project_id,
                user_id=obj.user_id,
                role=obj.role,
                staff_review=True,
            )
            return
        created = services.membership_add(
            actor=signed_in_user(request),
            project_id=obj.project_id,
            username=obj.user.username,
            role=obj.role,
            staff_review=True,
        )
        obj.pk, obj.created_at = created.pk, created.created_at

    def delete_model(self, request: HttpRequest, obj: Membership) -> None:
        services.membership_remove(
            actor=signed_in_user(request), project_id=obj.project_id, user_id=obj.user_id, staff_review=True
        )


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "user", "name", "created_at", "expires_at", "last_used_at", "revoked_at", "limited"]
    list_select_related = ["user"]
    search_fields = ["user__username", "prefix", "name"]
    readonly_fields = [
        "prefix",
        "key_hash",
        "created_at",
        "expires_at",
        "last_used_at",
        "only_user_ids",
        "only_project_ids",
    ]
    raw_id_fields = ["user"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # keys are issued by `manage.py issue_token` or self-service, which show the key once

    @admin.display(boolean=True, description=_("limited"))
    def limited(self, obj: ApiToken) -> bool:
        return obj.restricted


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    """Read-only audit: invitations are answered by their invitees, through the services."""

    list_display = ["username", "project", "role", "status", "invited_by", "created_at", "responded_at"]
    list_filter = ["status", "role"]
    list_select_related = ["project", "invited_by"]
    search_fields = ["username", "project__name"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Invitation | None = None) -> bool:
        return False
