"""A list search's question is given to the model before its request's API token is checked,
for a token that had a list search answered in this process, one early start per answered
search (``memory_app.memories.early``): nothing is read or answered early, and nothing else
changes."""

import pytest
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from rest_framework.request import Request

from identity_app import authentication
from identity_app.models import hash_token
from identity_app.services import token_revoke
from memory_app.memories import early, services
from memory_app.memories.filters import SEARCH_MAX_CHARS
from tests.memory_app.search.helpers import record_hand_overs

pytestmark = pytest.mark.django_db

LIST = "/api/users/me/memories"


@pytest.fixture
def events(monkeypatch, settings):
    """What happens, in order, on the request's thread: ``("soon", text)`` when a question is
    handed to the model, ``"auth"`` when an API token is looked up; and the model."""
    settings.MEMORY_SEARCH_MODE = "hybrid"
    seen: list = []
    provider = record_hand_overs(monkeypatch, seen, checked=(authentication, "hash_token"))
    monkeypatch.setattr(early, "_credits", type(early._credits)())
    return seen, provider


@pytest.fixture
def remembered(alice):
    for text in ("I drink green tea every morning", "My sister lives in Porto", "Allergic to peanuts"):
        services.memory_create(actor=alice, tier="user", kind="fact", content=text)
    return alice


def _results(client, query, **params):
    response = client.get(LIST, {"q": query, **params})
    return response.status_code, [row["content"] for row in response.json().get("results", [])]


def test_after_an_answered_search_the_next_question_goes_to_the_model_before_the_token_is_checked(
    api, remembered, events
):
    seen, provider = events
    client = api(remembered)
    assert _results(client, "green tea") == (200, ["I drink green tea every morning"])
    assert seen == ["auth", ("soon", "green tea")]  # no credit yet: as before
    seen.clear()
    status, second = _results(client, "  sister in Porto ")
    assert status == 200 and second[0] == "My sister lives in Porto"
    # Handed over before the check (the question as the filter reads it), taken up by the
    # search after it, embedded once.
    assert seen == [("soon", "sister in Porto"), "auth", ("soon", "sister in Porto")]
    assert provider.embedded.count("sister in Porto") == 1
    # The alias of the parameter and a project's list start early the same way.
    seen.clear()
    assert _results(client, "", search="peanuts")[0] == 200  # ``q`` empty: the filter reads ``search``
    assert seen[0] == ("soon", "peanuts")
    # Same answer as without the early start.
    early._credits.clear()
    assert _results(client, "  sister in Porto ") == (200, second)


def test_a_project_list_search_starts_early_too(api, alice, project, events):
    seen, _ = events
    services.memory_create(
        actor=alice, tier="project", project_id=project.pk, kind="fact", content="We deploy on Fridays"
    )
    client = api(alice)
    path = f"/api/projects/{project.pk}/identity-memories"
    assert client.get(path, {"q": "deploy"}).json()["results"]
    seen.clear()
    assert client.get(path, {"q": "Fridays"}).json()["results"]
    assert seen[:2] == [("soon", "Fridays"), "auth"]


def test_a_forged_revoked_or_other_token_never_starts_early(api, remembered, events, bob, client):
    seen, _ = events
    real = api(remembered)
    assert _results(real, "tea")[0] == 200
    seen.clear()
    other = api(bob)  # bob's own token has had no search answered
    for headers in (f"Token {real.key}x", f"Token {other.key}", f"Bearer {real.key}", f"Run {real.key}", "Token"):
        plain = api()
        plain.credentials(HTTP_AUTHORIZATION=headers)
        assert plain.get(LIST, {"q": "porto"}).status_code == (200 if headers == f"Token {other.key}" else 401)
        assert seen[:1] in ([], ["auth"]), headers  # checked first (or not a token at all), as before
        seen.clear()
    # A signed-in session (the web pages' way into the API) does not start early.
    client.force_login(remembered)
    assert client.get(LIST, {"q": "porto"}).status_code == 200
    assert client.get(LIST, {"q": "porto again"}).status_code == 200
    assert seen[-1] == ("soon", "porto again") and seen.count(("soon", "porto again")) == 1
    seen.clear()
    # The real token still has its credit.
    assert _results(real, "porto")[0] == 200
    assert seen[0] == ("soon", "porto")


