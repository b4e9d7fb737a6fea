"""Models of chat/global scoped items (docs/scoped-memory.md): consolidation candidates and
scope-migration plans. The items themselves are ``Memory`` rows with ``scope_type`` chat or
global; their vectors belong to the retrieval engine (``search/models.py``)."""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from identity_app.ids import new_id
from memory_app.memories.models import Kind, Tier

__all__ = [
    "CandidateDecision",
    "ChatForgetUndo",
    "MemoryCandidate",
    "MigrationApproval",
    "MigrationDecision",
    "ScopeMigrationEntry",
    "ScopeMigrationPlan",
]


class CandidateDecision(models.TextChoices):
    # Written to its chat, waiting for review before it is shared with everyone (global).
    PENDING = "pending", _("Pending")
    CREATED = "created", _("Created an item")
    DUPLICATE = "duplicate", _("Duplicate")
    SUPERSEDED = "superseded", _("Superseded")
    REJECTED = "rejected", _("Rejected")


def new_candidate_id() -> str:
    return new_id("cand")


class MemoryCandidate(models.Model):
    """Audit record of one candidate found by consolidation or dreaming and what became of it."""

    id = models.CharField(primary_key=True, max_length=40, default=new_candidate_id, editable=False)
    session_id = models.CharField(max_length=200, verbose_name=_("session ID"))
    source = models.CharField(max_length=16, verbose_name=_("source"))  # "consolidate" or "dream"
    extractor = models.CharField(max_length=64, verbose_name=_("extractor"))
    scope_type = models.CharField(max_length=16, choices=Tier.choices, verbose_name=_("tier"))
    scope_id = models.CharField(max_length=200, verbose_name=_("scope ID"))
    kind = models.CharField(max_length=16, choices=Kind.choices, verbose_name=_("kind"))
    content = models.TextField(verbose_name=_("content"))
    subject_key = models.CharField(max_length=240, blank=True, verbose_name=_("subject key"))
    confidence = models.FloatField(default=1.0, verbose_name=_("confidence"))
    decision = models.CharField(max_length=16, choices=CandidateDecision.choices, verbose_name=_("decision"))
    reason = models.CharField(max_length=300, blank=True, verbose_name=_("reason"))
    # The item written, or the existing one it duplicated; forgetting that item forgets this.
    memory = models.ForeignKey(
        "memory_app.Memory",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="candidates",
        verbose_name=_("memory"),
    )
    evidence = models.JSONField(default=dict, blank=True, verbose_name=_("evidence"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    # Who decided on review (approve or reject in the admin), and when; empty while undecided.
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("reviewed by"),
    )
    reviewed_at = models.DateTimeField(null=True, blank=True, verbose_name=_("reviewed at"))

    class Meta:
        verbose_name = _("memory candidate")
        verbose_name_plural = _("memory candidates")
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["session_id", "-created_at"], name="candidate_session_idx"),
            # The review queue: what waits for an operator.
            models.Index(
                fields=["-created_at"],
                name="candidate_pending_idx",
                condition=models.Q(decision="pending"),
            ),
            models.Index(fields=["scope_type", "scope_id", "-created_at"], name="candidate_scope_idx"),
        ]

    def __str__(self):
        return f"{self.id} {self.get_decision_display()} ({self.scope_id})"


class MigrationDecision(models.TextChoices):
    MIGRATE = "migrate", _("Migrate")
    KEEP = "keep", _("Keep")
    MANUAL_REVIEW = "manual_review", _("Manual Review")


class MigrationApproval(models.TextChoices):
    PENDING = "pending", _("Pending")
    APPROVED = "approved", _("Approved")
    REJECTED = "rejected", _("Rejected")


class ScopeMigrationPlan(models.Model):
    """A global→chat migration plan (from ``migrate_memory_scope inspect``) under review."""

    name = models.CharField(max_length=200, verbose_name=_("name"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("created by"),
    )
    generated_at = models.CharField(max_length=64, blank=True, verbose_name=_("generated at"))
    applied_at = models.DateTimeField(null=True, blank=True, verbose_name=_("applied at"))
    backup_name = models.CharField(max_length=500, blank=True, verbose_name=_("backup"))
    last_report = models.JSONField(default=dict, blank=True, verbose_name=_("last report"))

    class Meta:
        verbose_name = _("scope migration plan")
        verbose_name_plural = _("scope migration plans")
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return self.name


class ScopeMigrationEntry(models.Model):
    plan = models.ForeignKey(
        ScopeMigrationPlan, on_delete=models.CASCADE, related_name="entries", verbose_name=_("plan")
    )
    # Not a foreign key: the plan must survive the item being forgotten (it is then stale).
    item_id = models.CharField(max_length=40, verbose_name=_("item ID"))
    kind = models.CharField(max_length=16, choices=Kind.choices, verbose_name=_("kind"))
    content_preview = models.CharField(max_length=300, blank=True, verbose_name=_("content"))
    decision = models.CharField(max_length=16, choices=MigrationDecision.choices, verbose_name=_("decision"))
    target_scope_id = models.CharField(max_length=200, blank=True, verbose_name=_("target chat"))
    candidate_scope_ids = models.JSONField(default=list, blank=True, verbose_name=_("candidate chats"))
    reasons = models.JSONField(default=list, blank=True, verbose_name=_("reasons"))
    fingerprint = models.CharField(max_length=64, verbose_name=_("fingerprint"))
    approval = models.CharField(
        max_length=16, choices=MigrationApproval.choices, default=MigrationApproval.PENDING, verbose_name=_("approval")
    )
    result = models.CharField(max_length=32, blank=True, verbose_name=_("result"))
    result_detail = models.CharField(max_length=300, blank=True, verbose_name=_("result detail"))

    class Meta:
        verbose_name = _("scope migration entry")
        verbose_name_plural = _("scope migration entries")
        ordering = ["plan", "id"]
        constraints = [
            models.UniqueConstraint(fields=["plan", "item_id"], name="migration_entry_unique_item"),
        ]

    def __str__(self):
        return f"{self.item_id}: {self.get_decision_display()} ({self.get_approval_display()})"


def new_undo_id() -> str:
    return new_id("undo")


class ChatForgetUndo(models.Model):
    """What forgetting a whole chat deleted (its items with their changes in place, and
    consolidation's records of the chat, pending reviews included), kept for its user for
    ``MEMORY_FORGET_UNDO_MINUTES`` so that it can be undone; then deleted for good (by the
    worker, or at once when the user says so). No agent, search, list or export reads it: the
    items are forgotten the moment the chat is (docs/home.md, "Undo")."""

    id = models.CharField(primary_key=True, max_length=40, default=new_undo_id, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", verbose_name=_("user")
    )
    chat_key = models.CharField(max_length=200, verbose_name=_("chat key"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    expires_at = models.DateTimeField(verbose_name=_("expires at"))
    # The rows as Django's JSON serializer writes them, to be put back as they were.
    memories = models.JSONField(default=list, verbose_name=_("memories"))
    changes = models.JSONField(default=list, verbose_name=_("changes"))
    candidates = models.JSONField(default=list, verbose_name=_("candidates"))
    item_count = models.PositiveIntegerField(default=0, verbose_name=_("items"))
    pending_count = models.PositiveIntegerField(default=0, verbose_name=_("pending reviews"))

    class Meta:
        verbose_name = _("undo of a forgotten chat")
        verbose_name_plural = _("undos of forgotten chats")
        indexes = [models.Index(fields=["expires_at"], name="chat_forget_undo_expiry_idx")]

    def __str__(self):
        return f"{self.chat_key} ({self.item_count})"
