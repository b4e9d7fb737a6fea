"""pgvector, only where the extension is installed on the PostgreSQL server.

Adds a ``vec vector`` column next to the portable float32 bytes; ``memory_app.search.pgvector``
then fills it and lets PostgreSQL rank vectors. Everywhere else (SQLite, PostgreSQL without
the extension, or without the right to create it) nothing changes and numpy does the work.
"""

from django.db import DatabaseError, migrations, transaction


def forwards(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        if cursor.fetchone() is None:
            return
        try:
            with transaction.atomic(using=connection.alias):
                cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
                cursor.execute("ALTER TABLE memory_app_memoryembedding ADD COLUMN IF NOT EXISTS vec vector")
        except DatabaseError:
            return  # no privilege to create the extension: stay on the portable path


class Migration(migrations.Migration):
    dependencies = [("memory_app", "0006_scoped_search_index")]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
