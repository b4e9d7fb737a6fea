"""Who read what (docs/home.md, "Who read this?"): one row per memory item, notes-file version
or conversation message each time its text reached an agent, with the run, the principal and
the token that got it. Written in batches by ``recorder``; kept ``MEMORY_READS_RETENTION_DAYS``;
deleted with the item it names."""

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

__all__ = ["ItemKind", "MemoryRead", "ReadPath"]


class ItemKind(models.TextChoices):
    MEMORY = "memory", _("memory")
    NOTES = "notes", _("notes-file version")
    MESSAGE = "message", _("conversation message")


class ReadPath(models.TextChoices):
    """Where the text went out."""

    CONTEXT_NOTES = "context_notes", _("run context: notes file")
    CONTEXT_IDENTITY = "context_identity", _("run context: latest memories")
    CONTEXT_SCOPED = "context_scoped", _("run context: chat memories")
    HISTORY_SEARCH = "history_search", _("history search tool")
    HISTORY_READ = "history_read", _("history read tool")
    MCP_SEARCH = "mcp_search", _("MCP: search memories")
    MCP_IDENTITY = "mcp_identity", _("MCP: identity context")
    MCP_CHAT_SEARCH = "mcp_chat_search", _("MCP: search a chat's memories")
    API_SEARCH = "api_search", _("API: memory search")
    MEM0 = "mem0", _("mem0-compatible API")
    STORE = "store", _("store API (LangGraph)")


class MemoryRead(models.Model):
    """``item_ref``: a memory id, the SHA-256 of the notes-file text shown (equal to the
    ``after_sha256`` of the change that wrote it when the file was shown whole) or a message id.
    ``user``: whose memory or notes file it is (the run's user, the user a session acts for);
    null for a bot's search of a chat. ``principal``: the identity that got it (the API token's
    user; for a run token, the service that started the run). No foreign key to the item or
    the run: rows outlive neither (deleted with the item, purged after the retention)."""

    id = models.BigAutoField(primary_key=True)
    at = models.DateTimeField(default=timezone.now)
    item_kind = models.CharField(max_length=8, choices=ItemKind.choices)
    item_ref = models.CharField(max_length=64)
    path = models.CharField(max_length=20, choices=ReadPath.choices)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    principal = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    token = models.ForeignKey(
        "identity_app.ApiToken", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    run_ref = models.CharField(max_length=40, blank=True, default="")
    run_generation = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        verbose_name = _("memory read")
        verbose_name_plural = _("memory reads")
        indexes = [
            models.Index(fields=["item_ref", "-at"], name="memoryread_item_idx"),
            models.Index(fields=["user", "item_kind", "-at"], name="memoryread_user_idx"),
            models.Index(fields=["at"], name="memoryread_at_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.item_kind}:{self.item_ref} → {self.run_ref or self.principal_id} at {self.at:%Y-%m-%d %H:%M}"
