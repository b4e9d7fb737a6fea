"""Keyword search index for chat/global items.

PostgreSQL: ``pg_trgm`` and a trigram GIN index on ``Memory.content`` (serves ILIKE for
Chinese and English alike). SQLite: an FTS5 table with the ``trigram`` tokenizer, kept in
step by ``memory_app.search.index`` from the memory services' transactions. Each statement
only runs on its own database.
"""

from django.db import migrations

FTS_TABLE = "memory_scoped_fts"


def forwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        schema_editor.execute(
            "CREATE INDEX IF NOT EXISTS memory_content_trgm_idx "
            "ON memory_app_memory USING gin (content gin_trgm_ops)"
        )
    elif vendor == "sqlite":
        schema_editor.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5("
            "content, memory_id UNINDEXED, scope_type UNINDEXED, scope_id UNINDEXED, "
            "tokenize='trigram')"
        )
        schema_editor.execute(
            f"INSERT INTO {FTS_TABLE} (content, memory_id, scope_type, scope_id) "
            "SELECT content, id, scope_type, scope_id FROM memory_app_memory "
            "WHERE status = 'active' AND scope_type IN ('chat', 'global')"
        )


def backwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS memory_content_trgm_idx")
    elif vendor == "sqlite":
        schema_editor.execute(f"DROP TABLE IF EXISTS {FTS_TABLE}")


class Migration(migrations.Migration):
    dependencies = [("memory_app", "0005_scoped_models")]
    operations = [migrations.RunPython(forwards, backwards)]
