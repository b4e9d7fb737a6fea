"""Admin of chat/global scoped items: candidates (audit), chat bindings, and scope-migration
plans with per-entry review and apply. Thin: every change goes through the services."""

import json
import re

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError
from django.db.models import Count, Q
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.text import Truncator
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from config.admin import ServiceModelAdmin, WideListMixin
from config.errors import DomainError
from identity_app.chat_bindings import chat_binding_create, chat_binding_delete
from identity_app.models import ChatBinding
from memory_app.scoped import migration, review
from memory_app.scoped.consolidation import system_actor
from memory_app.scoped.models import (
    CandidateDecision,
    MemoryCandidate,
    MigrationApproval,
    MigrationDecision,
    ScopeMigrationEntry,
    ScopeMigrationPlan,
)

MAX_PLAN_UPLOAD_BYTES = 64 * 1024 * 1024
MAX_REPORT_ROWS = 500


# How a candidate was found, and by what, in words (the records keep the codes).
CANDIDATE_SOURCE_WORDS = {
    "consolidate": gettext_lazy("after a turn of the chat"),
    "dream": gettext_lazy("looking back over the chat"),
    "item": gettext_lazy("written by a bot"),
}
EXTRACTOR_WORDS = {
    "deterministic": gettext_lazy("built-in rules"),
    "openai": gettext_lazy("a language model"),
    "api": gettext_lazy("a bot, through the API"),
}


class CandidateSourceFilter(admin.SimpleListFilter):
    title = gettext_lazy("found by")
    parameter_name = "source"

    def lookups(self, request, model_admin):
        return list(CANDIDATE_SOURCE_WORDS.items())

    def queryset(self, request, queryset):
        return queryset.filter(source=self.value()) if self.value() else queryset


@admin.register(MemoryCandidate)
class MemoryCandidateAdmin(WideListMixin, admin.ModelAdmin):
    """Read-only records; approve and reject call ``scoped.review``, each after a page that says
    whose chat the candidate came from, the exact text that would be shared and who would then
    see it (``review.review_preview``), and a message that says what happened."""

    list_display = [
        "preview",
        "decision",
        "chat_of",
        "kind",
        "scope_type",
        "session_id",
        "source_words",
        "created_at",
        "reviewed_by",
    ]
    list_display_links = ["preview"]
    list_filter = ["decision", CandidateSourceFilter, "scope_type", "kind"]
    search_fields = ["id", "session_id", "scope_id", "content", "memory__id"]
    raw_id_fields = ["memory", "reviewed_by"]
    # Every field read-only, the source and the extractor in words.
    readonly_fields = [
        *(f.name for f in MemoryCandidate._meta.fields if f.name not in ("source", "extractor")),
        "source_words",
        "extractor_words",
    ]
    exclude = ["source", "extractor"]
    list_select_related = ["memory", "reviewed_by"]
    actions = ["approve_candidates", "reject_candidates"]
    change_form_template = "admin/memory_app/memorycandidate/change_form.html"

    class Media:
        css = {"all": ["css/admin-memory.css"]}

    @admin.display(description=gettext_lazy("content"))
    def preview(self, obj):
        return Truncator(obj.content).chars(160)

    @admin.display(description=gettext_lazy("found by"), ordering="source")
    def source_words(self, obj):
        return str(CANDIDATE_SOURCE_WORDS.get(obj.source, obj.source))

    @admin.display(description=gettext_lazy("extractor"))
    def extractor_words(self, obj):
        return str(EXTRACTOR_WORDS.get(obj.extractor, obj.extractor))

    @admin.display(description=gettext_lazy("whose chat"))
    def chat_of(self, obj):
        owner = vars(obj).get("chat_owner")
        if owner is None or owner.user is None:
            return _("nobody's (not bound)")
        return owner.user.get_username()

    def get_changelist_instance(self, request):
        changelist = super().get_changelist_instance(request)
        rows = list(changelist.result_list)  # the page's rows, evaluated once and kept
        owners = review.chat_owners(rows)
        for row in rows:
            vars(row)["chat_owner"] = owners.get(row.pk)
        return changelist

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_review_permission(self, request):
        return review.staff_may_review_candidates(request.user)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        candidate = self.get_object(request, unquote(object_id))
        extra = {**(extra_context or {}), "may_review": self.has_review_permission(request)}
        if candidate is not None:
            extra["chat_owner"] = review.chat_owners([candidate])[candidate.pk]
        return super().change_view(request, object_id, form_url, extra)

    def get_urls(self):
        return [
            path(
                "<path:object_id>/review/<str:decision>/",
                self.admin_site.admin_view(self.review_view),
                name="memory_app_memorycandidate_review",
            ),
            *super().get_urls(),
        ]

    # --- deciding, after the page that says what it will do -----------------------------------
    def _confirm_page(self, request, previews, *, decision: str, from_list: bool):
        context = {
            **self.admin_site.each_context(request),
            "title": _("Approve: share with everyone?") if decision == review.APPROVE else _("Reject?"),
            "opts": self.model._meta,
            "previews": previews,
            "decision": decision,
            "everyone": review.everyone_count(),
            "from_list": from_list,
            "action": "approve_candidates" if decision == review.APPROVE else "reject_candidates",
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
            "possible": any(p.possible for p in previews),
        }
        return TemplateResponse(request, "admin/memory_app/memorycandidate/review.html", context)

    def _decide(self, request, previews, *, decision: str) -> None:
        """Decide each previewed candidate through the service, and say what happened to each."""
        decide = review.candidate_approve if decision == review.APPROVE else review.candidate_reject
        for preview in previews:
            try:
                outcome = decide(actor=request.user, candidate_id=preview.candidate.pk)
            except DomainError as exc:
                self.message_user(request, f"{Truncator(preview.text).chars(80)}: {exc.message}", messages.ERROR)
                continue
            self.message_user(request, outcome_words(preview, outcome), messages.SUCCESS)

    def review_view(self, request, object_id, decision):
        """One candidate: GET says what ``decision`` will do; the confirmed POST does it."""
        # The permission first, so that staff without it cannot tell which candidates exist.
        if not self.has_review_permission(request):
            raise DjangoPermissionDenied
        candidate = self.get_object(request, unquote(object_id))
        if candidate is None or decision not in (review.APPROVE, review.REJECT):
            raise Http404
        previews = review.review_previews(candidate_ids=[candidate.pk], decision=decision)
        if request.method == "POST" and request.POST.get("confirmed") == "yes":
            self._decide(request, previews, decision=decision)
            return HttpResponseRedirect(reverse("admin:memory_app_memorycandidate_change", args=[candidate.pk]))
        return self._confirm_page(request, previews, decision=decision, from_list=False)

    def _review(self, request, queryset, decision: str):
        ids = list(queryset.order_by("created_at", "id").values_list("pk", flat=True)[: review.MAX_REVIEW_ROWS + 1])
        if len(ids) > review.MAX_REVIEW_ROWS:
            self.message_user(
                request,
                _("Select at most %(n)s candidates at a time.") % {"n": review.MAX_REVIEW_ROWS},
                messages.ERROR,
            )
            return None
        previews = review.review_previews(candidate_ids=ids, decision=decision)
        if request.POST.get("confirmed") != "yes":
            return self._confirm_page(request, previews, decision=decision, from_list=True)
        self._decide(request, previews, decision=decision)
        return None

    @admin.action(
        description=gettext_lazy(
            "Approve selected candidates (share pending ones with everyone, consolidate rejected ones now)…"
        ),
        permissions=["review"],
    )
    def approve_candidates(self, request, queryset):
        return self._review(request, queryset, review.APPROVE)

    @admin.action(description=gettext_lazy("Reject selected candidates…"), permissions=["review"])
    def reject_candidates(self, request, queryset):
        return self._review(request, queryset, review.REJECT)


