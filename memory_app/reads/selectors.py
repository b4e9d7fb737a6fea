"""Reads as their readers are shown them. Which reads a person may see is decided by the
selectors of the items (``memory_app.home.reads``): these take the refs already allowed."""

from collections.abc import Iterable
from typing import Any

from django.db.models import QuerySet

from memory_app.reads.models import ItemKind, MemoryRead


def reads_of(*, item_kind: str, refs: Iterable[str] | QuerySet[Any, Any]) -> QuerySet[MemoryRead]:
    """Reads of ``refs`` (a list or a values subquery of allowed items), newest first."""
    return (
        MemoryRead.objects.filter(item_kind=item_kind, item_ref__in=refs)
        .select_related("principal", "token")
        .order_by("-at", "-id")
    )


def notes_reads_of(*, user_id: int) -> QuerySet[MemoryRead]:
    return (
        MemoryRead.objects.filter(user_id=user_id, item_kind=ItemKind.NOTES)
        .select_related("principal", "token")
        .order_by("-at", "-id")
    )
