"""pgvector for the retrieval engine, only where the PostgreSQL server offers the extension.

- State only: the unmanaged ``DocumentVector`` model, which names the ``vec`` column of
  ``memory_app_searchdocument`` for the ORM (no table of its own; no SQL on any database).
- PostgreSQL whose server lists ``vector`` in ``pg_available_extensions``: ``CREATE EXTENSION
  IF NOT EXISTS vector`` and a ``vec halfvec`` column (in a savepoint: without the right to
  create the extension, nothing changes), filled from the float32 bytes of the rows that have
  a vector, then the HNSW index of the configured embedding model
  (``memory_app.search.vectorstore.install``, which ``prepare_node`` runs again at every start,
  so an extension installed later is taken up then). Everywhere else (SQLite, PostgreSQL
  without the extension) this does nothing and the in-memory ranking stays the only one.

Backwards drops the column and its indexes (the extension stays: other databases of the
server may use it). The column is declared as SQL rather than as a field of ``SearchDocument``
so that the model state, and ``makemigrations --check``, are the same on every database.
"""

import pgvector.django.halfvec
from django.db import migrations, models


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    from memory_app.search import vectorstore  # noqa: PLC0415 - the code of today, on purpose
    from memory_app.search.embeddings import get_provider  # noqa: PLC0415

    provider = get_provider()
    vectorstore.install(provider.model, provider.dim)


def backwards(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE memory_app_searchdocument DROP COLUMN IF EXISTS vec")  # its indexes go with it
    from memory_app.search import vectorstore  # noqa: PLC0415

    vectorstore.reset()


class Migration(migrations.Migration):
    dependencies = [("memory_app", "0020_choice_labels")]

    operations = [
        migrations.CreateModel(
            name="DocumentVector",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("scope_id", models.BigIntegerField()),
                ("model", models.CharField(max_length=128)),
                ("vec", pgvector.django.halfvec.HalfVectorField(null=True)),
            ],
            options={"db_table": "memory_app_searchdocument", "managed": False},
        ),
        migrations.RunPython(forwards, backwards),
    ]
