"""Score-aware fusion: a document's share of the word ranking is weighted by how much of the
question's word weight it holds."""

from memory_app.search import engine, lexical


def _rankings(coverage):
    return engine.Rankings(
        lexical=[("a", 3.0), ("b", 2.9)],
        dense=[("c", 0.9), ("b", 0.8), ("a", 0.7)],
        terms=["x", "y"],
        mode="hybrid",
        depth=10,
        coverage=coverage,
    )


def test_a_document_holding_the_weighty_words_keeps_its_share():
    # Plain reciprocal rank fusion puts "a" (first by words, third by meaning) before "b".
    assert [ref for ref, _ in engine.fuse(_rankings({"a": 0.1, "b": 1.0}), coverage_power=0)][:2] == ["a", "b"]
    # "a" holds a tenth of the question's word weight (a common word), "b" all of it.
    assert engine.fuse(_rankings({"a": 0.1, "b": 1.0}), coverage_power=1)[0][0] == "b"


def test_full_coverage_is_plain_fusion_and_single_modes_are_untouched():
    full = {"a": 1.0, "b": 1.0}
    assert engine.fuse(_rankings(full), coverage_power=1) == engine.fuse(_rankings(full), coverage_power=0)
    lexical = _rankings({"a": 0.1})
    lexical.mode = "lexical"
    assert engine.fuse(lexical) == [("a", 3.0), ("b", 2.9)]
    dense = _rankings({"a": 0.1})
    dense.mode = "dense"
    assert [ref for ref, _ in engine.fuse(dense)] == ["c", "b", "a"]


def test_rank_reports_the_coverage_of_each_word_hit(db, settings):
    from memory_app.search import documents
    from memory_app.search.index import Row

    settings.MEMORY_EMBEDDING_PROVIDER = "hashed"
    documents.sync(
        "memory",
        [
            Row(ref="m1", scope="user:1", text="the blue whale song"),
            Row(ref="m2", scope="user:1", text="the song"),
            *(Row(ref=f"f{i}", scope="user:1", text=f"a song number {i}") for i in range(8)),
        ],
    )
    found = engine.rank(scopes=["user:1"], query="blue whale song", depth=10, mode="lexical")
    assert found.lexical[0][0] == "m1"
    assert found.coverage["m1"] > 0.99
    assert 0 < found.coverage["m2"] < 0.3  # "song" is in every document: little weight


def test_document_frequencies_are_counted_within_one_budget_per_search(db, monkeypatch):
    """Each term is counted up to its cap: DF_CAP, less when a question has many terms (the
    budget is shared), never less than DF_MIN_CAP; a rarer term keeps its exact count."""
    from memory_app.search.index import Row, documents_sync

    monkeypatch.setattr(lexical, "DF_CAP", 40)
    monkeypatch.setattr(lexical, "DF_BUDGET", 60)
    monkeypatch.setattr(lexical, "DF_MIN_CAP", 12)
    rows = [Row(ref=f"r{i}", scope="user:1", text=f"alpha beta gamma delta epsilon note{i}") for i in range(50)]
    rows += [Row(ref="rare", scope="user:1", text="zeta")]
    documents_sync("memory", rows)
    assert lexical._df_cap(["alpha"]) == 40 and lexical._df_cap(["a", "b", "c"]) == 20
    assert lexical._df_cap([str(i) for i in range(24)]) == 12
    _, _, df = lexical.scopes_and_postings(["user:1"], ["alpha"])
    assert df == {"alpha": 40}
    _, _, df = lexical.scopes_and_postings(["user:1"], ["alpha", "beta", "zeta"])
    assert df == {"alpha": 20, "beta": 20, "zeta": 1}
    terms = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
    _, postings, df = lexical.scopes_and_postings(["user:1"], terms)
    assert df == {"alpha": 12, "beta": 12, "gamma": 12, "delta": 12, "epsilon": 12, "zeta": 1}
    assert all(postings[term] for term in terms)  # the postings are read as before


class _GatedProvider:
    """Hashed vectors, embedded on the helper thread (not ``in_process``) only once the gate
    opens: a rank that waited for the vector before calling ``meanwhile`` would find the gate
    shut (after a timeout, not a hang)."""

    in_process = False

    def __init__(self, inner, gate):
        self.inner = inner
        self.name, self.model, self.dim, self.min_score = inner.name, inner.model, inner.dim, inner.min_score
        self.gate = gate
        self.gate_was_open: list[bool] = []

    def embed(self, texts):
        return self.inner.embed(texts)

    def embed_query(self, text, *, across_languages=False):
        self.gate_was_open.append(self.gate.wait(timeout=5))
        return self.inner.embed_query(text)


def test_meanwhile_runs_once_in_every_mode_before_the_query_vector_is_awaited(db, settings, monkeypatch):
    import threading

    from memory_app.search import documents
    from memory_app.search.embedder import embed_pending
    from memory_app.search.index import Row
    from memory_app.search.models import SearchScope

    settings.MEMORY_EMBEDDING_PROVIDER = "hashed"
    documents.sync("memory", [Row(ref=f"m{i}", scope="user:1", text=f"the blue whale song {i}") for i in range(5)])
    embed_pending()
    hashed = engine.get_provider()
    for mode in ("hybrid", "dense", "lexical"):
        gate = threading.Event()
        provider = _GatedProvider(hashed, gate)
        monkeypatch.setattr(engine, "get_provider", lambda provider=provider: provider)
        calls: list = []

        def meanwhile(versions, calls=calls, gate=gate):
            calls.append(versions)
            gate.set()

        found = engine.rank(scopes=["user:1"], query="blue whale", depth=10, mode=mode, meanwhile=meanwhile)
        assert calls == [(SearchScope.objects.get(key="user:1").version,)], mode
        if mode == "lexical":
            assert provider.gate_was_open == [] and found.lexical and not found.dense
        else:
            assert provider.gate_was_open == [True], mode
            assert len(found.dense) == 5 and not found.warnings
    # Nothing to rank (an unknown scope): still called, once.
    calls = []
    found = engine.rank(scopes=["user:404"], query="blue", depth=5, mode="lexical", meanwhile=calls.append)
    assert calls == [()] and not found.lexical