def _chat_words(owner: review.ChatOwner) -> str:
    """Whose chat, as the messages say it: “alice”'s chat “Travel” (milky:private:1), or a chat
    bound to nobody."""
    if owner.user is None:
        return _("the chat %(chat)s, bound to nobody") % {"chat": owner.chat_key or "—"}
    if owner.name:
        return _("%(user)s's chat “%(name)s” (%(chat)s)") % {
            "user": owner.user.get_username(),
            "name": owner.name,
            "chat": owner.chat_key,
        }
    return _("%(user)s's chat %(chat)s") % {"user": owner.user.get_username(), "chat": owner.chat_key}


def outcome_words(preview: review.ReviewPreview, outcome: review.ReviewOutcome) -> str:
    """What a decision did, in a sentence an operator can read back."""
    candidate, text = outcome.candidate, "“" + Truncator(preview.text).chars(120) + "”"
    chat = _chat_words(preview.owner)
    if preview.decision == review.APPROVE:
        if candidate.decision == CandidateDecision.DUPLICATE:
            return _("Nothing new was shared: %(text)s was already known to everyone (%(id)s).") % {
                "text": text,
                "id": candidate.memory_id,
            }
        if preview.waiting:
            return _(
                "Shared with everyone: %(text)s, from %(chat)s. Every user's and bot's agents may now find it."
            ) % {
                "text": text,
                "chat": chat,
            }
        return _("Consolidated now, as the chat's review allows: %(text)s (%(decision)s, %(id)s).") % {
            "text": text,
            "decision": candidate.get_decision_display(),
            "id": candidate.memory_id or "—",
        }
    if outcome.archived:
        return _("Rejected: %(text)s. The item it wrote is archived: agents no longer use it.") % {"text": text}
    if preview.waiting:
        return _("Not shared: %(text)s stays in %(chat)s only.") % {"text": text, "chat": chat}
    return _("Rejected: %(text)s. It had written no item that is still in use.") % {"text": text}


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

    def inspect_view(self, request):
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

    def _apply_page(self, request, plan, form, report=None):
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


