from datetime import UTC, datetime

from django.db import migrations

# config.instants as of this migration (a migration keeps its own copy of what it depends on).
SHOWN_FIRST = datetime(1, 1, 2, tzinfo=UTC)
SHOWN_LAST = datetime(9999, 12, 30, 23, 59, 59, tzinfo=UTC)


def keep_instants_every_zone_shows(apps, schema_editor):
    """Rows written before every writer held expiries and ``sent_at`` to what every time zone can
    show (``config.instants``): an expiry later than ``SHOWN_LAST`` (9999-12-31T23:59:59Z, written
    for "never", is the year 10000 in Tokyo) becomes ``SHOWN_LAST``, which never comes either, as
    the writers keep it now; a ``sent_at`` outside the range becomes its nearer end. The pages
    and context lines show any instant (``config.instants.in_zone``); this keeps what the API
    and the exports answer the same as what the writers keep."""
    Memory = apps.get_model("memory_app", "Memory")
    Memory.objects.filter(expires_at__gt=SHOWN_LAST).update(expires_at=SHOWN_LAST)
    Message = apps.get_model("memory_app", "Message")
    Message.objects.filter(sent_at__gt=SHOWN_LAST).update(sent_at=SHOWN_LAST)
    Message.objects.filter(sent_at__lt=SHOWN_FIRST).update(sent_at=SHOWN_FIRST)


class Migration(migrations.Migration):
    dependencies = [
        ("memory_app", "0028_memory_owner_live_index"),
    ]

    operations = [
        migrations.RunPython(keep_instants_every_zone_shows, migrations.RunPython.noop),
    ]
