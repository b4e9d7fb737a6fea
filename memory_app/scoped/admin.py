"""Admin of chat/global scoped items: candidates (audit), chat bindings, and scope-migration
plans with per-entry review and apply. Thin: every change goes through the services."""

import json

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError
from django.db.models import Count, Q
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html

from config.admin import ServiceModelAdmin
from config.errors import DomainError
from identity_app.chat_bindings import chat_binding_create, chat_binding_delete
from identity_app.models import ChatBinding
from memory_app.scoped import migration
from memory_app.scoped.consolidation import system_actor
from memory_app.scoped.models import MemoryCandidate, MigrationApproval, ScopeMigrationEntry, ScopeMigrationPlan

MAX_PLAN_UPLOAD_BYTES = 64 * 1024 * 1024


@admin.register(MemoryCandidate)
class MemoryCandidateAdmin(admin.ModelAdmin):
    list_display = ["id", "decision", "kind", "scope_type", "scope_id", "session_id", "source", "created_at"]
    list_filter = ["decision", "source", "scope_type", "kind"]
    search_fields = ["id", "session_id", "scope_id", "content", "memory__id"]
    raw_id_fields = ["memory"]
    readonly_fields = [f.name for f in MemoryCandidate._meta.fields]
    list_select_related = ["memory"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(ChatBinding)
class ChatBindingAdmin(ServiceModelAdmin):
    """Bindings are created and deleted through ``chat_bindings`` (who may bind, which chats)."""

    fields = ["chat_key", "user"]
    list_display = ["chat_key", "user", "created_at"]
    list_select_related = ["user"]
    search_fields = ["chat_key", "user__username"]
    raw_id_fields = ["user"]

    def has_change_permission(self, request, obj=None):
        # A binding is created or deleted, never edited; the list needs the permission itself.
        return obj is None and super().has_change_permission(request)

    def save_model(self, request, obj, form, change):
        binding = chat_binding_create(actor=request.user, chat_key=obj.chat_key, username=obj.user.username)
        obj.pk, obj.chat_key, obj.created_at = binding.pk, binding.chat_key, binding.created_at

    def delete_model(self, request, obj):
        chat_binding_delete(actor=request.user, binding_id=obj.pk)


class PlanImportForm(forms.Form):
    name = forms.CharField(max_length=200)
    plan_file = forms.FileField(help_text="JSON written by `migrate_memory_scope inspect`")

    def clean_plan_file(self):
        upload = self.cleaned_data["plan_file"]
        if upload.size > MAX_PLAN_UPLOAD_BYTES:
            raise ValidationError("Plan file too large.")
        try:
            data = json.loads(upload.read().decode("utf-8"))
            migration.validate_plan(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValidationError(f"Not valid JSON: {exc}") from None
        except DomainError as exc:
            raise ValidationError(exc.message) from None
        return data


class ApplyForm(forms.Form):
    apply_all_safe = forms.BooleanField(required=False, help_text="also every 'migrate' entry not rejected")
    dry_run = forms.BooleanField(required=False)
    confirm = forms.BooleanField(required=True, label="I confirm: back up, then move the selected items")


@admin.register(ScopeMigrationPlan)
class ScopeMigrationPlanAdmin(admin.ModelAdmin):
    list_display = ["name", "created_at", "entry_count", "migrate_count", "approved_count", "applied_at", "backup_name"]
    readonly_fields = [
        "name",
        "created_at",
        "created_by",
        "generated_at",
        "applied_at",
        "backup_name",
        "last_report",
        "review_link",
    ]
    change_list_template = "admin/memory_app/scopemigrationplan/change_list.html"

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(
                n_entries=Count("entries"),
                n_migrate=Count("entries", filter=Q(entries__decision="migrate")),
                n_approved=Count("entries", filter=Q(entries__approval=MigrationApproval.APPROVED)),
            )
        )

    @admin.display(description="entries", ordering="n_entries")
    def entry_count(self, obj):
        return obj.n_entries

    @admin.display(description="migrate")
    def migrate_count(self, obj):
        return obj.n_migrate

    @admin.display(description="approved")
    def approved_count(self, obj):
        return obj.n_approved

    @admin.display(description="entries")
    def review_link(self, obj):
        url = reverse("admin:memory_app_scopemigrationentry_changelist") + f"?plan__id__exact={obj.pk}"
        apply_url = reverse("admin:memory_app_scopemigrationplan_apply", args=[obj.pk])
        return format_html('<a href="{}">Review entries</a> · <a href="{}">Apply…</a>', url, apply_url)

    def has_add_permission(self, request):
        return False  # plans come from inspect or an import

    def get_urls(self):
        return [
            path("import/", self.admin_site.admin_view(self.import_view), name="memory_app_scopemigrationplan_import"),
            path(
                "inspect/", self.admin_site.admin_view(self.inspect_view), name="memory_app_scopemigrationplan_inspect"
            ),
            path(
                "<int:plan_id>/apply/",
                self.admin_site.admin_view(self.apply_view),
                name="memory_app_scopemigrationplan_apply",
            ),
            *super().get_urls(),
        ]

    def _changelist(self):
        return HttpResponseRedirect(reverse("admin:memory_app_scopemigrationplan_changelist"))

    def import_view(self, request):
        if not self.has_change_permission(request):
            raise DjangoPermissionDenied
        form = PlanImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            plan = migration.plan_import(
                data=form.cleaned_data["plan_file"], name=form.cleaned_data["name"], actor=request.user
            )
            messages.success(request, f"Imported plan {plan.name} with {plan.entries.count()} entries.")
            return self._changelist()
        context = {
            **self.admin_site.each_context(request),
            "form": form,
            "title": "Import a scope migration plan",
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/memory_app/scope_migration_form.html", context)

    def inspect_view(self, request):
        if not self.has_change_permission(request):
            raise DjangoPermissionDenied
        if request.method != "POST":
            return self._changelist()
        plan = migration.plan_import(
            data=migration.inspect_plan(), name=f"inspect {timezone.now():%Y-%m-%d %H:%M}", actor=request.user
        )
        messages.success(request, f"Inspected: plan {plan.name} with {plan.entries.count()} entries.")
        return self._changelist()

    def apply_view(self, request, plan_id):
        # The permission first, so that staff without it cannot tell which plans exist.
        if not self.has_change_permission(request):
            raise DjangoPermissionDenied
        plan = get_object_or_404(ScopeMigrationPlan, pk=plan_id)
        if not self.has_change_permission(request, plan):
            raise DjangoPermissionDenied
        form = ApplyForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            try:
                report = migration.plan_apply(
                    plan=plan,
                    actor=system_actor,  # created only when something will move
                    apply_all_safe=form.cleaned_data["apply_all_safe"],
                    dry_run=form.cleaned_data["dry_run"],
                )
            except DomainError as exc:
                messages.error(request, exc.message)
                return self._changelist()
            counts = ", ".join(f"{k}={v}" for k, v in sorted(report["counts"].items()))
            prefix = (
                "Dry run, nothing changed"
                if report["dry_run"]
                else f"Applied (backup: {report['backup'] or 'none needed'})"
            )
            messages.success(request, f"{prefix}: {counts}")
            return HttpResponseRedirect(reverse("admin:memory_app_scopemigrationplan_change", args=[plan.pk]))
        context = {
            **self.admin_site.each_context(request),
            "form": form,
            "plan": plan,
            "title": f"Apply plan {plan.name}",
            "opts": self.model._meta,
            "approved": plan.entries.filter(approval=MigrationApproval.APPROVED).count(),
        }
        return TemplateResponse(request, "admin/memory_app/scope_migration_form.html", context)


class EntryForm(forms.ModelForm):
    class Meta:
        model = ScopeMigrationEntry
        fields = ["approval", "target_scope_id"]

    def clean(self):
        data = super().clean()
        target = data.get("target_scope_id") or ""
        entry = self.instance
        if entry.decision == "manual_review" and target and target not in (entry.candidate_scope_ids or []):
            raise ValidationError("Choose the target among the entry's candidate chats.")
        if entry.decision == "migrate" and target != entry.target_scope_id:
            raise ValidationError("A 'migrate' entry keeps the target found by inspect.")
        if entry.decision == "keep" and data.get("approval") == MigrationApproval.APPROVED:
            raise ValidationError("'keep' entries never move.")
        return data


@admin.register(ScopeMigrationEntry)
class ScopeMigrationEntryAdmin(admin.ModelAdmin):
    form = EntryForm
    list_display = ["item_id", "kind", "decision", "target_scope_id", "approval", "result", "content_preview", "plan"]
    list_filter = ["decision", "approval", "result", "plan"]
    search_fields = ["item_id", "target_scope_id", "content_preview"]
    list_select_related = ["plan"]
    readonly_fields = [
        "plan",
        "item_id",
        "kind",
        "content_preview",
        "decision",
        "candidate_scope_ids",
        "reasons",
        "fingerprint",
        "result",
        "result_detail",
    ]
    actions = ["approve", "reject", "reset"]

    def has_add_permission(self, request):
        return False

    def _set(self, request, queryset, approval):
        by_plan: dict = {}
        for entry in queryset.exclude(decision="keep").only("id", "plan_id"):
            by_plan.setdefault(entry.plan_id, []).append(entry.pk)
        changed = sum(
            migration.plan_set_approval(plan=ScopeMigrationPlan(pk=plan_id), entry_ids=ids, approval=approval)
            for plan_id, ids in by_plan.items()
        )
        self.message_user(
            request,
            f"{changed} entr{'y' if changed == 1 else 'ies'} marked {approval} ('keep' entries are left alone).",
        )

    @admin.action(description="Approve selected entries")
    def approve(self, request, queryset):
        self._set(request, queryset, MigrationApproval.APPROVED)

    @admin.action(description="Reject selected entries")
    def reject(self, request, queryset):
        self._set(request, queryset, MigrationApproval.REJECTED)

    @admin.action(description="Reset selected entries to pending")
    def reset(self, request, queryset):
        self._set(request, queryset, MigrationApproval.PENDING)
