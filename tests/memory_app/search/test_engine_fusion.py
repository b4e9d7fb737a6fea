"""Score-aware fusion: a document's share of the word ranking is weighted by how much of the
question's word weight it holds."""

from memory_app.search import engine


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
