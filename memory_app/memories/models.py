"""Tiered memories: one ``Memory`` row per remembered statement in one of four tiers, and
project summaries (docs/tiers.md)."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from identity_app.ids import new_id
from identity_app.models import Project

GLOBAL_SCOPE_ID = "__global__"
MAX_CONTENT_CHARS = 4000


class Tier(models.TextChoices):
    USER = "user", _("User")
    PROJECT = "project", _("Project")
    CHAT = "chat", _("Chat")
    GLOBAL = "global", _("Global")


# The tiers of bot chat memory (docs/scoped-memory.md): indexed for search, written through session keys.
SCOPED_TIERS = (Tier.CHAT, Tier.GLOBAL)


class Kind(models.TextChoices):
    FACT = "fact", _("Fact")
    PREFERENCE = "preference", _("Preference")
    DECISION = "decision", _("Decision")
    CONVENTION = "convention", _("Convention")
    TASK = "task", _("Task")
    PROCEDURE = "procedure", _("Procedure")
    WARNING = "warning", _("Warning")
    SUMMARY = "summary", _("Summary")


KIND_VALUES = frozenset(Kind.values)


# Identity tiers (user, project) accept only these four (docs/tiers.md).
IDENTITY_KINDS = frozenset({Kind.FACT, Kind.PREFERENCE, Kind.DECISION, Kind.CONVENTION})


class Status(models.TextChoices):
    ACTIVE = "active", _("Active")
    SUPERSEDED = "superseded", _("Superseded")
    ARCHIVED = "archived", _("Archived")


class Origin(models.TextChoices):
    MANUAL = "manual", _("Manual")
    API = "api", _("Api")
    AUTO = "auto", _("Auto")
    CONSOLIDATION = "consolidation", _("Consolidation")
    TOOL = "tool", _("Tool")
    MIGRATION = "migration", _("Migration")


# How an origin reads to a person (the stored values are for programs).
ORIGIN_LABELS: dict[str, Promise] = {
    Origin.MANUAL: _("written by hand"),
    Origin.API: _("saved through the API"),
    Origin.AUTO: _("extracted by auto-memory"),
    Origin.CONSOLIDATION: _("learned from a chat"),
    Origin.TOOL: _("saved by an agent's memory tool"),
    Origin.MIGRATION: _("moved here by an operator"),
}


def new_memory_id() -> str:
    return new_id("mem")


def live_q(*, now=None, prefix: str = "") -> Q:
    """The one rule for which rows agents, searches and default lists see: active and not
    expired at ``now`` (docs/tiers.md, "Expiry"). An item leaves them the second it expires,
    whatever the purge job has done. ``prefix`` reads the rule through a relation
    (``"memories__"``)."""
    now = now or timezone.now()
    return Q(**{f"{prefix}status": Status.ACTIVE}) & (
        Q(**{f"{prefix}expires_at__isnull": True}) | Q(**{f"{prefix}expires_at__gt": now})
    )


def agent_q(*, now=None, prefix: str = "") -> Q:
    """The one rule for which rows agents may use: live (``live_q``) and not paused. A paused
    memory stays in every list of its owner (marked), but no context, identity block, scoped
    section, agent search or MCP tool gets it until it is resumed (docs/tiers.md, "Pause").
    Lists and the owner's own searches use ``live_q``; every path that hands memory text to an
    agent uses this."""
    return live_q(now=now, prefix=prefix) & Q(**{f"{prefix}paused": False})


def expired_q(*, now=None) -> Q:
    """Active rows whose expiry has passed: out of every context and search, listed only when
    a filter asks for them, purged after the grace period."""
    return Q(status=Status.ACTIVE, expires_at__lte=now or timezone.now())


class Memory(models.Model):
    """One remembered statement in one tier.

    ``scope_id`` names the scope inside the tier: the user's id, the project's id, the chat
    key, or ``__global__``. ``owner``/``project`` duplicate it as foreign keys for the two
    identity tiers so that deleting a user or project deletes their memories.
    """

    id = models.CharField(primary_key=True, max_length=40, default=new_memory_id, editable=False)
    scope_type = models.CharField(max_length=16, choices=Tier.choices, verbose_name=_("tier"))
    scope_id = models.CharField(max_length=200, verbose_name=_("scope ID"))
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="memories",
        verbose_name=_("owner"),
    )
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="memories", verbose_name=_("project")
    )
    kind = models.CharField(max_length=16, choices=Kind.choices, verbose_name=_("kind"))
    content = models.TextField(max_length=MAX_CONTENT_CHARS, verbose_name=_("content"))
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE, verbose_name=_("status"))
    superseded_by = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="supersedes",
        verbose_name=_("superseded by"),
    )
    # Provenance only: no foreign key to threads (docs/tiers.md).
    source_thread_id = models.CharField(max_length=64, blank=True, default="", verbose_name=_("source conversation ID"))
    # The typed chat a chat/global item was learned in (consolidation, dreaming, a bot's write
    # through a session key); empty for everything else, including a legacy session's items and
    # staff's explicit global writes. A global item with this set was shared from that chat: it
    # is part of the memory home of the user the chat is bound to (docs/scoped-memory.md).
    source_chat_key = models.CharField(max_length=200, blank=True, default="", verbose_name=_("source chat key"))
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.API, verbose_name=_("origin"))
    metadata = models.JSONField(default=dict, blank=True, verbose_name=_("metadata"))
    evidence = models.JSONField(default=dict, blank=True, verbose_name=_("evidence"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))
    # When the statement stops being true; null: it does not expire (docs/tiers.md, "Expiry").
    expires_at = models.DateTimeField(null=True, blank=True, verbose_name=_("expires at"))
    # The key-value view of memories (docs/integrations.md, "The store"): a namespace below the
    # tier's own (labels each followed by "."; "" for none) and a key the writer chose, unique
    # among the active versions of one scope, so two writers of one key make one memory and its
    # corrections, never two. Empty key: addressed by its id only (every memory not written so).
    store_namespace = models.CharField(max_length=300, blank=True, default="", verbose_name=_("store namespace"))
    store_key = models.CharField(max_length=200, blank=True, default="", verbose_name=_("store key"))
    # Paused by a person: listed as ever, used by no agent (``agent_q``) until resumed. Changed
    # in place (``memory_change``), each change recorded as a ``MemoryChange``.
    paused = models.BooleanField(default=False, verbose_name=_("paused"))

    class Meta:
        verbose_name = _("memory")
        verbose_name_plural = _("memories")
        ordering = ["-created_at", "-id"]
        indexes = [
            # "latest active in a scope": the query behind every context and list.
            models.Index(
                fields=["scope_type", "scope_id", "status", "-created_at"],
                name="memory_scope_latest_idx",
            ),
            models.Index(fields=["owner", "status", "-created_at"], name="memory_owner_idx"),
            # A user's own memories newest first: the memory list's page.
            models.Index(fields=["owner", "scope_type", "-created_at", "-id"], name="memory_owner_recent_idx"),
            # The default list's count (live_q: active and not expired) from the index alone: with
            # the expiry test the count read every row of the user (3.3 ms at 10,000 memories on
            # PostgreSQL, 1.35 ms with this index; docs/deploy.md, Performance).
            models.Index(
                fields=["owner", "scope_type", "expires_at"],
                condition=Q(status="active"),
                name="memory_owner_live_idx",
            ),
            models.Index(fields=["project", "status", "-created_at"], name="memory_project_idx"),
            # Only rows that expire: the purge job and the "expiring soon" group read them.
            models.Index(fields=["expires_at"], condition=Q(expires_at__isnull=False), name="memory_expires_idx"),
            # "shared from your chats": the global items learned in the chats bound to a user.
            models.Index(
                fields=["source_chat_key", "-created_at"],
                name="memory_shared_from_chat_idx",
                condition=Q(scope_type=Tier.GLOBAL) & ~Q(source_chat_key=""),
            ),
        ]
        constraints = [
            models.CheckConstraint(
                name="memory_tier_fields_consistent",
                condition=(
                    Q(scope_type=Tier.USER, owner__isnull=False, project__isnull=True)
                    | Q(scope_type=Tier.PROJECT, owner__isnull=True, project__isnull=False)
                    | (
                        Q(scope_type=Tier.CHAT, owner__isnull=True, project__isnull=True)
                        & ~Q(scope_id="")
                        & ~Q(scope_id=GLOBAL_SCOPE_ID)
                    )
                    | Q(
                        scope_type=Tier.GLOBAL,
                        owner__isnull=True,
                        project__isnull=True,
                        scope_id=GLOBAL_SCOPE_ID,
                    )
                ),
            ),
            models.UniqueConstraint(
                fields=["scope_type", "scope_id", "store_namespace", "store_key"],
                condition=Q(status=Status.ACTIVE) & ~Q(store_key=""),
                name="memory_store_key_unique",
            ),
            models.CheckConstraint(name="memory_kind_valid", condition=Q(kind__in=Kind.values)),
            models.CheckConstraint(name="memory_status_valid", condition=Q(status__in=Status.values)),
            models.CheckConstraint(
                name="memory_active_row_has_no_successor",
                # A superseded row is never active; an active row never points forward.
                condition=~Q(status=Status.ACTIVE, superseded_by__isnull=False),
            ),
        ]

    def __str__(self):
        return f"{self.id} [{self.get_scope_type_display()}/{self.get_kind_display()}/{self.get_status_display()}]"

    def is_expired(self, now=None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or timezone.now())

    @property
    def expired(self) -> bool:
        return self.is_expired()

    @property
    def origin_label(self) -> str:
        return str(ORIGIN_LABELS.get(self.origin, self.origin))


class ChangedField(models.TextChoices):
    PAUSED = "paused", _("Paused")
    EXPIRES_AT = "expires_at", _("Expiry")


class MemoryChange(models.Model):
    """One change made to a memory in place (``memory_change``): its expiry or whether it is
    paused. No new version is written for these; this record is their provenance, shown with
    the item and exported with it, and forgotten with it."""

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="changes", verbose_name=_("memory"))
    field = models.CharField(max_length=16, choices=ChangedField.choices, verbose_name=_("field"))
    # JSON values: a boolean for ``paused``, an ISO 8601 string or null for ``expires_at``.
    old_value = models.JSONField(null=True, blank=True, verbose_name=_("old value"))
    new_value = models.JSONField(null=True, blank=True, verbose_name=_("new value"))
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("changed by"),
    )
    changed_at = models.DateTimeField(default=timezone.now, verbose_name=_("changed at"))

    class Meta:
        verbose_name = _("memory change")
        verbose_name_plural = _("memory changes")
        ordering = ["-changed_at", "-id"]
        indexes = [models.Index(fields=["memory", "-changed_at"], name="memory_change_latest_idx")]
        constraints = [
            models.CheckConstraint(name="memory_change_field_valid", condition=Q(field__in=ChangedField.values))
        ]

    def __str__(self):
        return f"{self.memory_id} {self.field}: {self.old_value!r} → {self.new_value!r}"


class ProjectSummary(models.Model):
    """Project summaries; their text becomes ``project_summary_context`` (never merged)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="summaries", verbose_name=_("project"))
    title = models.CharField(max_length=200, blank=True, verbose_name=_("title"))
    content = models.TextField(max_length=20000, verbose_name=_("content"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("project summary")
        verbose_name_plural = _("project summaries")
        ordering = ["-updated_at", "-id"]
        indexes = [models.Index(fields=["project", "-updated_at"], name="summary_project_idx")]

    def __str__(self):
        return self.title or _("Summary %(id)s") % {"id": self.pk}
