"""A query parameter an endpoint does not take is refused and named, not ignored
(``config.api.query``): a misspelt or misplaced filter would otherwise answer everything."""

import string

import pytest
from django.urls import resolve
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.test import APIRequestFactory, force_authenticate

from config.api import query
from config.api.query import NAMES_SHOWN, KnownQueryParameters, taken_query_params
from memory_app.memories.models import Memory, Origin, Tier
from memory_app.memories.services import memory_create

pytestmark = pytest.mark.django_db

MEMORIES = "/api/users/me/memories/"
HOME_SEARCH = "/api/users/me/memory-home/search/"


@pytest.fixture
def alices(alice):
    return [
        memory_create(actor=alice, tier=Tier.USER, kind="preference", content="Prefers green tea", origin=Origin.API),
        memory_create(actor=alice, tier=Tier.USER, kind="fact", content="Lives in Lisbon", origin=Origin.API),
    ]


def _unknown(response, *names):
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "unknown_parameter"
    assert set(error["details"]) == set(names)
    for name in names:
        assert repr(name[:40]) in error["message"]
    return error


def test_a_misspelt_filter_is_refused_not_ignored(api, alice, alices):
    client = api(alice)
    assert len(client.get(MEMORIES, {"kind": "fact"}).json()["results"]) == 1
    _unknown(client.get(MEMORIES, {"kindd": "fact"}), "kindd")
    _unknown(client.get(MEMORIES, {"kind": "fact", "Kind": "fact", "q": "tea"}), "Kind")


def test_a_filter_of_another_list_is_refused_on_this_one(api, alice, alices):
    # ``project`` narrows conversations and runs; the memory list does not take it.
    _unknown(api(alice).get(MEMORIES, {"project": "p1"}), "project")
    assert api(alice).get("/api/conversations/", {"project": "p1"}).status_code == 200


def test_every_documented_parameter_is_taken_and_format_too(api, alice, alices):
    client = api(alice)
    response = client.get(
        MEMORIES,
        {"q": "tea", "kind": "preference", "status": "active", "page": 1, "page_size": 5, "format": "json"},
    )
    assert response.status_code == 200, response.content
    assert [m["content"] for m in response.json()["results"]] == ["Prefers green tea"]


def test_a_filter_of_one_value_given_twice_is_refused_a_repeatable_one_is_not(api, alice, alices):
    client = api(alice)
    response = client.get(MEMORIES, {"q": ["tea", "Lisbon"]})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "repeated_parameter"
    assert set(error["details"]) == {"q"}
    assert client.get(MEMORIES, {"page": ["1", "2"]}).json()["error"]["code"] == "repeated_parameter"
    both = client.get(MEMORIES, {"kind": ["fact", "preference"]})
    assert both.status_code == 200
    assert len(both.json()["results"]) == 2
    # ``ordering`` is an array written in one value (``created_at,title``), not repeated.
    assert client.get("/api/projects/", {"ordering": ["name", "created_at"]}).status_code == 400
    assert client.get("/api/projects/", {"ordering": "name,created_at"}).status_code == 200


def test_without_a_valid_key_the_answer_is_401_whatever_the_query_holds(api, alice, alices):
    for client in (api(), _forged(api)):
        response = client.get(MEMORIES, {"kindd": "fact"})
        assert response.status_code == 401
        assert response.json()["error"]["code"] in ("not_authenticated", "authentication_failed")


def _forged(api):
    client = api()
    client.credentials(HTTP_AUTHORIZATION="Token " + "x" * 40)
    return client


def test_a_write_with_an_unknown_parameter_writes_nothing(api, alice, alices):
    before = list(Memory.objects.order_by("pk").values_list("pk", "content", "status", "updated_at"))
    client = api(alice)
    _unknown(client.post(MEMORIES + "?tier=global", {"content": "Plays the oboe"}, format="json"), "tier")
    memory = alices[0]
    _unknown(client.patch(f"{MEMORIES}{memory.pk}/?force=1", {"content": "Prefers black tea"}, format="json"), "force")
    _unknown(client.delete(f"{MEMORIES}{memory.pk}/?hard=true"), "hard")
    assert list(Memory.objects.order_by("pk").values_list("pk", "content", "status", "updated_at")) == before


def test_a_run_token_call_is_checked_too(world):
    url = f"/api/runs/{world['run_id']}/tools/search_thread_messages/"
    assert world["run"].post(url, {"query": "tea"}, format="json").status_code == 200
    _unknown(world["run"].post(url + "?scope=global", {"query": "tea"}, format="json"), "scope")


def test_head_is_checked_as_get_and_options_and_unknown_methods_are_left_alone(api, alice, alices):
    client = api(alice)
    assert client.head(MEMORIES + "?kindd=fact").status_code == 400
    assert client.head(MEMORIES + "?kind=fact").status_code == 200
    assert client.options(MEMORIES + "?kindd=fact").status_code == 200
    assert client.put(MEMORIES + "?kindd=fact", {}, format="json").status_code == 405
    # A method named after something else the view has is not a handler: 405 too.
    for method in ("DISPATCH", "LIST", "GET_QUERYSET"):
        assert client.generic(method, MEMORIES + "?kindd=fact").status_code == 405, method


def test_the_browsable_api_renders_a_list_with_its_filters_and_forms(alice, alices):
    """DRF's HTML pages (development mode) ask the permissions again as if the request were a
    POST, to decide whether to draw its form: only the method on the wire is checked."""
    view = resolve(MEMORIES).func.cls.as_view(renderer_classes=[BrowsableAPIRenderer, JSONRenderer])
    request = APIRequestFactory().get(MEMORIES, {"kind": "fact", "page": 1}, HTTP_ACCEPT="text/html")
    force_authenticate(request, user=alice)
    response = view(request)
    response.render()
    assert response.status_code == 200
    assert b"Lives in Lisbon" in response.content
    refused = APIRequestFactory().get(MEMORIES, {"kindd": "fact"}, HTTP_ACCEPT="text/html")
    force_authenticate(refused, user=alice)
    response = view(refused)
    response.render()
    assert response.status_code == 400 and b"kindd" in response.content


