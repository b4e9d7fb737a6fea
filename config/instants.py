"""Moments from outside the service (query strings, request bodies, imported files).

An ISO 8601 date-time names one instant, and the service compares and keeps instants in UTC. A
valid date-time can still be one the database cannot take as written: Python reads offsets up to
±23:59, PostgreSQL refuses any over ±15:59, and near the ends of the calendar (9999-12-31 at
-05:00, 0001-01-01 at +05:00) the same instant in UTC lies outside the years Python holds. So a
moment from outside is taken to UTC before anything else sees it: it is then an ordinary instant
whatever offset it was written with, or it is refused as out of range (``OutOfRange``, a
``ValueError``), never handed on as written.

An instant the service keeps to show people (an expiry, when a message was said) must also be
one every time zone can show: ``SHOWN_FIRST`` to ``SHOWN_LAST``, a day inside each end (a zone's
offset is under 24 hours). 9999-12-31T23:59:59Z, a common way of writing "never", would be the
year 10000 in Tokyo.
"""

from datetime import UTC, datetime, tzinfo

SHOWN_FIRST = datetime(1, 1, 2, tzinfo=UTC)
SHOWN_LAST = datetime(9999, 12, 30, 23, 59, 59, tzinfo=UTC)


class OutOfRange(ValueError):
    """The instant lies outside the years 1 to 9999 in UTC (or outside what is shown)."""


def in_utc(moment: datetime) -> datetime:
    """``moment`` (aware) as the same instant in UTC."""
    try:
        return moment.astimezone(UTC)
    except OverflowError as error:
        raise OutOfRange("the instant lies outside the years 1 to 9999 in UTC") from error


def in_zone(moment: datetime, zone: tzinfo) -> datetime:
    """``moment`` (aware) as the local time of ``zone``; where the zone cannot show it as a date
    of the years 1 to 9999 (9999-12-31T23:59:59Z kept before the writers held expiries to the
    range, or in the record of the change that set it, is the year 10000 in Tokyo), the nearest
    instant it can (``SHOWN_LAST``, ``SHOWN_FIRST``). What a page or a context line shows."""
    if moment.tzinfo is None:  # astimezone would read it as this machine's local time
        raise ValueError("in_zone() takes an aware date-time")
    try:
        return moment.astimezone(zone)
    except OverflowError:
        return min(max(moment, SHOWN_FIRST), SHOWN_LAST).astimezone(zone)


def shown_everywhere(moment: datetime) -> bool:
    """Every time zone can show ``moment`` (aware, in UTC or not) as a date of the years 1 to 9999."""
    return SHOWN_FIRST <= moment <= SHOWN_LAST
