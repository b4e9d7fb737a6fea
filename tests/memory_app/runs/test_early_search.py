"""A history search's question is given to the model before its request's run token is checked,
for a token that had a search answered in this process, one early start per answered search
(``memory_app.runs.early``): nothing is read or answered early, and nothing else changes."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from memory_app.runs import api as runs_api
from memory_app.runs import early, services
from memory_app.runs.leases import hash_run_token
from memory_app.search import embeddings
from memory_app.search.analysis import query_terms
from memory_app.search.credits import EarlyCredits
from memory_app.threads import candidates, history
from memory_app.threads import services as thread_services
from tests.memory_app.search.helpers import BesideProvider, record_hand_overs

pytestmark = pytest.mark.django_db

SEARCH = "/api/runs/{}/tools/search_thread_messages"


@pytest.fixture
def events(monkeypatch, settings):
    """What happens, in order, on the request's thread: ``("soon", text)`` when a question is
    handed to the model, ``"auth"`` when a run token is checked; and the model's own list."""
    settings.MEMORY_SEARCH_MODE = "hybrid"
    seen: list = []
    provider = record_hand_overs(monkeypatch, seen, checked=(runs_api, "run_authenticate"))
    monkeypatch.setattr(early, "_credits", type(early._credits)())
    # What this process remembers of users' speakers: nothing yet (another test's user may have
    # had this one's id).
    monkeypatch.setattr(candidates, "_speakers", type(candidates._speakers)())
    return seen, provider


@pytest.fixture
def chat(svc, alice, make_run):
    thread = thread_services.conversation_create(actor=svc, username="alice", title="catching up")
    for role, name, text in [
        ("user", "Mia", "I flew to Porto for my sister's wedding"),
        ("assistant", "Jon", "How lovely! Was the weather good?"),
        ("user", "Mia", "Sunny all week, we even went to the beach"),
    ]:
        thread_services.message_create(
            actor=svc, conversation_id=thread.pk, role=role, content=text, metadata={"name": name}
        )
    return make_run(alice)


def _post(run_api, token, run_id, body, **kwargs):
    return run_api(token).post(SEARCH.format(run_id), body, format="json", **kwargs)


def test_after_an_answered_search_the_next_question_goes_to_the_model_before_the_token_is_checked(
    run_api, chat, events
):
    seen, provider = events
    first = _post(run_api, chat.token, chat.id, {"query": "Where did Mia fly for the wedding?"})
    assert first.status_code == 200 and first.json()["results"]
    assert seen == ["auth", ("soon", "Where did fly for the wedding?")]  # no credit yet: as before
    seen.clear()
    second = _post(run_api, chat.token, chat.id, {"query": "How was the weather for Mia?"})
    assert second.status_code == 200 and second.json()["results"]
    # Handed over before the check, taken up by the search after it, embedded once.
    assert seen == [("soon", "How was the weather for ?"), "auth", ("soon", "How was the weather for ?")]
    assert provider.embedded.count("How was the weather for ?") == 1
    # Same answer as without the early start.
    early._credits.clear()
    again = _post(run_api, chat.token, chat.id, {"query": "How was the weather for Mia?"})
    assert again.json()["results"] == second.json()["results"]


def test_a_forged_or_unknown_token_never_starts_early(run_api, chat, events, alice, make_run):
    seen, _ = events
    assert _post(run_api, chat.token, chat.id, {"query": "wedding"}).status_code == 200
    seen.clear()
    run_id, generation, _secret = chat.token.split(".")
    for token in (f"{run_id}.{generation}.forged", make_run(alice).token, "not-a-token"):
        assert _post(run_api, token, chat.id, {"query": "beach"}).status_code in (401, 403)
        assert seen == ["auth"]  # checked first, refused, nothing handed to the model
        seen.clear()
    # Other schemes and no header at all: nothing either.
    assert run_api(None).post(SEARCH.format(chat.id), {"query": "beach"}, format="json").status_code == 401
    client = run_api(None)
    client.credentials(HTTP_AUTHORIZATION=f"Token {chat.token}")
    assert client.post(SEARCH.format(chat.id), {"query": "beach"}, format="json").status_code == 401
    assert seen == []
    # The real token still has its credit.
    assert _post(run_api, chat.token, chat.id, {"query": "beach"}).status_code == 200
    assert seen[0] == ("soon", "beach")


def test_a_refused_request_spends_the_credit_and_only_an_answered_search_grants_one(run_api, chat, events, svc):
    seen, _ = events
    assert _post(run_api, chat.token, chat.id, {"query": "wedding"}).status_code == 200
    seen.clear()
    # Refused after the early start (an argument the tool refuses): the credit is gone.
    refused = _post(run_api, chat.token, chat.id, {"query": "beach", "limit": 0})
    assert refused.status_code == 400 and seen[0] == ("soon", "beach")
    seen.clear()
    assert _post(run_api, chat.token, chat.id, {"query": "weather"}).status_code == 200
    assert seen[0] == "auth"  # no credit: checked first, as before
    seen.clear()
    # A replaced token (the run claimed again) had a credit: it starts once, is refused, never again.
    services.run_claim(actor=svc, run_id=chat.id, worker_id="w1")  # renewed: a new token
    for attempt in range(3):
        assert _post(run_api, chat.token, chat.id, {"query": "sunny"}).status_code == 401
        started = [event for event in seen if event != "auth"]
        assert started == ([("soon", "sunny")] if attempt == 0 else [])
        seen.clear()


