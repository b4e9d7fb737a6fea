from django import forms
from django.contrib import admin

from identity_app.models import ApiToken, Membership, Profile, Project, Role

# A project always keeps an owner (the same rule as identity_app.services.ensure_an_owner_remains,
# checked here before saving so the admin shows a form error instead of failing).
LAST_OWNER_MESSAGE = "A project must keep at least one owner."


def _other_owner_exists(membership: Membership) -> bool:
    return (
        Membership.objects.filter(project_id=membership.project_id, role=Role.OWNER)
        .exclude(pk=membership.pk)
        .exists()
    )


class MembershipInlineFormSet(forms.BaseInlineFormSet):
    def clean(self):
        super().clean()
        owners = [
            form
            for form in self.forms
            if form.cleaned_data
            and not form.cleaned_data.get("DELETE")
            and form.cleaned_data.get("role") == Role.OWNER
        ]
        if not owners:
            raise forms.ValidationError(LAST_OWNER_MESSAGE)


class MembershipForm(forms.ModelForm):
    class Meta:
        model = Membership
        fields = ["project", "user", "role"]

    def clean(self):
        cleaned = super().clean()
        instance = self.instance
        if (
            instance.pk
            and instance.role == Role.OWNER
            and cleaned.get("role") != Role.OWNER
            and not _other_owner_exists(instance)
        ):
            raise forms.ValidationError(LAST_OWNER_MESSAGE)
        return cleaned


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):
    list_display = ["user", "display_name", "timezone", "updated_at"]
    list_select_related = ["user"]
    search_fields = ["user__username", "display_name"]
    raw_id_fields = ["user"]


class MembershipInline(admin.TabularInline):
    model = Membership
    formset = MembershipInlineFormSet
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
    form = MembershipForm

    def has_delete_permission(self, request, obj=None):
        if obj is not None and obj.role == Role.OWNER and not _other_owner_exists(obj):
            return False
        return super().has_delete_permission(request, obj)

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # bulk delete could remove every owner
        return actions


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "user", "name", "created_at", "last_used_at", "revoked_at"]
    list_select_related = ["user"]
    search_fields = ["user__username", "prefix", "name"]
    readonly_fields = ["prefix", "key_hash", "created_at", "last_used_at"]
    raw_id_fields = ["user"]

    def has_add_permission(self, request):
        return False  # keys are issued by `manage.py issue_token`, which shows the key once
