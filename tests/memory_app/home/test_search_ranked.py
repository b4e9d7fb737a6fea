"""The memory home's search answers (docs/home.md, "Search"): one list, best first, where the
notes file's lines rank among the items by the same engine; the best few first and more on
request; a line no longer in the file is never shown."""

import pytest

from memory_app.home.search import SEARCH_FIRST, NotesHit, SearchHit, home_search
from memory_app.notes import services as notes_services
from memory_app.notes.notes_index import SOURCE as NOTES_SOURCE
from memory_app.search.models import SearchDocument
from tests.factories import UserMemoryFactory

pytestmark = pytest.mark.django_db


def _kinds(found):
    return ["notes" if isinstance(hit, NotesHit) else "memory" for hit in found.ranked]


def test_a_notes_line_ranks_among_the_items_not_below_them(alice):
    UserMemoryFactory(owner=alice, content="Likes green tea.")
    UserMemoryFactory(owner=alice, content="Bought a new teapot in the afternoon.")
    UserMemoryFactory(owner=alice, content="Commutes by bike.")
    notes_services.workspace_file_write(
        user=alice, name="MEMORY.md", content="- Oolong tea every afternoon, oolong only\n- Uses Neovim\n"
    )
    found = home_search(user=alice, query="oolong tea afternoon")
    assert _kinds(found)[0] == "notes" and "memory" in _kinds(found)[1:]
    assert found.ranked[0].line == 1 and "Oolong" in found.ranked[0].text
    assert found.notes == [found.ranked[0]] and all(isinstance(h, SearchHit) for h in found.hits)
    assert "Commutes by bike." not in [h.memory.content for h in found.hits]


def test_a_line_removed_from_the_file_is_never_found_and_a_deleted_file_leaves_the_index(alice):
    notes_services.workspace_file_write(user=alice, name="MEMORY.md", content="- mango lassi on Fridays\n")
    assert [hit.text for hit in home_search(user=alice, query="mango lassi").notes] == ["- mango lassi on Fridays"]
    notes_services.workspace_file_write(user=alice, name="MEMORY.md", content="- papaya now\n")
    assert home_search(user=alice, query="mango lassi").notes == []
    notes_services.workspace_file_delete(user=alice, name="MEMORY.md")
    assert not SearchDocument.objects.filter(source=NOTES_SOURCE).exists()


def test_another_users_notes_lines_are_never_found(alice, bob):
    notes_services.workspace_file_write(user=alice, name="MEMORY.md", content="- secret kumquat recipe\n")
    home_search(user=alice, query="kumquat")
    assert home_search(user=bob, query="kumquat recipe").ranked == []


def test_the_best_few_first_and_more_on_request(web_client, alice, api):
    for n in range(SEARCH_FIRST + 4):
        UserMemoryFactory(owner=alice, content=f"Kiwi note number {n}")
    first = home_search(user=alice, query="kiwi", limit=SEARCH_FIRST)
    assert len(first.ranked) == SEARCH_FIRST and first.more is True
    everything = home_search(user=alice, query="kiwi")
    assert len(everything.ranked) == SEARCH_FIRST + 4 and everything.more is False

    web_client.force_login(alice)
    page = web_client.get("/", {"q": "kiwi"}).content.decode()
    assert page.count('class="home-hit"') == SEARCH_FIRST and 'id="home-search-more"' in page
    more = web_client.get("/", {"q": "kiwi", "more": "1"}).content.decode()
    assert more.count('class="home-hit"') == SEARCH_FIRST + 4 and 'id="home-search-more"' not in more

    body = api(alice).get("/api/users/me/memory-home/search", {"q": "kiwi", "limit": SEARCH_FIRST}).json()
    assert body["more"] is True and len(body["ranked"]) == SEARCH_FIRST
    assert [r["id"] for r in body["ranked"]] == [r["id"] for r in body["results"]]


@pytest.fixture
def web_client(client):
    return client
