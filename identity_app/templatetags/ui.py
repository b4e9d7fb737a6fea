"""Template helpers of the web UI: ``{{ value|when }}`` shows a time in the time zone the request
runs in (the profile's, ``identity_app.web.middleware``), with the zone named."""

from django import template
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html

from identity_app.models import Role

register = template.Library()


@register.filter
def when(value, precision: str = "minutes"):
    """``<time datetime="…" title="Asia/Shanghai">2025-06-01 14:30 CST</time>``; seconds with
    ``when:"seconds"``; empty for no value."""
    if not value:
        return ""
    local = timezone.localtime(value)
    shown = date_format(local, "Y-m-d H:i:s T" if precision == "seconds" else "Y-m-d H:i T")
    return format_html(
        '<time datetime="{}" title="{}">{}</time>', value.isoformat(), timezone.get_current_timezone_name(), shown
    )


@register.filter
def role_label(value):
    """A project role's name in the page's language (``owner`` → its label)."""
    try:
        return Role(value).label
    except ValueError:
        return value or ""
