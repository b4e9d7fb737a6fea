"""Memories and the clock: the reader's time zone and the date label that context lines carry
("[2026-11-30, until 2026-12-12]"), so an agent can tell a 2024 fact from yesterday's and
knows when a statement stops being true (docs/tiers.md, "Expiry")."""

import zoneinfo
from datetime import datetime, tzinfo

from django.conf import settings

from config.instants import in_zone
from identity_app.models import ChatBinding, Profile, User


def zone_named(name: str | None) -> tzinfo:
    """The zone ``name``, or the server's (``TIME_ZONE``) for an empty or unknown name."""
    try:
        return zoneinfo.ZoneInfo(name or settings.TIME_ZONE)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return zoneinfo.ZoneInfo(settings.TIME_ZONE)


def user_zone(user: User | None) -> tzinfo:
    """The time zone of ``user``'s profile (read only: no profile row is created here)."""
    if user is None or not getattr(user, "pk", None):
        return zone_named(None)
    return zone_named(Profile.objects.filter(user_id=user.pk).values_list("timezone", flat=True).first())


def chat_zone(chat_key: str | None) -> tzinfo:
    """The time zone of the user the chat ``chat_key`` is bound to (the server's when none)."""
    if not chat_key:
        return zone_named(None)
    user_id = ChatBinding.objects.filter(chat_key=chat_key).values_list("user_id", flat=True).first()
    name = Profile.objects.filter(user_id=user_id).values_list("timezone", flat=True).first() if user_id else None
    return zone_named(name)


def _day(value: datetime, zone: tzinfo, *, with_time: bool) -> str:
    local = in_zone(value, zone)
    day = local.date().isoformat()  # four digits in any year (strftime writes the year 999 as 999)
    if with_time and (local.hour, local.minute) not in ((0, 0), (23, 59)):
        return f"{day} {local:%H:%M}"
    return day


def when_label(*, created_at: datetime | None, expires_at: datetime | None, zone: tzinfo) -> str:
    """``[2026-11-30]``, or ``[2026-11-30, until 2026-12-12 18:00]`` for an item that expires
    (the time only when it is not the end or start of a day); empty without any date."""
    parts = []
    if created_at is not None:
        parts.append(_day(created_at, zone, with_time=False))
    if expires_at is not None:
        parts.append(f"until {_day(expires_at, zone, with_time=True)}")
    return f"[{', '.join(parts)}]" if parts else ""


def dated(text: str, *, created_at: datetime | None, expires_at: datetime | None, zone: tzinfo) -> str:
    """``text`` behind its date label: the form of one item in a context block."""
    label = when_label(created_at=created_at, expires_at=expires_at, zone=zone)
    return f"{label} {text}" if label else text
