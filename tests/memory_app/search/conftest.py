"""Fixtures of the search tests."""

import pytest

from memory_app.search import engine
from memory_app.search.embeddings import get_provider


@pytest.fixture
def e5(settings):
    """The e5 model, documents embedded when written, and no vectors held from another test."""
    settings.MEMORY_EMBEDDING_PROVIDER = "e5"
    settings.MEMORY_EMBED_IN_BACKGROUND = False
    engine.vector_cache.clear()
    yield get_provider()
    engine.vector_cache.clear()
