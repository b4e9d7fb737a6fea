"""Data of the retrieval engine: scopes with their statistics, indexed documents with their
vectors, and the postings of the word index.

The engine knows a document only as ``(source, ref)`` (e.g. ``("memory", "mem_…")``), a scope
key and a text; owners decide what is indexed (``memory_app.memories.derived``,
``memory_app.threads.indexing``) inside the same transaction as their rows; the notes file's
lines follow the file lazily (``memory_app.notes.notes_index``).
"""

from django.db import models


class SearchScope(models.Model):
    """One searchable partition ("user:7", "project:prj_…", "chat:<key>", "global:__global__",
    "history:7") and the statistics BM25 needs: how many documents, how many terms in all.

    ``version`` is set to a new random value whenever a document or vector of the scope
    changes; per-process caches of the scope's vectors are keyed by it.
    """

    key = models.CharField(max_length=300, unique=True)
    docs = models.PositiveIntegerField(default=0)
    total_length = models.BigIntegerField(default=0)
    version = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.key} ({self.docs} docs)"


class SearchDocument(models.Model):
    """One indexed row of an owner: its scope, length in terms, and vector (if embedded yet).

    Where PostgreSQL has the ``vector`` extension, the table also holds a ``vec halfvec`` copy of
    the vector (migration 0021), which no model names: every model matches its table on every
    database, so whatever reads all of a model's fields (``dumpdata``, the admin) works on SQLite
    and on a PostgreSQL without the extension too. ``memory_app.search.vectorstore`` reads and
    writes that column in SQL, and fills it from ``vector`` where it is missing (``backfill``,
    run by every ``prepare_node``, ``refresh_embeddings`` and the migration).

    ``model`` names the embedding model of ``vector`` ("" while not embedded); a change of the
    configured model makes every vector stale until ``refresh_embeddings`` re-embeds it.
    ``recipe`` is the version of what the source embeds for a document when its vector was made
    (``embedder.register_source``): a vector of an older recipe keeps serving until the worker or
    ``refresh_embeddings`` replaces it.
    """

    source = models.CharField(max_length=16)
    ref = models.CharField(max_length=64)
    scope = models.ForeignKey(SearchScope, on_delete=models.CASCADE, related_name="documents")
    length = models.PositiveIntegerField(default=0)
    text_hash = models.CharField(max_length=32)
    model = models.CharField(max_length=128, blank=True, default="")
    vector = models.BinaryField(null=True)
    recipe = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source", "ref"], name="search_document_unique_ref")]
        indexes = [
            models.Index(fields=["scope", "model", "id"], name="search_document_scope_idx"),
            models.Index(fields=["model", "id"], name="search_document_model_idx"),
            models.Index(fields=["source", "recipe", "id"], name="search_document_recipe_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.source}:{self.ref}"


class SearchPosting(models.Model):
    """One term of one document: how often it occurs (``tf``) and the document's length
    (``length``), so ranking reads one index range per term and nothing else."""

    scope = models.ForeignKey(SearchScope, on_delete=models.CASCADE, related_name="+", db_index=False)
    term = models.CharField(max_length=64)
    document = models.ForeignKey(SearchDocument, on_delete=models.CASCADE, related_name="postings")
    tf = models.PositiveSmallIntegerField()
    length = models.PositiveIntegerField()

    class Meta:
        indexes = [
            models.Index(fields=["scope", "term", "document", "tf", "length"], name="search_posting_term_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.term} in {self.document_id}"
