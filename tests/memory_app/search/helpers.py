"""Test doubles of the search's models."""

from memory_app.search import embeddings, engine
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


def record_hand_overs(monkeypatch, seen: list, *, checked: tuple[object, str]) -> BesideProvider:
    """The engine's model becomes a ``BesideProvider`` with no question under way; ``seen``
    receives, in order on the request's thread, ``("soon", text)`` each time a question is handed
    to the model and ``"auth"`` each time ``checked`` (a module and the name of its function that
    checks a credential) is called. Returns the model."""
    provider = BesideProvider()
    plain_soon = engine.embed_query_soon
    module, name = checked
    plain_check = getattr(module, name)

    def soon(provider, text, **kwargs):
        seen.append(("soon", text))
        return plain_soon(provider, text, **kwargs)

    def check(*args, **kwargs):
        seen.append("auth")
        return plain_check(*args, **kwargs)

    monkeypatch.setattr(engine, "get_provider", lambda: provider)
    monkeypatch.setattr(engine, "embed_query_soon", soon)
    monkeypatch.setattr(module, name, check)
    monkeypatch.setattr(embeddings, "_started", type(embeddings._started)())
    return provider
