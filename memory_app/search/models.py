"""Data of the retrieval engine: stored vectors of memory rows."""

from django.db import models


class MemoryEmbedding(models.Model):
    """One vector of one item for one provider/model, stored portably as float32 bytes.

    Vectors are computed from the content only, so a scope change never invalidates them.
    Deleting the memory deletes its vectors (cascade).
    """

    memory = models.ForeignKey("memory_app.Memory", on_delete=models.CASCADE, related_name="embeddings")
    # Copies of the item's scope and "is active", kept in step by memory_app.search.index in
    # the same transaction as the item, so a scope's vectors are one index range away.
    scope_type = models.CharField(max_length=16)
    scope_id = models.CharField(max_length=200)
    active = models.BooleanField(default=True)
    provider = models.CharField(max_length=64)
    model = models.CharField(max_length=128)
    dim = models.PositiveIntegerField()
    vector = models.BinaryField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["memory", "provider", "model"], name="embedding_unique_model"),
        ]
        indexes = [
            models.Index(fields=["provider", "model", "memory"], name="embedding_model_idx"),
            models.Index(
                fields=["scope_type", "scope_id", "provider", "model", "id"],
                include=["memory"],
                condition=models.Q(active=True),
                name="embedding_scope_idx",
            ),
        ]

    def __str__(self):
        return f"{self.memory_id} {self.provider}/{self.model}"
