"""The user's own memories ("About me", the memory home's list of the ``user`` source) through
the Django test client: list, search and filters, add, correct, forget. The old "My memories"
addresses lead there for good."""

from urllib.parse import urlencode

import pytest
from django.urls import reverse

from memory_app.memories.models import MAX_CONTENT_CHARS, Memory, Origin, Status, Tier
from tests.factories import UserMemoryFactory

pytestmark = pytest.mark.django_db


def unmarked(response) -> str:
    """The page without the <mark> tags that highlight matched words."""
    return response.text.replace("<mark>", "").replace("</mark>", "")


ITEMS = "web:memory_home_items"


def items(**params) -> str:
    """The list of the user's own memories, with ``params`` in its query."""
    return f"{reverse(ITEMS)}?{urlencode({'source': 'user', **params})}"


def snapshot():
    return sorted(Memory.objects.values_list("id", "status", "content", "superseded_by_id"))


def test_pages_need_login(client, alice):
    memory = UserMemoryFactory(owner=alice)
    for url in [
        reverse("web:home"),
        reverse("web:my_memories"),
        reverse("web:memory_home_item", args=[memory.pk]),
        reverse("web:memory_home_item_correct", args=[memory.pk]),
        reverse("web:memory_home_item_forget", args=[memory.pk]),
        items(),
        reverse("web:memory_home_item", args=[memory.pk]),
        reverse("web:memory_home_item_correct", args=[memory.pk]),
        reverse("web:memory_home_item_forget", args=[memory.pk]),
        reverse("web:projects"),
        reverse("web:profile"),
    ]:
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), url
    for url in (
        reverse("web:memory_home_item_forget", args=[memory.pk]),
        reverse("web:memory_home_item_forget", args=[memory.pk]),
    ):
        response = client.post(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert Memory.objects.filter(pk=memory.pk).exists()


def test_home_shows_latest_memories_and_projects(web, alice, project):
    UserMemoryFactory(owner=alice, content="I like green tea")
    response = web(alice).get(reverse("web:home"))
    assert response.status_code == 200
    assert "I like green tea" in response.text
    assert "Apollo" in response.text
    assert items().replace("&", "&amp;") in response.text or reverse(ITEMS) + "?source=user" in response.text


def test_list_shows_only_own_active_memories(web, alice, bob):
    UserMemoryFactory(owner=alice, content="alice active")
    UserMemoryFactory(owner=alice, content="alice old", status=Status.ARCHIVED)
    UserMemoryFactory(owner=bob, content="bob secret")
    response = web(alice).get(items())
    assert response.status_code == 200
    assert "alice active" in response.text
    assert "alice old" not in response.text
    assert "bob secret" not in response.text


def test_search_and_filters(web, alice):
    UserMemoryFactory(owner=alice, kind="fact", content="Works in Berlin")
    UserMemoryFactory(owner=alice, kind="preference", content="Prefers Berlin coffee")
    UserMemoryFactory(owner=alice, kind="preference", content="Likes tea")
    UserMemoryFactory(owner=alice, kind="fact", content="Archived Berlin fact", status=Status.ARCHIVED)
    client = web(alice)
    url = reverse(ITEMS)

    text = unmarked(client.get(url, {"source": "user", "q": "berlin"}))
    assert "Works in Berlin" in text and "Prefers Berlin coffee" in text and "Likes tea" not in text

    text = unmarked(client.get(url, {"source": "user", "q": "berlin", "kind": "preference"}))
    assert "Prefers Berlin coffee" in text and "Works in Berlin" not in text

    text = client.get(url, {"source": "user", "status": "archived"}).text
    assert "Archived Berlin fact" in text and "Works in Berlin" not in text

    text = unmarked(client.get(url, {"source": "user", "status": "all", "q": "berlin", "kind": ""}))
    assert "Archived Berlin fact" in text and "Works in Berlin" in text


MAX_LIST_QUERIES = 12  # session, user, profile, invitations badge, source, count, page, provenance, roles


def test_list_is_paginated_with_filters_kept(web, alice, django_assert_max_num_queries):
    for n in range(45):
        UserMemoryFactory(owner=alice, kind="fact", content=f"numbered fact {n:02d}")
    client = web(alice)
    with django_assert_max_num_queries(MAX_LIST_QUERIES):
        first = client.get(reverse(ITEMS), {"source": "user", "kind": "fact"})
    assert first.text.count('class="home-item memory-row"') == 25
    assert "numbered fact 44" in first.text and "numbered fact 19" not in first.text
    assert "kind=fact&amp;page=2" in first.text
    last = client.get(reverse(ITEMS), {"source": "user", "kind": "fact", "page": 2})
    assert last.text.count('class="home-item memory-row"') == 20
    assert "numbered fact 00" in last.text


def test_create_memory(web, alice):
    response = web(alice).post(items(), {"kind": "preference", "content": "  Answer in German  "})
    assert response.status_code == 302
    memory = Memory.objects.get()
    assert (memory.scope_type, memory.owner, memory.kind, memory.content, memory.origin) == (
        Tier.USER,
        alice,
        "preference",
        "Answer in German",
        Origin.MANUAL,
    )


@pytest.mark.parametrize(
    "data, message",
    [
        ({"kind": "preference", "content": "x" * (MAX_CONTENT_CHARS + 1)}, "longer than"),
        ({"kind": "task", "content": "chat-only kind"}, "Select a valid choice"),
        ({"kind": "fact", "content": "   "}, "This field is required"),
        ({"kind": "fact", "content": "nul \x00 byte"}, "Null characters are not allowed"),
        ({"content": "no kind"}, "This field is required"),
    ],
)
def test_create_rejects_bad_input_and_writes_nothing(web, alice, data, message):
    response = web(alice).post(items(), data)
    assert response.status_code == 400
    assert message in response.text
    assert not Memory.objects.exists()


def test_detail_shows_the_chain(web, alice):
    client = web(alice)
    old = UserMemoryFactory(owner=alice, content="Lives in Paris")
    client.post(reverse("web:memory_home_item_correct", args=[old.pk]), {"kind": old.kind, "content": "Lives in Lyon"})
    new = Memory.objects.get(status=Status.ACTIVE)
    for memory in (old, new):
        text = client.get(reverse("web:memory_home_item", args=[memory.pk])).text
        chain = text[text.index("Correction chain") :]
        assert chain.index("Lives in Paris") < chain.index("Lives in Lyon")  # oldest first
        assert text.count('class="chain-item') == 2


def test_correct_supersedes_and_redirects_to_the_new_version(web, alice):
    client = web(alice)
    old = UserMemoryFactory(owner=alice, kind="fact", content="Uses vim")
    page = client.get(reverse("web:memory_home_item_correct", args=[old.pk]))
    assert page.status_code == 200 and "Uses vim" in page.text
    response = client.post(
        reverse("web:memory_home_item_correct", args=[old.pk]), {"kind": "preference", "content": "Uses emacs"}
    )
    old.refresh_from_db()
    new = Memory.objects.get(status=Status.ACTIVE)
    assert response.status_code == 302 and response["Location"] == reverse("web:memory_home_item", args=[new.pk])
    assert (old.status, old.superseded_by_id) == (Status.SUPERSEDED, new.pk)
    assert (new.content, new.kind, new.owner, new.origin) == ("Uses emacs", "preference", alice, Origin.MANUAL)


def test_correcting_a_superseded_memory_is_a_conflict_and_changes_nothing(web, alice):
    client = web(alice)
    old = UserMemoryFactory(owner=alice, content="v1")
    client.post(reverse("web:memory_home_item_correct", args=[old.pk]), {"kind": old.kind, "content": "v2"})
    before = snapshot()
    response = client.post(reverse("web:memory_home_item_correct", args=[old.pk]), {"kind": old.kind, "content": "v3"})
    assert response.status_code == 409
    assert "only active memories can be superseded" in response.text
    assert snapshot() == before


def test_correct_rejects_oversize_content(web, alice):
    memory = UserMemoryFactory(owner=alice)
    before = snapshot()
    response = web(alice).post(
        reverse("web:memory_home_item_correct", args=[memory.pk]),
        {"kind": memory.kind, "content": "y" * (MAX_CONTENT_CHARS + 1)},
    )
    assert response.status_code == 400
    assert snapshot() == before


def test_forget_asks_for_confirmation_then_deletes(web, alice):
    client = web(alice)
    memory = UserMemoryFactory(owner=alice, content="Forget me")
    page = client.get(reverse("web:memory_home_item_forget", args=[memory.pk]))
    assert page.status_code == 200 and "Forget me" in page.text and 'method="post"' in page.text
    assert Memory.objects.filter(pk=memory.pk).exists()  # GET changes nothing
    response = client.post(reverse("web:memory_home_item_forget", args=[memory.pk]))
    assert response.status_code == 302 and response["Location"] == items()
    assert not Memory.objects.filter(pk=memory.pk).exists()


def test_forget_the_latest_version_forgets_the_older_ones(web, alice):
    client = web(alice)
    old = UserMemoryFactory(owner=alice, content="v1")
    client.post(reverse("web:memory_home_item_correct", args=[old.pk]), {"kind": old.kind, "content": "v2"})
    new = Memory.objects.get(status=Status.ACTIVE)
    page = client.get(reverse("web:memory_home_item_forget", args=[new.pk]))
    assert "1 older version" in page.text
    client.post(reverse("web:memory_home_item_forget", args=[new.pk]))
    assert not Memory.objects.exists()


@pytest.mark.parametrize(
    "page", ["web:memory_home_item", "web:memory_home_item_correct", "web:memory_home_item_forget"]
)
def test_other_users_memory_is_404_on_every_page(web, alice, mallory, page):
    memory = UserMemoryFactory(owner=alice, content="alice private")
    before = snapshot()
    client = web(mallory)
    response = client.get(reverse(page, args=[memory.pk]))
    assert response.status_code == 404
    assert "alice private" not in response.text
    if page != "web:memory_home_item":
        response = client.post(reverse(page, args=[memory.pk]), {"kind": "fact", "content": "hijacked"})
        assert response.status_code == 404
    assert snapshot() == before


def test_a_project_memory_is_not_listed_among_my_own(web, alice, project):
    """One list per source: a project's memory is listed (and opened) under its project, never
    among the user's own."""
    from tests.factories import ProjectMemoryFactory

    memory = ProjectMemoryFactory(project=project, content="apollo convention")
    before = snapshot()
    client = web(alice)
    assert "apollo convention" not in client.get(items()).text
    page = client.get(reverse("web:memory_home_item", args=[memory.pk])).text
    assert "Project Apollo" in page and f"source=project%3A{project.pk}" in page
    assert snapshot() == before


def test_unknown_id_is_404(web, alice):
    assert web(alice).get(reverse("web:memory_home_item", args=["mem_nope"])).status_code == 404


def test_detail_rejects_post(web, alice):
    memory = UserMemoryFactory(owner=alice)
    assert web(alice).post(reverse("web:memory_home_item", args=[memory.pk])).status_code == 405


def test_overlong_search_is_cut_not_ignored(web, alice):
    UserMemoryFactory(owner=alice, content="needle " + "n" * 300)
    UserMemoryFactory(owner=alice, content="haystack")
    text = web(alice).get(reverse(ITEMS), {"source": "user", "q": "needle " + "n" * 400}).text
    assert "haystack" not in text and "needle" in text


def test_search_marks_the_matched_words_and_ranks_best_first(web, alice):
    UserMemoryFactory(owner=alice, kind="fact", content="Moved to Berlin in 2019; Berlin is home now")
    UserMemoryFactory(owner=alice, kind="fact", content="Visited Berlin once <b>briefly</b>")
    response = web(alice).get(reverse(ITEMS), {"source": "user", "q": "Berlin home"})
    rows = response.context["page"].object_list
    assert rows[0].content.startswith("Moved to Berlin")  # more of the query's words
    assert "Moved to <mark>Berlin</mark> in 2019; <mark>Berlin</mark> is <mark>home</mark> now" in response.text
    assert "&lt;b&gt;briefly&lt;/b&gt;" in response.text  # the rest stays escaped


def test_the_old_addresses_lead_to_the_one_list_for_good(web, alice):
    memory = UserMemoryFactory(owner=alice, content="kept")
    client = web(alice)
    response = client.get(reverse("web:my_memories"), {"q": "tea", "kind": "fact", "status": "all", "page": "2"})
    assert response.status_code == 301
    assert response["Location"] == items(q="tea", kind="fact", status="all", page="2")
    for old, new in [
        ("web:my_memory", "web:memory_home_item"),
        ("web:my_memory_correct", "web:memory_home_item_correct"),
        ("web:my_memory_forget", "web:memory_home_item_forget"),
    ]:
        response = client.get(reverse(old, args=[memory.pk]))
        assert response.status_code == 301 and response["Location"] == reverse(new, args=[memory.pk])
    # The old forms are gone: a POST there changes nothing.
    before = snapshot()
    assert client.post(reverse("web:my_memories"), {"kind": "fact", "content": "x"}).status_code == 405
    assert client.post(reverse("web:my_memory_forget", args=[memory.pk])).status_code == 405
    assert snapshot() == before
