"""``ApiFilterBackend`` does not build a filter set when a list request has no parameter but the
page's. That is only right if such a set, given no data, gives exactly the queryset as it was (or
its ``unfiltered`` one): checked here for every filter set of an API list view, found through the
URL configuration."""

import django_filters
import pytest
import time_machine
from django.http import QueryDict
from django.urls import URLPattern, URLResolver, get_resolver

from config.api.filters import ApiFilterBackend
from tests.factories import UserMemoryFactory

pytestmark = pytest.mark.django_db


def _views(patterns):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _views(pattern.url_patterns)
        elif isinstance(pattern, URLPattern):
            view_class = getattr(pattern.callback, "view_class", None) or getattr(pattern.callback, "cls", None)
            if view_class is not None:
                yield view_class


def _api_filter_sets():
    found = {}
    for view_class in _views(get_resolver().url_patterns):
        filterset_class = getattr(view_class, "filterset_class", None)
        backends = getattr(view_class, "filter_backends", ())
        if filterset_class is not None and any(issubclass(b, ApiFilterBackend) for b in backends):
            found[filterset_class.__name__] = filterset_class
    return found


@time_machine.travel("2026-12-01 12:00:00Z", tick=False)  # a default may hold "now" (the expiry rule)
def test_every_api_filter_set_it_may_skip_changes_nothing_without_data(alice):
    filter_sets = _api_filter_sets()
    assert {"ConversationFilter", "RunFilter", "MemoryFilter", "ProjectFilter"} <= set(filter_sets)
    skippable = 0
    for name, filterset_class in filter_sets.items():
        queryset = filterset_class._meta.model.objects.all()
        if hasattr(filterset_class, "unfiltered"):
            expected = filterset_class.unfiltered(queryset)
        elif all(
            getattr(filterset_class, name) is getattr(django_filters.FilterSet, name)
            for name in ("__init__", "qs", "filter_queryset")
        ):
            expected = queryset
        else:
            continue  # a default of its own and no unfiltered(): the backend always builds it
        filtered = filterset_class(data=QueryDict(""), queryset=queryset).qs
        assert str(filtered.query) == str(expected.query), name
        skippable += 1
    assert skippable >= 4


def test_the_memory_list_keeps_its_active_only_default_without_parameters(api, alice):
    active = UserMemoryFactory(owner=alice)
    UserMemoryFactory(owner=alice, status="archived")
    client = api(alice)
    assert [row["id"] for row in client.get("/api/users/me/memories").json()["results"]] == [active.pk]
    assert [row["id"] for row in client.get("/api/users/me/memories", {"page": 1}).json()["results"]] == [active.pk]
    assert client.get("/api/users/me/memories", {"status": "all"}).json()["count"] == 2


def test_a_bad_filter_value_and_an_unknown_parameter_are_still_refused(api, alice):
    client = api(alice)
    assert client.get("/api/runs", {"lease_state": "nonsense"}).status_code == 400
    assert client.get("/api/runs", {"status": ""}).status_code == 400
    unknown = client.get("/api/runs", {"page": 1, "nonsense": "x"})
    assert unknown.status_code == 400 and unknown.json()["error"]["code"] == "unknown_parameter"
