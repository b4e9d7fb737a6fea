"""Admin of memory candidates: what consolidation and dreaming proposed, as an audit, with
review (approve or reject) through ``review``."""

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, HttpRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.text import Truncator
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from config.admin import WideListMixin
from config.errors import DomainError
from config.http import signed_in_user
from memory_app.scoped import review
from memory_app.scoped.models import (
    CandidateDecision,
    MemoryCandidate,
)

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

    def lookups(self, request: HttpRequest, model_admin):
        return list(CANDIDATE_SOURCE_WORDS.items())

    def queryset(self, request: HttpRequest, queryset):
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

    def get_changelist_instance(self, request: HttpRequest):
        changelist = super().get_changelist_instance(request)
        rows = list(changelist.result_list)  # the page's rows, evaluated once and kept
        owners = review.chat_owners(rows)
        for row in rows:
            vars(row)["chat_owner"] = owners.get(row.pk)
        return changelist

    def has_add_permission(self, request: HttpRequest):
        return False

    def has_change_permission(self, request: HttpRequest, obj=None):
        return False

    def has_review_permission(self, request: HttpRequest):
        return review.staff_may_review_candidates(signed_in_user(request))

    def change_view(self, request: HttpRequest, object_id, form_url="", extra_context=None):
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
    def _confirm_page(self, request: HttpRequest, previews, *, decision: str, from_list: bool):
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

    def _decide(self, request: HttpRequest, previews, *, decision: str) -> None:
        """Decide each previewed candidate through the service, and say what happened to each."""
        decide = review.candidate_approve if decision == review.APPROVE else review.candidate_reject
        for preview in previews:
            try:
                outcome = decide(actor=signed_in_user(request), candidate_id=preview.candidate.pk)
            except DomainError as exc:
                self.message_user(request, f"{Truncator(preview.text).chars(80)}: {exc.message}", messages.ERROR)
                continue
            self.message_user(request, outcome_words(preview, outcome), messages.SUCCESS)

    def review_view(self, request: HttpRequest, object_id, decision):
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

    def _review(self, request: HttpRequest, queryset, decision: str):
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
    def approve_candidates(self, request: HttpRequest, queryset):
        return self._review(request, queryset, review.APPROVE)

    @admin.action(description=gettext_lazy("Reject selected candidates…"), permissions=["review"])
    def reject_candidates(self, request: HttpRequest, queryset):
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