def test_a_question_the_search_would_refuse_or_a_words_only_search_starts_nothing(run_api, chat, events, settings):
    seen, _ = events
    bodies = [
        {"query": ""},
        {"query": "   "},
        {"query": 42},
        {"query": "x" * (history.SEARCH_QUERY_MAX_CHARS + 1)},
        {"query": "the of and"},  # no searchable word
        b'{"query": "\\ud800"}',  # an unpaired surrogate, escaped in the JSON
        ["a", "list"],
        {},
    ]
    for body in bodies:
        assert _post(run_api, chat.token, chat.id, {"query": "wedding"}).status_code == 200  # a credit
        seen.clear()
        if isinstance(body, bytes):
            response = run_api(chat.token).post(SEARCH.format(chat.id), body, content_type="application/json")
        else:
            response = _post(run_api, chat.token, chat.id, body)
        assert response.status_code == 400, (body, response.content)
        assert seen == ["auth"], body
    # Not JSON at all: the parser's answer, as before.
    assert _post(run_api, chat.token, chat.id, {"query": "wedding"}).status_code == 200
    seen.clear()
    garbled = run_api(chat.token).post(SEARCH.format(chat.id), b"{not json", content_type="application/json")
    assert garbled.status_code == 400 and seen == ["auth"]
    settings.MEMORY_SEARCH_MODE = "lexical"
    assert _post(run_api, chat.token, chat.id, {"query": "wedding"}).status_code == 200
    seen.clear()
    assert _post(run_api, chat.token, chat.id, {"query": "beach"}).status_code == 200
    assert seen == ["auth"]


@hypothesis_settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    header=st.one_of(st.binary(max_size=400), st.text(max_size=400).map(lambda t: t.encode("utf-8"))),
    body=st.binary(max_size=300),
)
def test_whatever_the_header_and_body_the_early_start_never_raises_nor_starts_without_a_credit(
    run_api, chat, events, header, body
):
    """Generated Authorization headers and bodies: the early start neither raises nor hands
    anything to the model without a credit; what the client gets is the normal path's answer."""
    seen, _ = events
    early._credits.clear()
    seen.clear()
    from django.test import RequestFactory
    from rest_framework.request import Request

    django_request = RequestFactory().post(
        SEARCH.format(chat.id), data=body, content_type="application/json", HTTP_AUTHORIZATION=header
    )
    assert early.start(Request(django_request)) is False
    assert seen == []


@hypothesis_settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=st.one_of(
        st.binary(max_size=300),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=40),
            lambda inner: (
                st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["query", "limit", "x"]), inner)
            ),
            max_leaves=8,
        ).map(lambda value: json.dumps(value).encode()),
    )
)
def test_with_a_credit_whatever_the_body_the_early_start_never_raises_and_starts_only_a_valid_question(
    chat, events, alice, body
):
    seen, _ = events
    seen.clear()
    history_search_once(alice)
    seen.clear()
    early.grant(token_hash=hash_run_token(chat.token), user_id=alice.pk)
    from django.test import RequestFactory
    from rest_framework.request import Request

    django_request = RequestFactory().post(
        SEARCH.format(chat.id), data=body, content_type="application/json", HTTP_AUTHORIZATION=f"Run {chat.token}"
    )
    with CaptureQueriesContext(connection) as queries:
        started = early.start(Request(django_request))
    assert len(queries) == 0  # nothing is read before the token is checked
    try:
        query = json.loads(body).get("query")
    except (ValueError, AttributeError):
        query = None
    assert started == bool(seen)
    if started:
        assert isinstance(query, str) and query.strip() and query_terms(query)
    assert hash_run_token(chat.token) not in early._credits  # spent, whatever became of it


def history_search_once(user):
    history.history_search(user_id=user.pk, query="wedding")


def test_credits_are_bounded_least_recently_granted_first(monkeypatch):
    monkeypatch.setattr(early, "_credits", EarlyCredits(limit=3))
    for n in range(5):
        early.grant(token_hash=f"h{n}", user_id=n)
    assert list(early._credits) == ["h2", "h3", "h4"]
    early.grant(token_hash="h2", user_id=2)
    early.grant(token_hash="h5", user_id=5)
    assert list(early._credits) == ["h4", "h2", "h5"]


def test_a_query_under_way_is_shared_not_embedded_twice(monkeypatch):
    import threading

    monkeypatch.setattr(embeddings, "_started", type(embeddings._started)())

    gate = threading.Event()

    class _Held(BesideProvider):
        def embed_query(self, text, *, across_languages=False):
            gate.wait(10)
            return super().embed_query(text, across_languages=across_languages)

    provider = _Held()
    first = embeddings.embed_query_soon(provider, "green tea")
    second = embeddings.embed_query_soon(provider, "green tea")
    other = embeddings.embed_query_soon(provider, "green tea", across_languages=True)
    assert second is first and other is not first
    gate.set()
    assert (first.result(10) == second.result(10)).all()
    other.result(10)
    assert provider.embedded.count("green tea") == 2  # once per distinct request (the flag differs)
    assert embeddings.embed_query_soon(provider, "green tea") is not first  # done: asked again
