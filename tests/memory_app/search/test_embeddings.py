import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from django.core.management import call_command

from config.errors import ServiceUnavailable
from config.logs import _request_id, current_request_id
from memory_app.memories import services
from memory_app.memories.models import Memory
from memory_app.scoped import search
from memory_app.scoped.services import scoped_item_create
from memory_app.search import embeddings
from memory_app.search.embedder import embed_pending
from memory_app.search.embeddings import (
    HashedNgramEmbedding,
    OpenAICompatibleEmbedding,
    embed_query_soon,
    from_bytes,
    to_bytes,
)
from memory_app.search.models import SearchDocument

A = "milky:private:10001"


def test_hashed_embedding_is_deterministic_normalised_and_fixed_size():
    provider = HashedNgramEmbedding(dim=128)
    first = provider.embed(["I like green tea", "咖啡", ""])
    again = HashedNgramEmbedding(dim=128).embed(["I like green tea", "咖啡", ""])
    assert first.shape == (3, 128) and first.dtype == np.float32
    assert np.array_equal(first, again)
    assert np.linalg.norm(first[0]) == pytest.approx(1.0, abs=1e-5)
    assert not first[2].any()  # empty text is the zero vector, never NaN
    similar = provider.embed(["green tea please"])[0] @ first[0]
    unrelated = provider.embed(["bicycle repair shop"])[0] @ first[0]
    assert similar > 0.3 > unrelated


def test_vector_bytes_round_trip():
    vector = HashedNgramEmbedding().embed(["round trip"])[0]
    assert np.array_equal(from_bytes(to_bytes(vector), 512), vector)


class _SlowProvider:
    """Not in-process: records where and in which request it embeds."""

    name = model = "slow"
    dim = 4
    in_process = False

    def __init__(self, fail=False):
        self.seen = []
        self.fail = fail

    def embed_query(self, text, *, across_languages=False):
        self.seen.append((threading.current_thread().name, current_request_id(), text, across_languages))
        if self.fail:
            raise ServiceUnavailable("Embedding service unreachable.", code="embedding_unavailable")
        return np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)


def test_a_query_is_embedded_on_a_helper_thread_in_the_request_context():
    provider = _SlowProvider()
    token = _request_id.set("req-42")
    try:
        vector = embed_query_soon(provider, "green tea", across_languages=True).result(timeout=10)
    finally:
        _request_id.reset(token)
    assert vector.tolist() == [1.0, 0.0, 0.0, 0.0]
    [(thread, request_id, text, across)] = provider.seen
    assert thread.startswith("query-embedding") and thread != threading.current_thread().name
    assert (request_id, text, across) == ("req-42", "green tea", True)


def test_a_helper_threads_failure_is_raised_where_the_vector_is_awaited():
    pending = embed_query_soon(_SlowProvider(fail=True), "tea")
    with pytest.raises(ServiceUnavailable):
        pending.result(timeout=10)


def test_an_in_process_provider_embeds_at_once_and_a_forked_process_gets_its_own_threads(monkeypatch):
    provider = HashedNgramEmbedding(dim=16)
    pending = embed_query_soon(provider, "tea")
    assert pending.done() and np.array_equal(pending.result(), provider.embed_query("tea"))
    pool = embeddings._helper_pool()
    assert embeddings._helper_pool() is pool
    monkeypatch.setattr(embeddings.os, "getpid", lambda: -1)  # as in a child after fork
    child = embeddings._helper_pool()
    assert child is not pool
    child.shutdown()