def test_a_refused_write_renders_in_the_browsable_api_and_counts_once(alice, alices, settings, throttle_clock):
    """The renderer asks the permissions again as the same method, to draw that method's form:
    the request is checked (and counted by the rate limits) once."""
    settings.API_THROTTLE = True
    settings.API_THROTTLE_RATES = {
        **dict.fromkeys(("anon", "user", "run", "search"), "100000/minute"),
        "user": "2/minute",
    }
    view = resolve(MEMORIES).func.cls.as_view(renderer_classes=[BrowsableAPIRenderer, JSONRenderer])
    request = APIRequestFactory().post(
        MEMORIES + "?kindd=fact", {"kind": "fact", "content": "Plays chess"}, format="json", HTTP_ACCEPT="text/html"
    )
    force_authenticate(request, user=alice)
    response = view(request)
    response.render()
    assert response.status_code == 400 and b"kindd" in response.content
    assert not Memory.objects.filter(content="Plays chess").exists()
    second = APIRequestFactory().get(MEMORIES)
    force_authenticate(second, user=alice)
    assert view(second).status_code == 200  # the refused write counted once: this is the second
    third = APIRequestFactory().get(MEMORIES)
    force_authenticate(third, user=alice)
    assert view(third).status_code == 429


def test_many_unknown_names_are_shown_cut_and_counted(api, alice):
    names = [f"x{i:02d}{'y' * 60}" for i in range(NAMES_SHOWN + 3)]
    response = api(alice).get(MEMORIES, dict.fromkeys(names, "1"))
    assert response.status_code == 400
    error = response.json()["error"]
    assert sorted(error["details"]) == names[:NAMES_SHOWN]  # whole, the message cuts them
    assert all(repr(name[:40]) in error["message"] for name in names[:NAMES_SHOWN])
    assert error["message"].endswith("and 3 more.")


def test_the_mem0_api_keeps_its_own_check_and_error(api, alice, alices):
    response = api(alice).get("/v1/memories/", {"user_id": alice.username, "colour": "red"})
    assert response.status_code == 400
    body = response.json()
    assert "colour" in body["detail"]
    assert body["error"]["code"] != "unknown_parameter"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00&=#+%"), min_size=1, max_size=80
    )
)
def test_any_name_the_list_does_not_take_is_refused_and_nothing_is_listed(api, alice, alices, name):
    taken = taken_query_params(resolve(MEMORIES).func.cls, "GET").names
    response = api(alice).get(MEMORIES, {name: "x"})
    if name in taken:
        assert response.status_code in (200, 400)
        if response.status_code == 400:
            assert response.json()["error"]["code"] != "unknown_parameter"
    else:
        _unknown(response, name)
        assert "results" not in response.json()


@given(name=st.text(alphabet=string.ascii_lowercase + "_", min_size=1, max_size=20))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_ascii_name_outside_the_documented_ones_is_refused_on_the_home_search(api, alice, alices, name):
    taken = taken_query_params(resolve(HOME_SEARCH).func.cls, "GET").names
    response = api(alice).get(HOME_SEARCH, {"q": "tea", name: "1"})
    if name in taken:
        assert response.json().get("error", {}).get("code") != "unknown_parameter"
    else:
        _unknown(response, name)


def test_what_is_taken_is_what_the_schema_documents_for_every_endpoint():
    """By construction: the names come from the same inspection as the schema; checked here
    against the whole schema as ``manage.py spectacular`` writes it (its hooks included)."""
    generator = SchemaGenerator()
    schema = generator.get_schema(request=None, public=True)
    checked = 0
    for path, _regex, method, callback in generator.endpoints:
        operation = schema["paths"].get(path, {}).get(method.lower())
        if operation is None or getattr(callback.cls, "own_query_check", False):
            continue
        query = [p for p in operation.get("parameters", ()) if p["in"] == "query"]
        taken = taken_query_params(callback.cls, method)
        assert taken.names == {p["name"] for p in query} | {"format"}, (method, path)
        arrays = {p["name"] for p in query if p["schema"].get("type") == "array" and p.get("explode", True)}
        assert taken.repeatable == arrays, (method, path)
        checked += 1
    assert checked > 80


def _schema_page(callback) -> bool:
    return any(base.__module__ == "drf_spectacular.views" for base in callback.cls.__mro__)


def test_every_api_view_checks_its_query_string():
    """A view that sets its own permissions must keep the check (or check the query itself)."""
    generator = SchemaGenerator()
    generator._initialise_endpoints()
    for path, _regex, method, callback in generator.endpoints:
        view = generator.create_view(callback, method)
        if getattr(view, "own_query_check", False) or _schema_page(callback):
            continue  # the mem0 API's own check; the schema and its page (public, read only)
        kinds = [type(permission) for permission in view.get_permissions()]
        assert KnownQueryParameters in kinds, (method, path)
        assert kinds[-1] is KnownQueryParameters, (method, path)


def test_the_warm_up_reads_every_api_view_a_request_could_ask_for():
    query._taken.clear()
    query.warm()
    for url, method in ((MEMORIES, "GET"), (MEMORIES, "POST"), (HOME_SEARCH, "GET"), ("/api/conversations/", "GET")):
        assert (resolve(url).func.cls, method) in query._taken
    assert "kind" in query._taken[(resolve(MEMORIES).func.cls, "GET")].names
