"""The "Connect your agent" page's Python snippets (memory_app/mcp/web.py) run as pasted, with a
real key and the live server's address, against the libraries they name: the Python client,
mem0's client (the version requirements-dev.txt pins) and the LangGraph store."""

import pytest
from memsvc import Client

from memory_app.mcp.web import connection_snippets


@pytest.fixture
def snippets(integrations):
    return connection_snippets(
        base_url=integrations.base,
        mcp_url=f"{integrations.base}/mcp",
        key=integrations.keys["erin"],
        username="erin",
        service=False,
        local=False,
    )


def erins_texts(integrations) -> list[str]:
    """erin is this test's own user: no other test writes for her."""
    with Client(integrations.base, integrations.keys["erin"]) as erin:
        return [m["content"] for m in erin.list_memories(page_size=200)["results"]]


def test_the_python_snippets_run_as_pasted(integrations, snippets, monkeypatch):
    for line in snippets["langgraph_env"].text.splitlines():
        variable, value = line.removeprefix("export ").split("=", 1)
        monkeypatch.setenv(variable, value.strip("'"))
    for name, written in (
        ("python", "I prefer short answers."),
        ("mem0", "I prefer short answers."),  # the same: NOOP, then its search
        ("langgraph", "Prefers aisle seats."),
    ):
        exec(compile(snippets[name].text, snippets[name].ident, "exec"), {})
        assert erins_texts(integrations).count(written) == 1, name  # mem0's add: known already, no copy
