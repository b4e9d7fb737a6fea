"""The per-process vectors of a scope (``vectorcache._VectorCache``) after its documents change: what
a process builds from what it held (only the new vectors loaded; on PostgreSQL the refs only of
the new documents, nothing copied when nothing went) must be what a process that held nothing
reads, whatever happened in between: documents added, removed, edited (a new document), made
again by another recipe, embedded by another model, not embedded yet, committed late (an id
below the highest one held)."""

import uuid

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from memory_app.search import vectorcache
from memory_app.search.index import Row, _bump, documents_sync, vectors_store
from memory_app.search.models import SearchDocument, SearchScope

pytestmark = pytest.mark.django_db

DIM = 4
MODEL = "model-a"


def _vector(rng: np.random.Generator) -> bytes:
    return rng.standard_normal(DIM).astype(np.float32).tobytes()


class _Scope:
    """One scope's documents, changed through the index's own functions (or, where no function
    does it, a row update with the version bump the index would make)."""

    def __init__(self, rng: np.random.Generator):
        self.key = f"cache:{uuid.uuid4().hex}"
        self.rng = rng
        self.refs: list[str] = []
        self.count = 0
        # Ids below every document of the scope, free again: where a late commit's documents go.
        placeholders = [Row(ref=f"{self.key}:gap{n}", scope=f"{self.key}:gap", text="gap") for n in range(4)]
        self.free_ids = [doc.pk for doc, _ in documents_sync("memory", placeholders)]
        documents_sync("memory", [Row(ref=row.ref, scope=None) for row in placeholders])

    def add(self, embedded: bool, model: str = MODEL):
        self.count += 1
        ref = f"{self.key}:{self.count}"
        (doc, _), *_ = documents_sync("memory", [Row(ref=ref, scope=self.key, text=f"text {self.count}")])
        if embedded:
            assert vectors_store([(doc.pk, doc.text_hash, _vector(self.rng))], model=model) == 1
        self.refs.append(ref)

    def remove(self, index: int):
        documents_sync("memory", [Row(ref=self.refs.pop(index % len(self.refs)), scope=None)])

    def edit(self, index: int):
        ref = self.refs[index % len(self.refs)]
        self.count += 1
        (doc, _), *_ = documents_sync("memory", [Row(ref=ref, scope=self.key, text=f"edited {self.count}")])
        vectors_store([(doc.pk, doc.text_hash, _vector(self.rng))], model=MODEL)

    def _doc(self, index: int) -> SearchDocument:
        return SearchDocument.objects.get(source="memory", ref=self.refs[index % len(self.refs)])

    def recipe(self, index: int):
        """Made again by a newer recipe (what ``embedder.embed_stale`` writes)."""
        doc = self._doc(index)
        SearchDocument.objects.filter(pk=doc.pk).update(model=MODEL, recipe=doc.recipe + 1, vector=_vector(self.rng))
        _bump({doc.scope_id: [0, 0]})

    def other_model(self, index: int):
        doc = self._doc(index)
        vectors_store([(doc.pk, doc.text_hash, _vector(self.rng))], model="model-b")

    def late(self, embedded: bool):
        """A document whose id is below the highest one of the scope (a transaction that took
        its id first and committed last)."""
        if not self.free_ids or not self.refs:
            return
        scope = SearchScope.objects.get(key=self.key)
        self.count += 1
        ref = f"{self.key}:{self.count}"
        doc = SearchDocument.objects.create(
            pk=self.free_ids.pop(), source="memory", ref=ref, scope=scope, length=2, text_hash="0" * 32
        )
        _bump({scope.pk: [1, 2]})
        if embedded:
            vectors_store([(doc.pk, doc.text_hash, _vector(self.rng))], model=MODEL)
        self.refs.append(ref)

    def entry(self, cache: vectorcache._VectorCache) -> vectorcache.CacheEntry:
        scope = SearchScope.objects.get(key=self.key)
        return cache.entry(scope.pk, scope.version, MODEL, DIM)


def _same(held: vectorcache.CacheEntry, fresh: vectorcache.CacheEntry):
    assert held.refs == fresh.refs
    assert sorted(held.ids.tolist()) == sorted(fresh.ids.tolist())
    rows = {int(doc_id): row for doc_id, row in zip(held.ids, held.matrix, strict=True)}
    for doc_id, row in zip(fresh.ids, fresh.matrix, strict=True):
        assert np.array_equal(rows[int(doc_id)], row), doc_id
    assert held.matrix.shape == (len(held.ids), DIM)
    np.testing.assert_allclose(held.total, fresh.total, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(held.total, held.matrix.sum(axis=0, dtype=np.float64), rtol=1e-9, atol=1e-9)
    if fresh.stamps is not None:
        assert sorted(held.stamps.tolist()) == sorted(fresh.stamps.tolist())


def _as_stored(held: vectorcache.CacheEntry, key: str):
    """The entry holds what the database holds: every document's ref, and the vector of each
    document that has one of the model."""
    docs = SearchDocument.objects.filter(scope__key=key)
    assert held.refs == dict(docs.values_list("id", "ref"))
    stored = {
        doc_id: np.frombuffer(bytes(raw), dtype=np.float32)
        for doc_id, raw in docs.filter(model=MODEL, vector__isnull=False).values_list("id", "vector")
    }
    assert sorted(held.ids.tolist()) == sorted(stored)
    for doc_id, row in zip(held.ids, held.matrix, strict=True):
        assert np.array_equal(stored[int(doc_id)], row), doc_id


STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.booleans()),
        st.tuples(st.just("remove"), st.integers(0, 50)),
        st.tuples(st.just("edit"), st.integers(0, 50)),
        st.tuples(st.just("recipe"), st.integers(0, 50)),
        st.tuples(st.just("other_model"), st.integers(0, 50)),
        st.tuples(st.just("late"), st.booleans()),
    ),
    min_size=1,
    max_size=12,
)


@hypothesis_settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=st.integers(1, 6), steps=STEPS, seed=st.integers(0, 2**32 - 1))
def test_what_a_process_builds_on_what_it_held_is_what_a_fresh_read_gives(start, steps, seed):
    scope = _Scope(np.random.default_rng(seed))
    for n in range(start):
        scope.add(embedded=n % 3 != 2)
    cache = vectorcache._VectorCache()
    scope.entry(cache)
    for op, arg in steps:
        if op in ("remove", "edit", "recipe", "other_model") and not scope.refs:
            continue
        getattr(scope, op)(arg)
        held = scope.entry(cache)
        _same(held, scope.entry(vectorcache._VectorCache()))
        _as_stored(held, scope.key)


def test_a_new_document_reads_one_narrow_statement_and_its_vector():
    """The usual change, a message more: on PostgreSQL the id list (refs only above the highest
    held) and the one new vector."""
    scope = _Scope(np.random.default_rng(1))
    for _ in range(5):
        scope.add(embedded=True)
    cache = vectorcache._VectorCache()
    before = scope.entry(cache)
    scope.add(embedded=True)
    with CaptureQueriesContext(connection) as queries:
        after = scope.entry(cache)
    sqls = [query["sql"] for query in queries.captured_queries]
    assert len(after.ids) == 6 and after.refs.keys() > before.refs.keys()
    if connection.vendor == "postgresql":
        # Through Django's cursor: the scope's row and the id list; the new vector comes on a
        # binary cursor of the same connection (``vectorcache._vectors_of``).
        assert len(sqls) == 2, sqls
        assert "CASE WHEN" in sqls[1] and "text_hash" not in sqls[1]
    _same(after, scope.entry(vectorcache._VectorCache()))
