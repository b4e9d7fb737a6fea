"""``check --deploy`` findings of the retrieval engine (run by ``prepare_node`` at every start)."""

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.core import checks
from django.db import DatabaseError, connection

from memory_app.search import vectorstore
from memory_app.search.embeddings import get_provider


@checks.register("search", deploy=True)
def pgvector_check(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """On PostgreSQL: warn when large scopes cannot be ranked by meaning for want of pgvector."""
    if connection.vendor != "postgresql" or vectorstore.backend() == "numpy":
        return []
    try:
        vectorstore.reset()
        if not vectorstore.column_ready():
            offered = vectorstore.extension_available()
            missing = (
                "the 'vector' extension is available but not installed in this database (or this role may "
                "not create it)"
                if offered
                else "this PostgreSQL server does not offer the 'vector' extension (pgvector)"
            )
            return [
                checks.Warning(
                    f"Dense search without pgvector: {missing}. Searches over more vectors than fit in "
                    "MEMORY_VECTOR_CACHE_BYTES are ranked by their words only.",
                    hint="Install pgvector 0.8+ on the server (e.g. the postgresql-<version>-pgvector package) and "
                    "restart the nodes ('prepare_node' creates the extension, or a superuser runs 'CREATE EXTENSION "
                    "vector' first). docs/deploy.md, 'Vectors and Redis'.",
                    id="memory_app.W001",
                )
            ]
        provider = get_provider()
        if not vectorstore.index_ready(provider.model, provider.dim):
            return [
                checks.Warning(
                    f"No pgvector index for the embedding model {provider.model!r} ({provider.dim} dimensions): "
                    "large scopes are ranked by their words only.",
                    hint="Run 'manage.py refresh_embeddings' or 'manage.py prepare_node'.",
                    id="memory_app.W002",
                )
            ]
        if vectorstore.index_outdated(provider.model, provider.dim):
            return [
                checks.Warning(
                    f"The pgvector index of {provider.model!r} was built with other settings than this release's "
                    f"(m={vectorstore.HNSW_M}, ef_construction={vectorstore.HNSW_EF_CONSTRUCTION}): "
                    "large scopes are ranked with a lower recall.",
                    hint="Run 'manage.py refresh_embeddings': it builds the index again beside the old one, "
                    "which serves until then (minutes for a million rows). docs/deploy.md, 'Vectors and Redis'.",
                    id="memory_app.W004",
                )
            ]
    except DatabaseError as exc:
        return [checks.Warning(f"Could not look for pgvector: {exc}", id="memory_app.W003")]
    return []
