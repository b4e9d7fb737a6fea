"""Deleting reads: with the item they name, with the notes history, and after the retention."""

from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from memory_app.reads.models import ItemKind, MemoryRead

PURGE_BATCH = 5000


def reads_forget(*, item_kind: str, refs: list[str]) -> int:
    """Physically delete the reads of these items (called where the items are forgotten)."""
    if not refs:
        return 0
    count, _ = MemoryRead.objects.filter(item_kind=item_kind, item_ref__in=list(refs)).delete()
    return count


def reads_forget_notes(*, user_id: int) -> int:
    """The reads of a user's notes-file versions go with the notes history."""
    count, _ = MemoryRead.objects.filter(user_id=user_id, item_kind=ItemKind.NOTES).delete()
    return count


def reads_purge(*, now: datetime | None = None, days: int | None = None) -> int:
    """Delete at most ``PURGE_BATCH`` reads older than ``MEMORY_READS_RETENTION_DAYS`` (the
    worker calls it every round); returns how many were deleted."""
    days = settings.MEMORY_READS_RETENTION_DAYS if days is None else days
    cutoff = (now or timezone.now()) - timedelta(days=days)
    ids = list(MemoryRead.objects.filter(at__lt=cutoff).order_by("at").values_list("pk", flat=True)[:PURGE_BATCH])
    if not ids:
        return 0
    count, _ = MemoryRead.objects.filter(pk__in=ids).delete()
    return count