class _Handler(BaseHTTPRequestHandler):
    calls: list = []
    dim = 8
    mode = "ok"

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).calls.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        if self.mode == "error":
            self.send_response(500)
            self.end_headers()
            return
        dim = self.dim if self.mode == "ok" else self.dim + 1
        data = [
            {"index": i, "embedding": [float(len(text) % 5 + 1)] + [float(j == i % dim) for j in range(dim - 1)]}
            for i, text in enumerate(body["input"])
        ]
        payload = json.dumps({"data": list(reversed(data)), "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def embedding_server():
    _Handler.calls = []
    _Handler.mode = "ok"
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", _Handler
    server.shutdown()
    server.server_close()


def test_openai_provider_posts_batches_and_normalises(embedding_server):
    url, handler = embedding_server
    provider = OpenAICompatibleEmbedding(base_url=url, model="emb-small", dim=8, api_key="k-123")
    matrix = provider.embed(["a", "bb", "ccc"])
    assert matrix.shape == (3, 8)
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0)
    call = handler.calls[0]
    assert call["path"] == "/v1/embeddings"
    assert call["auth"] == "Bearer k-123"
    assert call["body"] == {"model": "emb-small", "input": ["a", "bb", "ccc"]}
    # Results are put back in input order even if the server sends them shuffled.
    assert matrix[0, 1] > 0 and matrix[1, 2] > 0


@pytest.mark.parametrize("mode", ["error", "wrong_dim"])
def test_openai_provider_failures_are_service_unavailable(embedding_server, mode):
    url, handler = embedding_server
    handler.mode = mode
    with pytest.raises(ServiceUnavailable):
        OpenAICompatibleEmbedding(base_url=url, model="m", dim=8).embed(["a"])


def test_unreachable_provider_is_service_unavailable():
    with pytest.raises(ServiceUnavailable):
        OpenAICompatibleEmbedding(base_url="http://127.0.0.1:9", model="m", dim=8, timeout=2).embed(["a"])


@pytest.mark.django_db
def test_a_search_whose_embedding_service_is_down_is_503_without_the_socket_error(settings, api, svc):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nobody listens once the block ends
    settings.MEMORY_EMBEDDING_PROVIDER = "openai"
    settings.MEMORY_EMBEDDING_URL = f"http://127.0.0.1:{port}/v1"
    settings.MEMORY_EMBEDDING_MODEL = "emb-small"
    settings.MEMORY_EMBEDDING_DIM = 8
    scoped_item_create(actor=svc, session_id=A, kind="fact", content="green tea")
    response = api(svc).post("/api/memory/search", {"query": "tea", "session_id": A, "mode": "vector"}, format="json")
    assert response.status_code == 503, response.content
    error = response.json()["error"]
    assert (error["code"], error["message"]) == ("embedding_unavailable", "Embedding service unreachable.")


@pytest.mark.django_db
def test_remote_provider_is_filled_by_refresh_not_inside_writes(embedding_server, settings, svc):
    url, handler = embedding_server
    settings.MEMORY_EMBEDDING_PROVIDER = "openai"
    settings.MEMORY_EMBEDDING_URL = url
    settings.MEMORY_EMBEDDING_MODEL = "emb-small"
    settings.MEMORY_EMBEDDING_DIM = 8
    memory, _ = scoped_item_create(actor=svc, session_id=A, kind="fact", content="abc")
    assert handler.calls == []
    assert SearchDocument.objects.get(ref=memory.pk).vector is None  # indexed by words, no vector yet
    warnings = []
    hits = search.cascade_search(scopes=[("chat", A)], query="abc", limit=5, mode="hybrid", warnings=warnings)
    assert [hit.id for hit in hits] == [memory.pk]  # found by its words meanwhile
    assert warnings and "not embedded yet" in warnings[0]
    call_command("refresh_embeddings", "--no-progress")
    stored = SearchDocument.objects.get(ref=memory.pk)
    assert (stored.model, len(stored.vector)) == ("emb-small", 8 * 4)
    warnings = []
    hits = search.cascade_search(scopes=[("chat", A)], query="abc", limit=5, mode="vector", warnings=warnings)
    assert [hit.id for hit in hits] == [memory.pk] and warnings == []


class _ChangingProvider:
    """The hashed provider under another model name, with a change to the items made while it
    computes (as a remote provider's latency would allow)."""

    in_process = False

    def __init__(self, during):
        self.inner, self.during = HashedNgramEmbedding(), during
        self.name, self.dim, self.min_score = self.inner.name, self.inner.dim, self.inner.min_score
        self.model = "changing-model"

    def embed(self, texts):
        if self.during:
            self.during()
            self.during = None
        return self.inner.embed(texts)

    def embed_query(self, text, *, across_languages=False):
        return self.inner.embed_query(text, across_languages=across_languages)


@pytest.mark.django_db
def test_refresh_keeps_vectors_of_moved_items_and_skips_forgotten_ones(svc, admin, settings):
    moved = services.memory_create(actor=admin, tier="global", kind="preference", content="I like plums")
    archived = services.memory_create(actor=admin, tier="global", kind="preference", content="I like pears")
    kept = services.memory_create(actor=admin, tier="global", kind="preference", content="I like plum jam")

    def change():
        services.memory_rescope(
            actor=svc, memory_id=moved.pk, from_scope=("global", "__global__"), to_scope=("chat", A)
        )
        services.memory_archive(actor=svc, memory_id=archived.pk)

    provider = _ChangingProvider(change)
    assert embed_pending(provider=provider) == 2  # the archived item left the index meanwhile
    docs = {d.ref: (d.scope.key, d.model) for d in SearchDocument.objects.select_related("scope")}
    assert docs == {moved.pk: (f"chat:{A}", "changing-model"), kept.pk: ("global:__global__", "changing-model")}
    assert Memory.objects.get(pk=moved.pk).scope_id == A
    assert embed_pending(provider=provider) == 0  # nothing left to do, nothing duplicated


def test_embed_texts_averages_a_tuples_vectors_and_keeps_single_texts():
    from memory_app.search.embedder import embed_texts

    provider = HashedNgramEmbedding(dim=32)
    out = embed_texts(provider, ["tea", ("green tea", "black coffee"), "milk"])
    single = provider.embed(["tea", "green tea", "black coffee", "milk"])
    assert out.shape == (3, 32)
    assert np.allclose(out[0], single[0]) and np.allclose(out[2], single[3])
    assert np.allclose(out[1], (single[1] + single[2]) / 2)
    assert embed_texts(provider, []).shape == (0, 32)
    assert embed_texts(provider, ["a b"]).shape == (1, 32)
