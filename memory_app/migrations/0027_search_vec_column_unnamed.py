"""State only: the unmanaged ``DocumentVector`` model (migration 0021) goes. It named the ``vec``
column of ``memory_app_searchdocument``, which exists only on PostgreSQL with the ``vector``
extension, so ``dumpdata`` (which reads every model, managed or not) failed elsewhere with "no
such column: memory_app_searchdocument.vec". The column stays where it is; no SQL runs on any
database (Django creates and drops no table for an unmanaged model)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("memory_app", "0026_store_keys_external_ids")]

    operations = [migrations.DeleteModel(name="DocumentVector")]
