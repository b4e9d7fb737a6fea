"""Admin of scope-migration plans: import, inspect, and apply (dry run first)."""

import json

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from config.errors import DomainError
from memory_app.scoped import migration
from memory_app.scoped.admin.migration_report import counts_words, dry_run_report
from memory_app.scoped.consolidation import system_actor
from memory_app.scoped.models import (
    MigrationApproval,
    ScopeMigrationPlan,
)

MAX_PLAN_UPLOAD_BYTES = 64 * 1024 * 1024


class PlanImportForm(forms.Form):
    name = forms.CharField(max_length=200, label=gettext_lazy("Name"))
    plan_file = forms.FileField(
        label=gettext_lazy("Plan file"), help_text=gettext_lazy("JSON written by `migrate_memory_scope inspect`")
    )

    def clean_plan_file(self):
        upload = self.cleaned_data["plan_file"]
        if upload.size > MAX_PLAN_UPLOAD_BYTES:
            raise ValidationError(_("Plan file too large."))
        try:
            data = json.loads(upload.read().decode("utf-8"))
            migration.validate_plan(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValidationError(_("Not valid JSON: %(error)s") % {"error": exc}) from None
        except DomainError as exc:
            raise ValidationError(exc.message) from None
        return data


class ApplyForm(forms.Form):
    apply_all_safe = forms.BooleanField(
        required=False,
        label=gettext_lazy("Apply all safe entries"),
        help_text=gettext_lazy("also every 'migrate' entry not rejected"),
    )
    dry_run = forms.BooleanField(required=False, label=gettext_lazy("Dry run"))
    confirm = forms.BooleanField(required=True, label=gettext_lazy("I confirm: back up, then move the selected items"))


@admin.register(ScopeMigrationPlan)
class ScopeMigrationPlanAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "created_at",
        "entry_count",
        "migrate_count",
        "approved_count",
        "applied_at",
        "backup_name",
        "review_link",
    ]
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

    def get_queryset(self, request: HttpRequest):
        return (
            super()
            .get_queryset(request)
            .annotate(
                n_entries=Count("entries"),
                n_migrate=Count("entries", filter=Q(entries__decision="migrate")),
                n_approved=Count("entries", filter=Q(entries__approval=MigrationApproval.APPROVED)),
            )
        )

    @admin.display(description=gettext_lazy("entries"), ordering="n_entries")
    def entry_count(self, obj):
        return obj.n_entries

    @admin.display(description=gettext_lazy("to migrate"))
    def migrate_count(self, obj):
        return obj.n_migrate

    @admin.display(description=gettext_lazy("approved"))
    def approved_count(self, obj):
        return obj.n_approved

    @admin.display(description=gettext_lazy("review and apply"))
    def review_link(self, obj):
        url = reverse("admin:memory_app_scopemigrationentry_changelist") + f"?plan__id__exact={obj.pk}"
        apply_url = reverse("admin:memory_app_scopemigrationplan_apply", args=[obj.pk])
        return format_html(
            '<a href="{}">{}</a> · <a href="{}">{}</a>', url, _("Review entries"), apply_url, _("Apply…")
        )

    def has_add_permission(self, request: HttpRequest):
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

    def import_view(self, request: HttpRequest):
        if not self.has_change_permission(request):
            raise DjangoPermissionDenied
        form = PlanImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            plan = migration.plan_import(
                data=form.cleaned_data["plan_file"], name=form.cleaned_data["name"], actor=request.user
            )
            messages.success(
                request,
                _("Imported plan %(name)s with %(n)s entries.") % {"name": plan.name, "n": plan.entries.count()},
            )
            return self._changelist()
        context = {
            **self.admin_site.each_context(request),
            "form": form,
            "title": _("Import a scope migration plan"),
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/memory_app/scope_migration_form.html", context)

    def inspect_view(self, request: HttpRequest):
        if not self.has_change_permission(request):
            raise DjangoPermissionDenied
        if request.method != "POST":
            return self._changelist()
        plan = migration.plan_import(
            data=migration.inspect_plan(), name=f"inspect {timezone.now():%Y-%m-%d %H:%M}", actor=request.user
        )
        messages.success(
            request, _("Inspected: plan %(name)s with %(n)s entries.") % {"name": plan.name, "n": plan.entries.count()}
        )
        return self._changelist()

    def apply_view(self, request: HttpRequest, plan_id):
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
            counts = counts_words(report["counts"])
            if report["dry_run"]:
                messages.success(request, _("Dry run, nothing changed: %(counts)s.") % {"counts": counts})
                return self._apply_page(request, plan, ApplyForm(), report=dry_run_report(plan, report))
            if report["backup"]:
                done = _("Applied (backup: %(backup)s): %(counts)s") % {"backup": report["backup"], "counts": counts}
            else:
                done = _("Applied (no backup needed): %(counts)s") % {"counts": counts}
            messages.success(request, done)
            return HttpResponseRedirect(reverse("admin:memory_app_scopemigrationplan_change", args=[plan.pk]))
        return self._apply_page(request, plan, form)

    def _apply_page(self, request: HttpRequest, plan, form, report=None):
        context = {
            **self.admin_site.each_context(request),
            "form": form,
            "plan": plan,
            "report": report,
            "title": _("Apply plan %(name)s") % {"name": plan.name},
            "opts": self.model._meta,
            "approved": plan.entries.filter(approval=MigrationApproval.APPROVED).count(),
        }
        return TemplateResponse(request, "admin/memory_app/scope_migration_form.html", context)