# Why apply left an entry out, in words (the other reasons are already sentences from apply).
SKIP_REASONS = {
    "rejected": gettext_lazy("it was rejected on review"),
    "keep": gettext_lazy("inspect decided it stays global (keep)"),
    "not approved": gettext_lazy("it is not approved yet (still pending)"),
}
# What apply did with an entry (``migration.apply_plan`` stores these codes), in words.
RESULT_WORDS = {
    "would_apply": gettext_lazy("would move"),
    "applied": gettext_lazy("moved"),
    "skipped": gettext_lazy("skipped"),
    "stale": gettext_lazy("stale"),
    "already_applied": gettext_lazy("already moved"),
    "invalid": gettext_lazy("refused"),
}
# Apply's sentences (stored and printed by the command in English), in the reader's language.
DETAIL_WORDS = {
    "nothing to apply, no backup": gettext_lazy("nothing to apply, no backup"),
    "item no longer exists": gettext_lazy("the item no longer exists"),
    "item changed since inspect": gettext_lazy("the item changed since inspect"),
    "a manual_review entry needs a target chosen from its candidate chats": gettext_lazy(
        "a manual_review entry needs a target chosen from its candidate chats"
    ),
}
_DETAIL_PATTERNS = (
    (re.compile(r"global → chat (?P<chat>.+)"), gettext_lazy("global → chat %(chat)s")),
    (re.compile(r"already in chat (?P<chat>.+)"), gettext_lazy("already in chat %(chat)s")),
    (re.compile(r"invalid target chat (?P<chat>.*)"), gettext_lazy("invalid target chat %(chat)s")),
    (
        re.compile(r"chat (?P<chat>.+) is not what the item's clues name"),
        gettext_lazy("chat %(chat)s is not what the item's clues name"),
    ),
    (
        re.compile(r"the item's clues say (?P<clues>\w+), the plan says (?P<plan>\w+)"),
        gettext_lazy("the item's clues say %(clues)s, the plan says %(plan)s"),
    ),
)


def result_words(result: str) -> str:
    return str(RESULT_WORDS.get(result, result))


def detail_words(detail: str) -> str:
    """A reason or sentence of apply in words; one this module does not know is shown as it is."""
    if detail in SKIP_REASONS:
        return str(SKIP_REASONS[detail])
    if detail in DETAIL_WORDS:
        return str(DETAIL_WORDS[detail])
    for pattern, words in _DETAIL_PATTERNS:
        if match := pattern.fullmatch(detail):
            values = match.groupdict()
            for key in ("clues", "plan"):
                if values.get(key) in MigrationDecision.values:
                    values[key] = MigrationDecision(values[key]).label
            return words % values
    return detail


def counts_words(counts: dict) -> str:
    return ", ".join(f"{result_words(k)}={v}" for k, v in sorted(counts.items()))


def dry_run_report(plan: ScopeMigrationPlan, report: dict) -> dict:
    """What a dry run would move and, for each entry left out, why — with the entry's text and a
    link to it (at most ``MAX_REPORT_ROWS`` rows of each; the counts cover everything)."""
    would: list[dict] = []
    skipped: list[dict] = []
    for row in report["results"]:
        (would if row["result"] == "would_apply" else skipped).append(row)
    shown = would[:MAX_REPORT_ROWS] + skipped[:MAX_REPORT_ROWS]
    entries = {
        e.item_id: e
        for e in plan.entries.filter(item_id__in=[row["item_id"] for row in shown]).only(
            "id", "item_id", "content_preview", "decision"
        )
    }

    def line(row):
        entry = entries.get(row["item_id"])
        return {
            "item_id": row["item_id"],
            "result": result_words(row["result"]),
            "why": detail_words(row["detail"]),
            "preview": entry.content_preview if entry else "",
            "decision": entry.get_decision_display() if entry else "",
            "url": reverse("admin:memory_app_scopemigrationentry_change", args=[entry.pk]) if entry else "",
        }

    return {
        "would_apply": [line(row) for row in would[:MAX_REPORT_ROWS]],
        "skipped": [line(row) for row in skipped[:MAX_REPORT_ROWS]],
        "more_would_apply": max(0, len(would) - MAX_REPORT_ROWS),
        "more_skipped": max(0, len(skipped) - MAX_REPORT_ROWS),
        "note": detail_words(report["note"]),
    }


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
        self.fields["target_scope_id"].choices = choices

    def clean(self):
        data = super().clean()
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

    def has_add_permission(self, request):
        return False

    @admin.display(description=gettext_lazy("result"), ordering="result")
    def result_words(self, entry):
        return result_words(entry.result)

    @admin.display(description=gettext_lazy("result detail"))
    def detail_words(self, entry):
        return detail_words(entry.result_detail)

    def _set(self, request, queryset, approval):
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
    def approve(self, request, queryset):
        self._set(request, queryset, MigrationApproval.APPROVED)

    @admin.action(description=gettext_lazy("Reject selected entries"), permissions=["change"])
    def reject(self, request, queryset):
        self._set(request, queryset, MigrationApproval.REJECTED)

    @admin.action(description=gettext_lazy("Reset selected entries to pending"), permissions=["change"])
    def reset(self, request, queryset):
        self._set(request, queryset, MigrationApproval.PENDING)
