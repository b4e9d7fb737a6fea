"""The warm-up of a new server process (``memory_app.search.warmup``, run by gunicorn's
``post_worker_init`` through ``SERVER_WARMUPS``): what the first search would otherwise load."""

import logging

import pytest

from config import lowtrust
from memory_app.search import background, embeddings, lexicon, warmup


@pytest.fixture
def cold(monkeypatch):
    lowtrust._prototypes.cache_clear()
    monkeypatch.setattr(embeddings, "_background", {})
    monkeypatch.setattr(background, "_queries", {})
    monkeypatch.setattr(background, "_questions", {})


def test_it_loads_the_confusables_and_with_e5_the_model_and_its_background(cold, settings, caplog):
    settings.MEMORY_EMBEDDING_PROVIDER = "e5"
    with caplog.at_level(logging.INFO, logger="memory_app.search.warmup"):
        warmup.warm()
    assert lowtrust._prototypes.cache_info().currsize == 1
    model = embeddings.E5Embedding.model
    assert {model, ("language", model)} <= embeddings._background.keys()
    assert {(model, True), (model, False)} <= background._queries.keys()  # the floors' background queries
    assert {(model, True), (model, False)} <= background._questions.keys()  # the stand-out gate's questions
    assert lexicon._tables is not None
    assert embeddings.E5Embedding._engine is not None
    assert "warmed up" in caplog.text and "(embeddings: e5)" in caplog.text


@pytest.mark.parametrize("provider", ["hashed", "openai"])
def test_another_model_is_left_alone(cold, settings, provider, monkeypatch):
    """No text is embedded: nothing to load for the hashed vectors, and no request leaves the
    process for a remote model before a search asks."""
    settings.MEMORY_EMBEDDING_PROVIDER = provider
    settings.MEMORY_EMBEDDING_URL = "http://127.0.0.1:9/v1"
    settings.MEMORY_EMBEDDING_MODEL = "remote"
    settings.MEMORY_EMBEDDING_DIM = 16

    def refuse(*args, **kwargs):
        raise AssertionError("embedded at warm-up")

    for cls in (embeddings.HashedNgramEmbedding, embeddings.OpenAICompatibleEmbedding):
        monkeypatch.setattr(cls, "embed", refuse)
        monkeypatch.setattr(cls, "embed_query", refuse)
    warmup.warm()
    assert lowtrust._prototypes.cache_info().currsize == 1
    assert embeddings._background == {}


def test_the_server_runs_the_configured_warm_ups_and_survives_a_failing_one(settings):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "config" / "gunicorn.py"
    spec = importlib.util.spec_from_file_location("gunicorn_settings_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ran = []

    class Log:
        def exception(self, message, *args):
            ran.append(("failed", args[0]))

    class Worker:
        log = Log()

    settings.SERVER_WARMUPS = [f"{__name__}._one", f"{__name__}._failing", f"{__name__}._one"]
    _calls.clear()
    module.post_worker_init(Worker())
    assert _calls == ["one", "one"] and ran == [("failed", f"{__name__}._failing")]


_calls: list[str] = []


def _one():
    _calls.append("one")


def _failing():
    raise RuntimeError("no model here")
