"""``q`` / ``search`` on every list filters: a query that matches nothing lists nothing, on every
list endpoint of the API (found in the schema, so a new one is covered or this test fails) and
on the web lists and the memory-home search; a query that matches lists only what matches."""

import pytest
from django.urls import reverse
from drf_spectacular.generators import SchemaGenerator

from memory_app.search.embeddings import get_provider
from tests.factories import ChatMemoryFactory, ProjectMemoryFactory, UserMemoryFactory

pytestmark = pytest.mark.django_db

NONSENSE = ["xyzzy plugh", "qwpzx vbnmk", "zzzz"]
SEARCH_PARAMS = {"q", "search"}
TOPICS = [
    "Prefers green tea in the morning.",
    "Deploys happen on Tuesdays after the standup.",
    "The billing service runs on PostgreSQL 16.",
    "Her beagle Biscuit is allergic to chicken.",
    "Runs a half marathon in June.",
    "Uses Vim with a dark colour scheme.",
]


@pytest.fixture
def world(alice, project):
    for index in range(30):
        UserMemoryFactory(owner=alice, content=f"{TOPICS[index % len(TOPICS)]} (note {index})")
        ProjectMemoryFactory(project=project, created_by=alice, content=f"{TOPICS[index % len(TOPICS)]} #{index}")
    ChatMemoryFactory(scope_id="milky:private:10001", content="Prefers green tea in the morning.")
    return {"project": project}


def search_operations() -> list[str]:
    """Every GET list of the API that takes ``q`` or ``search`` (the run context's ``query`` is a
    ranking of the context, not a filter)."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    paths = []
    for path, operations in schema["paths"].items():
        get = operations.get("get")
        if get and SEARCH_PARAMS & {p["name"] for p in get.get("parameters", []) if p["in"] == "query"}:
            paths.append(path)
    return sorted(paths)


def rows_of(body: dict) -> list:
    return body["results"]


def test_the_schema_lists_the_searchable_lists_this_test_knows():
    assert search_operations() == [
        "/api/conversations/",
        "/api/projects/{project_id}/identity-memories/",
        "/api/users/me/memories/",
        "/api/users/me/memory-home/search/",
    ]


@pytest.mark.parametrize("query", NONSENSE)
def test_a_nonsense_query_lists_nothing_on_every_api_list(api, alice, svc, world, query):
    client = api(alice)
    api(svc).post("/api/conversations", {"user": "alice", "title": "Green tea and deploys"}, format="json")
    for path in search_operations():
        url = path.replace("{project_id}", world["project"].pk)
        params = [
            p for p in SEARCH_PARAMS if p != "search" or ("memory-home" not in url and "conversations" not in url)
        ]
        for param in params:
            response = client.get(url, {param: query})
            assert response.status_code == 200, (url, response.content)
            assert rows_of(response.json()) == [], (url, param, query)
        # without the query, the list is not empty: the filter is what emptied it
        if "memory-home" not in url:
            assert rows_of(client.get(url).json()), url


@pytest.mark.parametrize("query", NONSENSE)
def test_a_nonsense_query_lists_nothing_on_the_web(client, alice, world, query):
    client.force_login(alice)
    items = reverse("web:memory_home_items")
    pages = [
        (items, {"source": "user"}),
        (items, {"source": f"project:{world['project'].pk}"}),
        (reverse("web:home"), {}),
    ]
    for page, params in pages:
        response = client.get(page, {**params, "q": query})
        assert response.status_code == 200, page
        found = response.context.get("found")
        if found is not None:  # the memory home's search
            assert found.hits == [], page
        else:
            assert list(response.context["page"].object_list) == [], page
            # without the query the list is not empty: the filter is what emptied it
            assert list(client.get(page, params).context["page"].object_list), page


def test_a_word_query_lists_only_the_memories_holding_it(api, alice, world):
    body = api(alice).get("/api/users/me/memories/", {"q": "beagle", "page_size": 100}).json()
    assert body["results"] and all("beagle" in row["content"] for row in body["results"])
    assert len(body["results"]) == 5


def test_the_floor_is_the_providers_own(settings):
    provider = get_provider()
    assert provider.name == "hashed-ngram" and settings.MEMORY_EMBEDDING_PROVIDER == "hashed"
    assert provider.min_score > 0
