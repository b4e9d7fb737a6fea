"""``memsvc.integrations.langchain.MemoryRetriever`` with LangChain itself, against a live server:
``langchain_tests``' standard retriever tests, unchanged, then what the service adds (best first,
documents that carry their memory, and the rules of whose memories a key reaches)."""

import asyncio
import copy
import uuid

import memsvc
import pytest
from langchain_core.documents import Document
from langchain_tests.integration_tests import RetrieversIntegrationTests
from memsvc import Client
from memsvc.integrations.langchain import MemoryRetriever

BOBS = [
    "Bob likes hiking in the Alps",
    "Bob likes strong black coffee",
    "Bob likes reading science fiction",
    "Bob plays the cello on Sundays",
]


@pytest.fixture(scope="module", autouse=True)
def bobs_memories(integrations):
    with Client(integrations.base, integrations.keys["bob"]) as bob:
        bob.store_batch(
            [
                {"op": "put", "namespace": ["users", "bob", "retriever"], "key": f"m{i}", "value": {"content": text}}
                for i, text in enumerate(BOBS)
            ]
        )
    TestMemoryRetrieverStandard.server = integrations


class TestMemoryRetrieverStandard(RetrieversIntegrationTests):
    server = None

    @property
    def retriever_constructor(self) -> type[MemoryRetriever]:
        return MemoryRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"base_url": self.server.base, "token": self.server.keys["bob"], "user": "bob"}

    @property
    def retriever_query_example(self) -> str:
        return "what does Bob like?"


def test_best_first_with_the_memory_in_each_document(integrations):
    retriever = MemoryRetriever(base_url=integrations.base, token=integrations.keys["bob"], user="bob", k=2)
    first, second = retriever.invoke("coffee")
    assert first.page_content == "Bob likes strong black coffee" and first.metadata["score"] > 0
    assert first.metadata["namespace"] == ["users", "bob", "retriever"] and first.metadata["key"] == "m1"
    assert isinstance(second, Document)
    (only,) = asyncio.run(retriever.ainvoke("cello Sundays", k=1))
    assert only.page_content == "Bob plays the cello on Sundays"


def test_from_env(monkeypatch, integrations):
    monkeypatch.setenv("MEMSVC_URL", integrations.base)
    monkeypatch.setenv("MEMSVC_TOKEN", integrations.keys["svc"])  # a service acting for bob
    (doc,) = MemoryRetriever.from_env(user="bob", k=1).invoke("hiking Alps")
    assert doc.page_content == "Bob likes hiking in the Alps"


def test_a_project_for_its_members_only(integrations):
    project = integrations.keys["project"]
    with Client(integrations.base, integrations.keys["alice"]) as alice:
        alice.add_project_memory(project, f"We deploy on Tuesdays {uuid.uuid4().hex[:6]}", "decision")
    (doc,) = MemoryRetriever(base_url=integrations.base, token=integrations.keys["bob"], project=project, k=1).invoke(
        "deploy"
    )
    assert doc.page_content.startswith("We deploy on Tuesdays")
    with pytest.raises(memsvc.NotFound):
        MemoryRetriever(base_url=integrations.base, token=integrations.keys["carol"], project=project).invoke("deploy")


@pytest.mark.parametrize(
    ("key", "error"), [("alice", memsvc.NotFound), ("lsvc", None), ("forged", memsvc.AuthenticationFailed)]
)
def test_whose_memories_a_key_reaches(integrations, key, error):
    token = integrations.keys.get(key, key)
    retriever = MemoryRetriever(base_url=integrations.base, token=token, user="bob", k=1)
    if error is None:  # the service key limited to bob reaches bob
        assert retriever.invoke("cello")[0].page_content == "Bob plays the cello on Sundays"
        with pytest.raises(memsvc.NotFound):
            MemoryRetriever(base_url=integrations.base, token=token, user="alice").invoke("anything")
        return
    with pytest.raises(error):
        retriever.invoke("cello")


def test_bad_arguments(integrations):
    with pytest.raises(ValueError, match="either user or project"):
        MemoryRetriever(base_url=integrations.base, token="x").invoke("q")
    with pytest.raises(ValueError, match="k is an integer"):
        MemoryRetriever(base_url=integrations.base, token=integrations.keys["bob"], user="bob", k=0).invoke("q")


def test_the_retriever_works_from_one_event_loop_after_another(integrations):
    retriever = MemoryRetriever(base_url=integrations.base, token=integrations.keys["bob"], user="bob", k=2)
    first = asyncio.run(retriever.ainvoke("coffee"))
    second = asyncio.run(retriever.ainvoke("coffee"))
    assert [d.page_content for d in first] == [d.page_content for d in second]
    assert first[0].page_content == "Bob likes strong black coffee"
    assert len(asyncio.run(retriever.abatch(["cello", "hiking"]))) == 2


def test_a_used_retriever_can_be_deep_copied(integrations):
    retriever = MemoryRetriever(base_url=integrations.base, token=integrations.keys["bob"], user="bob", k=1)
    asyncio.run(retriever.ainvoke("coffee"))
    found = retriever.invoke("coffee")
    copied = copy.deepcopy(retriever)
    assert copied.k == 1 and copied.user == "bob" and copied is not retriever
    assert copied.invoke("coffee") == found
    assert retriever.invoke("coffee") == found  # the original keeps its own connections
