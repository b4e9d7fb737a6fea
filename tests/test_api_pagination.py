"""``config.api.pagination``: every API list's pages. The first page is read before anything is
counted, so a list whose first page is not full sends no ``COUNT`` statement; the count, the
links and the pages past it are what Django's paginator gives, whatever the sizes."""

import pytest
from django.core.paginator import Paginator
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from config.api.pagination import FirstPageCounts
from memory_app.memories.models import Memory
from tests.factories import UserMemoryFactory

pytestmark = pytest.mark.django_db

LIST = "/api/users/me/memories"


def counts(queries) -> int:
    return sum("COUNT(" in query["sql"].upper() for query in queries)


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


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.integers(0, 7), per_page=st.integers(1, 8), number=st.integers(1, 4))
def test_the_pages_are_django_s_pages_whatever_the_sizes(alice, rows, per_page, number):
    Memory.objects.all().delete()
    for _ in range(rows):
        UserMemoryFactory(owner=alice)
    queryset = Memory.objects.order_by("pk")
    ours, django = FirstPageCounts(queryset, per_page), Paginator(queryset, per_page)
    try:
        expected = django.page(number)
    except Exception as error:
        with pytest.raises(type(error)):
            ours.page(number)
        return
    page = ours.page(number)
    assert [m.pk for m in page] == [m.pk for m in expected]
    assert (ours.count, ours.num_pages, page.has_next()) == (django.count, django.num_pages, expected.has_next())
