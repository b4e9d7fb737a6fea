"""Admin of scope-migration entries: per-entry review (target, approve, reject, reset)."""

from typing import cast

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from config.admin import WideListMixin
from memory_app.scoped import migration
from memory_app.scoped.admin.migration_report import detail_words, result_words
from memory_app.scoped.models import (
    MigrationApproval,
    MigrationDecision,
    ScopeMigrationEntry,
    ScopeMigrationPlan,
)


class EntryForm(forms.ModelForm):
    """The target is chosen from the entry's candidate chats (a select, never free text): a
    posted value outside them is refused by the field itself."""

    target_scope_id = forms.ChoiceField(required=False, label=gettext_lazy("target chat"))

    class Meta:
        model = ScopeMigrationEntry
        fields = ["approval", "target_scope_id"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        entry = self.instance
        if entry.decision == MigrationDecision.MANUAL_REVIEW:
            choices = [("", _("— choose one of the candidate chats —"))]
            choices += [(c, c) for c in entry.candidate_scope_ids or [] if isinstance(c, str)]
        elif entry.decision == MigrationDecision.MIGRATE:
            choices = [(entry.target_scope_id, entry.target_scope_id)]  # the target inspect found
        else:
            choices = [("", _("— none: the item stays global —"))]
        cast(forms.ChoiceField, self.fields["target_scope_id"]).choices = choices

    def clean(self):
        super().clean()
        data = self.cleaned_data
        entry = self.instance
        approval, target = data.get("approval"), data.get("target_scope_id") or ""
        if entry.decision == MigrationDecision.KEEP and approval == MigrationApproval.APPROVED:
            raise ValidationError(_("A 'keep' entry never moves, so it cannot be approved."))
        if approval == MigrationApproval.APPROVED and migration.entry_needs_target(
            decision=entry.decision, target_scope_id=target, candidate_scope_ids=entry.candidate_scope_ids
        ):
            raise ValidationError(_("Choose the target among the entry's candidate chats before approving it."))
        return data


@admin.register(ScopeMigrationEntry)
class ScopeMigrationEntryAdmin(WideListMixin, admin.ModelAdmin):
    form = EntryForm
    list_display = [
        "content_preview",
        "item_id",
        "kind",
        "decision",
        "target_scope_id",
        "approval",
        "result_words",
        "detail_words",
        "plan",
    ]
    list_display_links = ["content_preview", "item_id"]
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
        "result_words",
        "detail_words",
    ]
    actions = ["approve", "reject", "reset"]

    class Media:
        css = {"all": ["css/admin-memory.css"]}

    def has_add_permission(self, request: HttpRequest):
        return False

    @admin.display(description=gettext_lazy("result"), ordering="result")
    def result_words(self, entry):
        return result_words(entry.result)

    @admin.display(description=gettext_lazy("result detail"))
    def detail_words(self, entry):
        return detail_words(entry.result_detail)

    def _set(self, request: HttpRequest, queryset, approval):
        by_plan: dict = {}
        for entry in queryset.exclude(decision=MigrationDecision.KEEP).only("id", "plan_id"):
            by_plan.setdefault(entry.plan_id, []).append(entry.pk)
        changed, refused = 0, []
        for plan_id, ids in by_plan.items():
            n, refused_here = migration.plan_set_approval(
                plan=ScopeMigrationPlan(pk=plan_id), entry_ids=ids, approval=approval
            )
            changed += n
            refused += refused_here
        if refused:
            names = ", ".join(e.item_id for e in refused[:20]) + (" …" if len(refused) > 20 else "")
            self.message_user(
                request,
                ngettext(
                    "%(n)s manual_review entry was not approved because it has no target yet: %(names)s. "
                    "Open it and choose the target among its candidate chats first.",
                    "%(n)s manual_review entries were not approved because they have no target yet: %(names)s. "
                    "Open each and choose the target among its candidate chats first.",
                    len(refused),
                )
                % {"n": len(refused), "names": names},
                messages.WARNING,
            )
        self.message_user(
            request,
            ngettext(
                "%(n)s entry marked %(approval)s ('keep' entries are left alone).",
                "%(n)s entries marked %(approval)s ('keep' entries are left alone).",
                changed,
            )
            % {"n": changed, "approval": approval},
        )

    @admin.action(description=gettext_lazy("Approve selected entries"), permissions=["change"])
    def approve(self, request: HttpRequest, queryset):
        self._set(request, queryset, MigrationApproval.APPROVED)

    @admin.action(description=gettext_lazy("Reject selected entries"), permissions=["change"])
    def reject(self, request: HttpRequest, queryset):
        self._set(request, queryset, MigrationApproval.REJECTED)

    @admin.action(description=gettext_lazy("Reset selected entries to pending"), permissions=["change"])
    def reset(self, request: HttpRequest, queryset):
        self._set(request, queryset, MigrationApproval.PENDING)
