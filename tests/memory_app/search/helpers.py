"""Test doubles of the search's models."""

from memory_app.search.embeddings import HashedNgramEmbedding


class BesideProvider(HashedNgramEmbedding):
    """The tests' model, run beside the caller as e5 is (on a helper thread); ``embedded``
    lists the questions it was asked, in order."""

    in_process = False

    def __init__(self):
        super().__init__()
        self.embedded: list[str] = []

    def embed_query(self, text, *, across_languages=False):
        self.embedded.append(text)
        return super().embed_query(text, across_languages=across_languages)
