"""Reads as their readers are shown them. Which reads a person may see is decided by the
selectors of the items (``memory_app.home.reads``): these take the refs already allowed."""

from collections.abc import Iterable
from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery

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


def last_reads(*, item_kind: str, refs: list[str]) -> dict[str, MemoryRead]:
    """The latest read of each of ``refs`` (a bounded list): one query per 500 refs."""
    found: dict[str, MemoryRead] = {}
    refs = list(dict.fromkeys(refs))
    for start in range(0, len(refs), 500):
        chunk = refs[start : start + 500]
        latest = (
            MemoryRead.objects.filter(item_kind=item_kind, item_ref=OuterRef("item_ref"))
            .order_by("-at", "-id")
            .values("pk")[:1]
        )
        for read in reads_of(item_kind=item_kind, refs=chunk).filter(pk=Subquery(latest)):
            found[read.item_ref] = read
    return found
