"""Template helpers of the web UI: ``{{ value|when }}`` shows a time in the time zone the request
runs in (the profile's, ``identity_app.web.middleware``), with the zone named."""

from datetime import datetime
from typing import TYPE_CHECKING

from django import template
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html
from django.utils.translation import gettext

from config.instants import in_zone
from identity_app.models import Role

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

register = template.Library()


@register.filter
def when(value: datetime | None, precision: str = "minutes") -> str:
    """``<time datetime="…" title="Asia/Shanghai">2025-06-01 14:30 CST</time>``; seconds with
    ``when:"seconds"``; empty for no value."""
    if not value:
        return ""
    local = in_zone(value, timezone.get_current_timezone())
    text = date_format(local, "Y-m-d H:i:s T" if precision == "seconds" else "Y-m-d H:i T")
    return format_html(
        '<time datetime="{}" title="{}">{}</time>', value.isoformat(), timezone.get_current_timezone_name(), text
    )


@register.filter
def until(value: datetime | None, now: datetime | None = None) -> str:
    """``until Friday 12 Dec`` (the time too unless it is the end or start of a day; the year
    when it is not this year), in the request's time zone, as a ``<time>`` element; "expired
    Friday 12 Dec" once it has passed; empty for no value."""
    if not value:
        return ""
    current = timezone.localtime(now or timezone.now())
    local = in_zone(value, timezone.get_current_timezone())
    # A date format (django.utils.dateformat) each language orders its own way.
    pattern = gettext("l j M") if local.year == current.year else gettext("l j M Y")
    if (local.hour, local.minute) not in ((0, 0), (23, 59)):
        pattern += " H:i"
    text = gettext("expired %(date)s") if value <= current else gettext("until %(date)s")
    return format_html(
        '<time datetime="{}" title="{}" class="expiry">{}</time>',
        value.isoformat(),
        timezone.get_current_timezone_name(),
        text % {"date": date_format(local, pattern)},
    )


@register.filter
def role_label(value: str | None) -> "StrOrPromise":
    """A project role's name in the page's language (``owner`` → its label)."""
    try:
        return Role(value or "").label
    except ValueError:
        return value or ""
