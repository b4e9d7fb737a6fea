"""Reads of auto-memory data; a user sees only their own log."""

from django.db.models import QuerySet

from memory_app.models import AutoMemoryLogEntry


def auto_memory_log_for(*, user, outcome: str | None = None) -> QuerySet[AutoMemoryLogEntry]:
    qs = AutoMemoryLogEntry.objects.filter(user=user).order_by("-created_at", "-id")
    if outcome:
        qs = qs.filter(outcome=outcome)
    return qs
