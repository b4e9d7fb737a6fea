"""Models of chat/global scoped items (docs/scoped-memory.md): consolidation candidates and
scope-migration plans. The items themselves are ``Memory`` rows with ``scope_type`` chat or
global; their vectors belong to the retrieval engine (``search/models.py``)."""

from django.conf import settings
from django.db import models

from identity_app.ids import new_id

__all__ = [
    "CandidateDecision",
    "MemoryCandidate",
    "MigrationApproval",
    "MigrationDecision",
    "ScopeMigrationEntry",
    "ScopeMigrationPlan",
]


class CandidateDecision(models.TextChoices):
    # Written to its chat, waiting for review before it is shared with everyone (global).
    PENDING = "pending"
    CREATED = "created"
    DUPLICATE = "duplicate"
    SUPERSEDED = "superseded"
    REJECTED = "rejected"


def new_candidate_id() -> str:
    return new_id("cand")


class MemoryCandidate(models.Model):
    """Audit record of one candidate found by consolidation or dreaming and what became of it."""

    id = models.CharField(primary_key=True, max_length=40, default=new_candidate_id, editable=False)
    session_id = models.CharField(max_length=200)
    source = models.CharField(max_length=16)  # "consolidate" or "dream"
    extractor = models.CharField(max_length=64)
    scope_type = models.CharField(max_length=16)
    scope_id = models.CharField(max_length=200)
    kind = models.CharField(max_length=16)
    content = models.TextField()
    subject_key = models.CharField(max_length=240, blank=True)
    confidence = models.FloatField(default=1.0)
    decision = models.CharField(max_length=16, choices=CandidateDecision.choices)
    reason = models.CharField(max_length=300, blank=True)
    # The item written, or the existing one it duplicated; forgetting that item forgets this.
    memory = models.ForeignKey(
        "memory_app.Memory", null=True, blank=True, on_delete=models.CASCADE, related_name="candidates"
    )
    evidence = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Who decided on review (approve or reject in the admin), and when; empty while undecided.
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
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
        return f"{self.id} {self.decision} ({self.scope_type}:{self.scope_id})"


class MigrationDecision(models.TextChoices):
    MIGRATE = "migrate"
    KEEP = "keep"
    MANUAL_REVIEW = "manual_review"


class MigrationApproval(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"


class ScopeMigrationPlan(models.Model):
    """A global→chat migration plan (from ``migrate_memory_scope inspect``) under review."""

    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    generated_at = models.CharField(max_length=64, blank=True)
    applied_at = models.DateTimeField(null=True, blank=True)
    backup_name = models.CharField(max_length=500, blank=True)
    last_report = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return self.name


class ScopeMigrationEntry(models.Model):
    plan = models.ForeignKey(ScopeMigrationPlan, on_delete=models.CASCADE, related_name="entries")
    # Not a foreign key: the plan must survive the item being forgotten (it is then stale).
    item_id = models.CharField(max_length=40)
    kind = models.CharField(max_length=16)
    content_preview = models.CharField(max_length=300, blank=True)
    decision = models.CharField(max_length=16, choices=MigrationDecision.choices)
    target_scope_id = models.CharField(max_length=200, blank=True)
    candidate_scope_ids = models.JSONField(default=list, blank=True)
    reasons = models.JSONField(default=list, blank=True)
    fingerprint = models.CharField(max_length=64)
    approval = models.CharField(max_length=16, choices=MigrationApproval.choices, default=MigrationApproval.PENDING)
    result = models.CharField(max_length=32, blank=True)
    result_detail = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["plan", "id"]
        constraints = [
            models.UniqueConstraint(fields=["plan", "item_id"], name="migration_entry_unique_item"),
        ]
        verbose_name_plural = "scope migration entries"

    def __str__(self):
        return f"{self.item_id}: {self.decision} ({self.approval})"
