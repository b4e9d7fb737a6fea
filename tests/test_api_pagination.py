"""``config.api.pagination``: every API list's pages. The first page is read before anything is
counted, so a list whose first page is not full sends no ``COUNT`` statement, nor one whose rows
carry their count (a search's); the count, the links and the pages past it are what Django's
paginator gives, whatever the sizes."""

import pytest
from django.core.paginator import Paginator
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from config.api.pagination import ROW_COUNT, FirstPageCounts, counted_on_rows
from memory_app.memories.models import Memory, Status
from tests.factories import UserMemoryFactory

pytestmark = pytest.mark.django_db

LIST = "/api/users/me/memories"


def counts(queries) -> int:
    """``COUNT`` statements (not a search's own statements, nor a count carried on the rows)."""
    return sum(query["sql"].lstrip().upper().startswith("SELECT COUNT(") for query in queries)


def test_a_first_page_that_is_not_full_is_counted_without_a_count_statement(api, alice, bob):
    mine = [UserMemoryFactory(owner=alice) for _ in range(3)]
    UserMemoryFactory(owner=bob)  # another user's row is not counted
    client = api(alice)
    with CaptureQueriesContext(connection) as queries:
        body = client.get(LIST, {"page_size": 5}).json()
    assert body["count"] == 3 and body["next"] is None and body["previous"] is None
    assert {row["id"] for row in body["results"]} == {m.pk for m in mine}
    assert counts(queries) == 0


def test_a_full_first_page_and_later_pages_are_counted(api, alice):
    made = [UserMemoryFactory(owner=alice) for _ in range(5)]
    client = api(alice)
    with CaptureQueriesContext(connection) as queries:
        first = client.get(LIST, {"page_size": 2}).json()
    assert first["count"] == 5 and first["next"] and first["previous"] is None
    assert counts(queries) == 1
    last = client.get(LIST, {"page_size": 2, "page": 3}).json()
    assert last["count"] == 5 and last["next"] is None and len(last["results"]) == 1
    seen = [
        row["id"] for page in (1, 2, 3) for row in client.get(LIST, {"page_size": 2, "page": page}).json()["results"]
    ]
    assert sorted(seen) == sorted(m.pk for m in made)


def test_an_empty_list_is_one_empty_page_and_a_page_past_it_is_a_404(api, alice):
    client = api(alice)
    body = client.get(LIST).json()
    assert body == {"count": 0, "next": None, "previous": None, "results": []}
    assert client.get(LIST, {"page": 2}).status_code == 404
    UserMemoryFactory(owner=alice)
    assert client.get(LIST, {"page": 2}).status_code == 404
    assert client.get(LIST, {"page": "last"}).json()["count"] == 1


def test_a_full_first_page_of_a_search_is_counted_by_the_statement_that_reads_it(api, alice, bob):
    found = [UserMemoryFactory(owner=alice, content=f"Drinks green tea, cup {i}") for i in range(5)]
    UserMemoryFactory(owner=alice, content="Lives in Berlin")  # not found
    UserMemoryFactory(owner=bob, content="Drinks green tea")  # another user's
    client = api(alice)
    with CaptureQueriesContext(connection) as queries:
        first = client.get(LIST, {"q": "green tea", "page_size": 2}).json()
    assert first["count"] == 5 and first["next"] and len(first["results"]) == 2
    assert counts(queries) == 0
    assert sum(") OVER (" in query["sql"].upper() for query in queries) == 1
    pages = [client.get(LIST, {"q": "green tea", "page_size": 2, "page": n}).json() for n in (1, 2, 3)]
    assert [page["count"] for page in pages] == [5, 5, 5]
    assert sorted(row["id"] for page in pages for row in page["results"]) == sorted(m.pk for m in found)
    assert "list_row_count" not in pages[0]["results"][0]  # the count is not an output field


def test_a_search_of_every_status_counts_the_rows_of_other_statuses_that_hold_its_words(api, alice):
    UserMemoryFactory(owner=alice, content="Drinks green tea")
    UserMemoryFactory(owner=alice, content="Drank green tea", status=Status.ARCHIVED)
    UserMemoryFactory(owner=alice, content="Drank black coffee", status=Status.ARCHIVED)
    body = api(alice).get(LIST, {"q": "green tea", "status": "all", "page_size": 1}).json()
    assert body["count"] == 2 and body["next"]


def test_a_distinct_list_is_not_counted_on_its_rows(alice):
    UserMemoryFactory(owner=alice)
    distinct = Memory.objects.distinct()
    assert counted_on_rows(distinct) is distinct  # the window would count the rows before DISTINCT
    assert ROW_COUNT in counted_on_rows(Memory.objects.all()).query.annotations


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.integers(0, 7), per_page=st.integers(1, 8), number=st.integers(1, 4), counted=st.booleans())
def test_the_pages_are_django_s_pages_whatever_the_sizes(alice, rows, per_page, number, counted):
    Memory.objects.all().delete()
    for _ in range(rows):
        UserMemoryFactory(owner=alice)
    queryset = Memory.objects.order_by("pk")
    ours = FirstPageCounts(counted_on_rows(queryset) if counted else queryset, per_page)
    django = Paginator(queryset, per_page)
    try:
        expected = django.page(number)
    except Exception as error:
        with pytest.raises(type(error)):
            ours.page(number)
        return
    page = ours.page(number)
    assert [m.pk for m in page] == [m.pk for m in expected]
    assert (ours.count, ours.num_pages, page.has_next()) == (django.count, django.num_pages, expected.has_next())