def test_a_refused_request_spends_the_credit_and_only_an_answered_search_grants_one(api, remembered, events, alice):
    seen, _ = events
    client = api(remembered)
    assert _results(client, "tea")[0] == 200
    seen.clear()
    # Refused after the early start (a filter value the list refuses): the credit is gone.
    refused = client.get(LIST, {"q": "porto", "status": "bogus"})
    assert refused.status_code == 400 and seen[0] == ("soon", "porto")
    seen.clear()
    assert _results(client, "peanuts")[0] == 200
    assert seen[0] == "auth"  # no credit: checked first, as before
    # A revoked token had a credit: it starts once, is refused, never again.
    token = alice.api_tokens.get(key_hash=hash_token(client.key))
    token_revoke(actor=alice, token_id=token.pk)
    for attempt in range(3):
        seen.clear()
        assert client.get(LIST, {"q": "sister"}).status_code == 401
        assert [event for event in seen if event != "auth"] == ([("soon", "sister")] if attempt == 0 else [])


def test_a_list_without_a_question_keeps_the_credit_and_a_refused_question_starts_nothing(
    api, remembered, events, settings
):
    seen, _ = events
    client = api(remembered)
    assert _results(client, "tea")[0] == 200
    seen.clear()
    assert client.get(LIST).status_code == 200
    assert client.get(LIST, {"q": "   ", "kind": "fact"}).status_code == 200
    too_long = client.get(LIST, {"q": "x" * (SEARCH_MAX_CHARS + 1)})
    assert too_long.status_code == 400
    # Not a search: the question in a write's address is not one (and a write takes no ``q``).
    created = client.post(f"{LIST}?q=porto", {"kind": "fact", "content": "Takes the tram"}, format="json")
    assert created.status_code == 400 and created.json()["error"]["code"] == "unknown_parameter"
    assert not remembered.memories.filter(content="Takes the tram").exists()
    assert "soon" not in {event[0] for event in seen if isinstance(event, tuple)}
    assert hash_token(client.key) in early._credits  # not spent: nothing was started
    settings.MEMORY_SEARCH_MODE = "lexical"
    seen.clear()
    assert _results(client, "porto")[0] == 200
    assert seen == ["auth"]  # words only: nothing to embed, early or not


@hypothesis_settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    header=st.one_of(st.binary(max_size=300), st.text(max_size=300).map(lambda t: t.encode("utf-8"))),
    query=st.text(max_size=260),
    credit=st.booleans(),
)
def test_whatever_the_header_and_question_the_early_start_never_raises_reads_nothing_and_needs_a_credit(
    remembered, events, header, query, credit
):
    """Generated Authorization headers and questions, with or without a credit for the header's
    key: the early start never raises, reads nothing, and starts only with a credit and a
    question the list would search for."""
    seen, _ = events
    early._credits.clear()
    seen.clear()
    parts = header.split()
    key = parts[1].decode("ascii", "replace") if len(parts) == 2 else None
    if credit and key is not None:
        early._credits.grant(hash_token(key), True)
    django_request = RequestFactory().get(LIST, {"q": query}, HTTP_AUTHORIZATION=header)
    with CaptureQueriesContext(connection) as queries:
        started = early.start(Request(django_request))
    assert len(queries) == 0  # nothing is read before the token is checked
    assert started == bool(seen)
    if started:
        assert credit and parts[0].lower() == b"token"
        assert seen == [("soon", query.strip())] and 0 < len(query.strip()) <= SEARCH_MAX_CHARS
        assert hash_token(key) not in early._credits  # spent
