"""The mem0-compatible API over HTTP (docs/integrations.md): who may name which user, what a
write stores and where, filters that narrow and never widen, and errors mem0's client reads.
The real ``mem0ai`` client is driven against a live server in tests/clients/test_mem0_live.py."""

from urllib.parse import quote, urlencode

import pytest
from django.utils import timezone
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from config.errors import InvalidInput
from identity_app.services import token_issue
from memory_app.compat import query
from memory_app.memories.models import Memory, Status, Tier
from memory_app.reads.models import MemoryRead, ReadPath
from memory_app.search.models import SearchDocument
from tests.factories import ProjectMemoryFactory, UserMemoryFactory

pytestmark = pytest.mark.django_db

ROOTS = ("/", "/api/mem0/")


def snapshot():
    return sorted(
        Memory.objects.values_list("id", "status", "content", "owner_id", "superseded_by_id", "metadata", "evidence")
    )


@pytest.fixture
def client_of(api, alice, bob, svc):
    """``client_of(name)``: an API client with that persona's key; ``lsvc`` is svc limited to bob,
    ``psvc`` svc limited to a project."""

    def make(name):
        if name == "lsvc":
            _, key = token_issue(user=svc, only_users=["bob"])
        elif name == "psvc":
            from tests.factories import ProjectFactory

            _, key = token_issue(user=svc, only_projects=[ProjectFactory().pk])
        else:
            return api({"alice": alice, "bob": bob, "svc": svc}[name])
        client = api(None)
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        return client

    return make


def add(client, root="/", **body):
    return client.post(f"{root}v3/memories/add/", body, format="json")


# --- who is calling -----------------------------------------------------------------------
@pytest.mark.parametrize("root", ROOTS)
def test_ping_names_the_key_and_the_org_project_mem0_needs(api, alice, root):
    body = api(alice).get(f"{root}v1/ping/").json()
    assert body["status"] == "ok" and body["user_id"] == "alice"
    assert body["org_id"] and body["project_id"]  # mem0's client refuses to start without both


@pytest.mark.parametrize("header", [None, "Token not-a-real-key", "Bearer abc", "Run 1.1.x"])
def test_a_missing_or_forged_key_is_401_with_mem0s_detail(api, header):
    client = api(None)
    if header:
        client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get("/v1/ping/")
    assert response.status_code == 401
    body = response.json()
    assert body["detail"] == body["error"]["message"] and body["error"]["code"] in (
        "not_authenticated",
        "authentication_failed",
    )


def test_an_unknown_mem0_path_is_a_json_404_with_detail(api, alice):
    response = api(alice).get("/v1/no-such-thing/")
    assert response.status_code == 404 and response.json()["detail"] == "Not found."


# --- add: as given ----------------------------------------------------------------------
@pytest.mark.parametrize("root", ROOTS)
def test_add_as_given_writes_the_users_own_memory_with_its_tags(api, alice, root):
    response = add(
        api(alice),
        root,
        messages=[{"role": "user", "content": "I prefer window seats"}],
        user_id="alice",
        agent_id="travel",
        run_id="r1",
        metadata={"source": "chat"},
        infer=False,
    )
    assert response.status_code == 200, response.content
    (event,) = response.json()["results"]
    assert event["event"] == "ADD" and event["memory"] == "I prefer window seats"
    memory = Memory.objects.get(pk=event["id"])
    assert (memory.scope_type, memory.owner, memory.kind, memory.status) == (Tier.USER, alice, "preference", "active")
    assert memory.metadata == {"source": "chat"}
    assert memory.evidence == {"via": "mem0", "mem0": {"agent_id": "travel", "run_id": "r1"}}
    assert memory.created_by == alice
    # searchable through the memory's own index entry, as every memory of the user tier
    assert SearchDocument.objects.filter(ref=memory.pk).exists()


def test_add_as_given_twice_is_a_noop_not_a_duplicate(api, alice):
    client = api(alice)
    first = add(client, messages="I like green tea", infer=False).json()["results"][0]
    second = add(client, messages="I like green tea", infer=False).json()["results"][0]
    assert (second["event"], second["id"]) == ("NOOP", first["id"])
    # other tags: another memory (the tags narrow)
    third = add(client, messages="I like green tea", infer=False, agent_id="a2").json()["results"][0]
    assert third["event"] == "ADD" and third["id"] != first["id"]
    assert Memory.objects.filter(owner=alice).count() == 2


def test_add_as_given_stores_user_and_assistant_messages_not_system_ones(api, alice):
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "My cat is called Miso"},
        {"role": "assistant", "content": [{"type": "text", "text": "Miso is a lovely name."}]},
    ]
    events = add(api(alice), messages=messages, infer=False).json()["results"]
    assert [e["memory"] for e in events] == ["My cat is called Miso", "Miso is a lovely name."]


@pytest.mark.parametrize("infer", [False, True])
def test_a_turn_without_text_is_left_out_of_an_add(api, alice, infer):
    """An agent's chat history holds its tool-call turns as {"role": "assistant", "content": null}."""
    messages = [
        {"role": "user", "content": "I'm allergic to shellfish"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]},
        {"role": "tool", "content": "ok", "tool_call_id": "c1"},
    ]
    response = add(api(alice), messages=messages, infer=infer)
    assert response.status_code == 200, response.content
    assert [e["memory"] for e in response.json()["results"]] == ["I'm allergic to shellfish"]
    assert add(api(alice), messages=[{"role": "user", "content": 7}], infer=infer).status_code == 400


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("my password is hunter2-Blue-77", "contains_secret"),
        ("export AWS_SECRET_ACCESS_KEY=AKIAIOSFODNN7EXAMPLEKEYwJalrXUtnFEMI", "contains_secret"),
        ("postgresql://app:s3cretpw@db.internal:5432/prod", "contains_secret"),
        ("x" * 4001, "too_large"),
        ("   ", None),
    ],
)
def test_add_as_given_refuses_secrets_and_bad_text_and_changes_nothing(api, alice, text, code):
    before = snapshot()
    response = add(
        api(alice), messages=[{"role": "user", "content": "I like tea"}, {"role": "user", "content": text}], infer=False
    )
    if code is None:  # blank messages are skipped; the others stored
        assert response.status_code == 200
        return
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == code and response.json()["detail"]
    assert snapshot() == before  # all or nothing: the first message was not stored either


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"custom_categories": [{"a": "b"}]}, "custom_categories"),
        ({"timestamp": 1700000000}, "timestamp"),
        ({"structured_data_schema": {}}, "structured_data_schema"),
        ({"no_such_field": 1}, "no_such_field"),
        ({"immutable": True}, "immutable"),
        ({"filters": {"categories": "x"}}, "filters"),
    ],
)
def test_add_names_what_it_does_not_support_and_stores_nothing(api, alice, body, named):
    before = snapshot()
    response = add(api(alice), messages="I like tea", infer=False, **body)
    assert response.status_code == 400
    assert named in response.json()["detail"] or named in str(response.json()["error"].get("details"))
    assert snapshot() == before


def test_add_expiration_date_is_the_last_day_the_memory_holds(api, alice):
    day = (timezone.now() + timezone.timedelta(days=3)).date()
    event = add(api(alice), messages="I am in Lisbon this week", infer=False, expiration_date=day.isoformat()).json()[
        "results"
    ][0]
    memory = Memory.objects.get(pk=event["id"])
    assert memory.expires_at.date() == day + timezone.timedelta(days=1)
    assert api(alice).get(f"/v1/memories/{memory.pk}/").json()["expiration_date"] == day.isoformat()
    past = add(api(alice), messages="old", infer=False, expiration_date="2001-01-01")
    assert past.status_code == 400 and past.json()["error"]["code"] == "invalid_expires_at"


# --- add: inferred -------------------------------------------------------------------------
def test_add_infers_statements_of_the_person_not_of_the_assistant(api, alice):
    messages = [
        {"role": "user", "content": "Hi! I'm a vegetarian and I'm allergic to nuts. What should I cook?"},
        {"role": "assistant", "content": "I am an assistant and I like recipes."},
    ]
    events = add(api(alice), messages=messages, user_id="alice").json()["results"]
    assert [(e["event"], e["memory"]) for e in events] == [
        ("ADD", "I'm a vegetarian"),
        ("ADD", "I'm allergic to nuts."),
    ]
    assert not Memory.objects.filter(content__icontains="recipes").exists()


def test_add_infers_an_update_as_a_supersede_and_a_repeat_as_noop(api, alice):
    client = api(alice)
    first = add(client, messages="I live in Berlin.").json()["results"][0]
    moved = add(client, messages="I live in Paris now.").json()["results"][0]
    assert moved["event"] == "UPDATE" and moved["previous_id"] == first["id"]
    assert moved["previous_memory"] == "I live in Berlin."
    old = Memory.objects.get(pk=first["id"])
    assert (old.status, old.superseded_by_id) == (Status.SUPERSEDED, moved["id"])
    again = add(client, messages="I live in Paris now.").json()["results"][0]
    assert (again["event"], again["id"]) == ("NOOP", moved["id"])
    history = client.get(f"/v1/memories/{moved['id']}/history/").json()
    assert [(h["event"], h["old_memory"], h["new_memory"]) for h in history] == [
        ("ADD", None, "I live in Berlin."),
        ("UPDATE", "I live in Berlin.", "I live in Paris now."),
    ]
    assert all(h["categories"] == [] for h in history)  # the field mem0's JavaScript types require


def test_add_infers_a_statement_kept_already_through_another_path_as_noop(api, alice, bob):
    client = api(alice)
    kept = client.post(
        "/api/users/me/memories", {"kind": "preference", "content": "I prefer short answers."}, format="json"
    )
    assert kept.status_code == 201, kept.content
    UserMemoryFactory(owner=bob, content="I prefer long answers.")
    before = snapshot()
    (event,) = add(client, messages="I prefer short answers.").json()["results"]
    assert (event["event"], event["id"]) == ("NOOP", kept.json()["id"])
    assert snapshot() == before
    (other,) = add(client, messages="I prefer long answers.").json()["results"]  # bob's is not hers
    assert other["event"] == "ADD"


def test_add_infers_a_restatement_that_asks_for_more_as_its_own_memory(api, alice):
    """Kept already, but this add brings an expiry or metadata the kept one lacks: not a NOOP
    (which would drop them); written without a full stop, it is still the same statement."""
    client = api(alice)
    kept = client.post("/api/users/me/memories", {"kind": "preference", "content": "I like green tea."}, format="json")
    (same,) = add(client, messages="I like green tea").json()["results"]
    assert (same["event"], same["id"]) == ("NOOP", kept.json()["id"])
    (tagged,) = add(client, messages="I like green tea.", metadata={"source": "chat"}).json()["results"]
    assert tagged["event"] == "ADD"
    client.post("/api/users/me/memories", {"kind": "preference", "content": "I like oolong."}, format="json")
    (dated,) = add(client, messages="I like oolong.", expiration_date="2099-01-01").json()["results"]
    assert dated["event"] == "ADD" and Memory.objects.get(pk=dated["id"]).expires_at is not None


def test_add_infers_a_correction_as_a_supersede_even_when_the_new_words_are_kept_elsewhere(api, alice):
    client = api(alice)
    (berlin,) = add(client, messages="I live in Berlin.").json()["results"]
    client.post("/api/users/me/memories", {"kind": "fact", "content": "I live in Paris now."}, format="json")
    (moved,) = add(client, messages="I live in Paris now.").json()["results"]
    assert (moved["event"], moved["previous_id"]) == ("UPDATE", berlin["id"])  # Berlin is history, not kept beside
    assert Memory.objects.get(pk=berlin["id"]).status == Status.SUPERSEDED


def test_add_infers_nothing_from_questions_and_plans(api, alice):
    events = add(api(alice), messages="What should I cook tonight? I think I want pasta.").json()["results"]
    assert events == [] and not Memory.objects.exists()


def test_add_infers_from_redacted_text_only(api, alice):
    messages = [
        {"role": "user", "content": "My api key is sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"},
        {"role": "user", "content": "My email is ann@example.org"},
        {"role": "user", "content": "I play the piano."},
    ]
    events = add(api(alice), messages=messages)
    assert [e["memory"] for e in events.json()["results"]] == ["I play the piano."]
    assert not Memory.objects.filter(content__contains="sk-live").exists()
    assert not Memory.objects.filter(content__contains="REDACTED").exists()  # nothing said: nothing kept


# --- who: the key decides, user_id only names ------------------------------------------
def test_a_service_key_writes_for_a_user_it_may_act_for(client_of, alice, svc):
    event = add(client_of("svc"), messages="I like jazz", user_id="alice", infer=False).json()["results"][0]
    memory = Memory.objects.get(pk=event["id"])
    assert (memory.owner, memory.created_by) == (alice, svc)


def test_a_service_key_must_name_the_user(client_of):
    response = add(client_of("svc"), messages="I like jazz", infer=False)
    assert response.status_code == 400 and response.json()["error"]["code"] == "user_id_required"


@pytest.mark.parametrize(
    ("persona", "named"),
    [("bob", "alice"), ("lsvc", "alice"), ("psvc", "alice"), ("svc", "nobody-by-that-name"), ("alice", "bob")],
)
def test_a_user_out_of_the_keys_reach_is_404_like_one_that_does_not_exist(client_of, alice, bob, persona, named):
    UserMemoryFactory(owner=alice, content="I keep a quokka plush")
    UserMemoryFactory(owner=bob, content="bob likes quokka tea")
    before = snapshot()
    client = client_of(persona)
    calls = [
        add(client, messages="I like tea", user_id=named, infer=False),
        add(client, messages="I like tea", filters={"user_id": named}, infer=False),
        client.post("/v3/memories/search/", {"query": "quokka", "filters": {"user_id": named}}, format="json"),
        client.post(
            "/v3/memories/search/", {"query": "quokka", "filters": {"OR": [{"user_id": named}]}}, format="json"
        ),
        client.post("/v3/memories/", {"filters": {"AND": [{"user_id": named}]}}, format="json"),
        client.delete(f"/v1/memories/?user_id={named}"),
        client.delete(f"/v2/entities/user/{named}/"),
    ]
    for response in calls:
        assert response.status_code == 404, response.content
        assert response.json()["error"]["code"] == "unknown_user"
        assert "quokka" not in response.content.decode()
    assert snapshot() == before


def test_another_users_memory_id_is_404_everywhere(api, alice, bob):
    theirs = UserMemoryFactory(owner=alice, content="alice secret quokka")
    project = ProjectMemoryFactory(content="a project memory quokka")
    before = snapshot()
    client = api(bob)
    for memory_id in (theirs.pk, project.pk, "mem_doesnotexist"):
        for response in (
            client.get(f"/v1/memories/{memory_id}/"),
            client.put(f"/v1/memories/{memory_id}/", {"text": "mine now"}, format="json"),
            client.delete(f"/v1/memories/{memory_id}/"),
            client.get(f"/v1/memories/{memory_id}/history/"),
            client.put("/v1/batch/", {"memories": [{"memory_id": memory_id, "text": "x"}]}, format="json"),
            client.delete("/v1/batch/", {"memories": [{"memory_id": memory_id}]}, format="json"),
        ):
            assert response.status_code == 404, (memory_id, response.content)
            assert "quokka" not in response.content.decode()
    assert snapshot() == before


def test_a_limited_service_key_reaches_only_its_users(client_of, alice, bob):
    mine = UserMemoryFactory(owner=bob, content="bob likes oolong")
    theirs = UserMemoryFactory(owner=alice, content="alice likes oolong")
    client = client_of("lsvc")
    assert client.get(f"/v1/memories/{mine.pk}/").status_code == 200
    assert client.get(f"/v1/memories/{theirs.pk}/").status_code == 404
    found = client.post("/v3/memories/search/", {"query": "oolong", "filters": {"user_id": "bob"}}, format="json")
    assert [m["id"] for m in found.json()["results"]] == [mine.pk]
    entities = client.get("/v1/entities/").json()["results"]
    assert [e["name"] for e in entities if e["type"] == "user"] == ["bob"]


# --- search and lists ------------------------------------------------------------------
@pytest.fixture
def alices(api, alice):
    client = api(alice)
    made = {}
    for name, text, tags in [
        ("berlin", "I live in Berlin near the river", {"agent_id": "travel"}),
        ("pizza", "I like pizza with olives", {"agent_id": "food", "metadata": {"topic": "food", "n": 3}}),
        ("sushi", "I like sushi on Fridays", {"agent_id": "food", "run_id": "r9", "metadata": {"topic": "food"}}),
        ("jazz", "I listen to jazz while cooking", {}),
    ]:
        made[name] = add(client, messages=text, infer=False, **tags).json()["results"][0]["id"]
    return made


def search(client, query, **body):
    response = client.post("/v3/memories/search/", {"query": query, **body}, format="json")
    assert response.status_code == 200, response.content
    return [m["id"] for m in response.json()["results"]]


def test_search_ranks_the_users_memories_and_answers_in_mem0s_shape(api, alice, alices):
    response = api(alice).post(
        "/v3/memories/search/", {"query": "pizza olives", "filters": {"user_id": "alice"}}, format="json"
    )
    (best, *_) = response.json()["results"]
    assert best["id"] == alices["pizza"] and best["memory"] == "I like pizza with olives"
    assert best["user_id"] == "alice" and best["agent_id"] == "food" and best["metadata"] == {"topic": "food", "n": 3}
    assert 0 < best["score"] <= 1 and best["hash"] and best["categories"] == []


def test_search_filters_narrow(api, alice, alices):
    client = api(alice)
    food = {"AND": [{"user_id": "alice"}, {"agent_id": "food"}]}
    assert set(search(client, "I like", filters=food)) <= {alices["pizza"], alices["sushi"]}
    assert search(client, "I like", filters={"AND": [{"agent_id": "food"}, {"run_id": "r9"}]}) == [alices["sushi"]]
    assert alices["berlin"] not in search(client, "Berlin river", filters={"agent_id": "food"})
    assert search(client, "I like", filters={"metadata": {"n": 3}}) == [alices["pizza"]]
    either = {"OR": [{"agent_id": "travel"}, {"run_id": "r9"}]}
    assert set(search(client, "I live like Berlin sushi", filters=either)) == {alices["berlin"], alices["sushi"]}
    none_of = {"AND": [{"agent_id": "*"}, {"NOT": [{"agent_id": "food"}]}]}
    assert search(client, "Berlin river pizza", filters=none_of) == [alices["berlin"]]
    assert alices["jazz"] not in search(client, "jazz cooking", filters={"agent_id": "*"})
    assert search(client, "jazz cooking", filters={"agent_id": {"ne": "food"}}) == [alices["jazz"]]
    assert search(client, "jazz cooking", filters={"keywords": {"contains": "Jazz"}}) == []
    assert search(client, "jazz cooking", filters={"keywords": {"icontains": "JAZZ"}}) == [alices["jazz"]]
    assert search(client, "pizza", filters={"memory_ids": [alices["sushi"]]}) == []


def test_search_created_at_ranges(api, alice, alices):
    client = api(alice)
    past, future = "2000-01-01", "2999-01-01T00:00:00Z"
    assert alices["pizza"] in search(client, "pizza", filters={"created_at": {"gte": past, "lt": future}})
    assert search(client, "pizza", filters={"created_at": {"gt": future}}) == []
    assert search(client, "pizza", filters={"AND": [{"created_at": {"lte": past}}]}) == []


@pytest.mark.parametrize(
    ("filters", "named"),
    [
        ({"categories": {"in": ["food"]}}, "categories"),
        ({"agent_id": {"nin": ["a"]}}, "nin"),
        ({"created_at": {"between": ["a", "b"]}}, "between"),
        ({"AND": {"user_id": "alice"}}, "AND"),
        ({"XOR": [{"user_id": "alice"}]}, "XOR"),
        ({"created_at": {"gte": "last tuesday"}}, "created_at"),
        ({"keywords": "pizza"}, "keywords"),
        ({"timestamp": {"gt": 1}}, "timestamp"),
    ],
)
def test_a_filter_it_does_not_support_is_a_400_that_names_it(api, alice, alices, filters, named):
    for path, body in (("/v3/memories/search/", {"query": "pizza"}), ("/v3/memories/", {})):
        response = api(alice).post(path, {**body, "filters": filters}, format="json")
        assert response.status_code == 400, response.content
        assert response.json()["error"]["code"] == "unsupported_filter"
        assert named in response.json()["detail"]


def test_search_top_k_threshold_and_keyword_mode(api, alice, alices):
    client = api(alice)
    assert len(search(client, "I like live listen", top_k=2)) == 2
    scores = [
        m["score"]
        for m in client.post("/v3/memories/search/", {"query": "pizza olives"}, format="json").json()["results"]
    ]
    assert search(client, "pizza olives", threshold=max(scores)) == [alices["pizza"]]
    assert search(client, "pizza olives", threshold=1.0) in ([], [alices["pizza"]])
    assert search(client, "olives", keyword_search=True) == [alices["pizza"]]
    assert client.post("/v3/memories/search/", {"query": "x", "top_k": 0}, format="json").status_code == 400
    assert client.post("/v3/memories/search/", {"query": "x", "threshold": 2}, format="json").status_code == 400


def test_a_keyword_searchs_score_is_the_share_of_the_words_a_memory_holds(api, alice, alices):
    """Not the score over the first hit's: a memory holding one word of three is no 1.0, and a
    threshold drops it whatever else matched."""
    client = api(alice)

    def scored(query, **body):
        response = client.post("/v3/memories/search/", {"query": query, "keyword_search": True, **body}, format="json")
        return {m["id"]: m["score"] for m in response.json()["results"]}

    partial = scored("pizza anchovies capers")
    assert set(partial) == {alices["pizza"]} and 0 < partial[alices["pizza"]] < 0.6
    assert scored("pizza anchovies capers", threshold=0.6) == {}
    whole = scored("pizza olives")
    assert whole[alices["pizza"]] == 1.0
    assert scored("pizza olives", threshold=0.95) == {alices["pizza"]: 1.0}


def test_a_doubled_slash_before_a_mem0_path_is_that_path(api, alice):
    """mem0's AsyncMemoryClient given a host with a trailing slash pings "//v1/ping/"."""
    client = api(alice)

    def get(client, path):  # as the server receives it: a client's URL parser reads "//v1" as a host
        return client.get("/", PATH_INFO=path)

    assert get(client, "//v1/ping/").json()["user_id"] == "alice"
    assert get(client, "///v1/ping/").json()["user_id"] == "alice"
    assert get(api(None), "//v1/ping/").status_code == 401
    assert get(client, "//api/users/me/memories").status_code == 404  # only the mem0 paths at the root
    # mem0's JavaScript client makes every path f"{host}/v1/…": a host "…/api/mem0/" doubles it there
    assert get(client, "/api/mem0//v1/ping/").json()["user_id"] == "alice"
    assert get(client, "/api/mem0///v3/memories/search/").status_code == 405  # that route, GET not allowed
    assert get(client, "/api/mem0//nothing/").status_code == 404
    assert get(client, "/api//users/me/memories").status_code == 404


def test_search_and_lists_refuse_expired_ones_and_never_show_them(api, alice, alices):
    client = api(alice)
    Memory.objects.filter(pk=alices["pizza"]).update(expires_at=timezone.now() - timezone.timedelta(minutes=1))
    assert alices["pizza"] not in search(client, "pizza olives")
    assert alices["pizza"] not in [m["id"] for m in client.post("/v3/memories/", {}, format="json").json()["results"]]
    refused = client.post("/v3/memories/search/", {"query": "pizza", "show_expired": True}, format="json")
    assert refused.status_code == 400 and "show_expired" in refused.json()["detail"]


def test_a_paused_memory_is_for_no_agent_but_its_id_still_answers(api, alice, alices):
    client = api(alice)
    Memory.objects.filter(pk=alices["pizza"]).update(paused=True)
    assert alices["pizza"] not in search(client, "pizza olives")
    assert alices["pizza"] not in [m["id"] for m in client.post("/v3/memories/", {}, format="json").json()["results"]]
    assert client.get(f"/v1/memories/{alices['pizza']}/").json()["paused"] is True


def test_get_all_pages_and_narrows(api, alice, alices):
    client = api(alice)
    page = client.post("/v3/memories/?page_size=2", {"filters": {"user_id": "alice"}}, format="json").json()
    assert page["count"] == 4 and len(page["results"]) == 2 and page["next"]
    food = client.post("/v3/memories/", {"filters": {"agent_id": "food"}, "fields": ["memory"]}, format="json").json()
    assert {m["id"] for m in food["results"]} == {alices["pizza"], alices["sushi"]}
    assert all(set(m) == {"id", "memory"} for m in food["results"])
    dated = client.post("/v3/memories/", {"start_date": "2999-01-01"}, format="json").json()
    assert dated["count"] == 0


def test_a_service_can_search_several_users_it_acts_for_and_only_them(client_of, alice, bob):
    UserMemoryFactory(owner=alice, content="alice drinks oolong")
    UserMemoryFactory(owner=bob, content="bob drinks oolong")
    found = client_of("svc").post(
        "/v3/memories/search/", {"query": "oolong", "filters": {"user_id": {"in": ["alice", "bob"]}}}, format="json"
    )
    assert {m["user_id"] for m in found.json()["results"]} == {"alice", "bob"}
    only_bob = client_of("lsvc").post(
        "/v3/memories/search/", {"query": "oolong", "filters": {"user_id": {"in": ["alice", "bob"]}}}, format="json"
    )
    assert only_bob.status_code == 404  # naming alice is naming a user out of reach


def test_a_user_under_not_names_no_one_to_search(client_of, api, alice, bob):
    """``NOT user_id`` excludes; it does not name whose memories a search reads (mem0's
    meaning), and never reaches past the key."""
    mine = UserMemoryFactory(owner=alice, content="alice drinks oolong")
    theirs = UserMemoryFactory(owner=bob, content="bob drinks oolong")
    not_bob = {"NOT": [{"user_id": "bob"}]}
    found = api(alice).post("/v3/memories/", {"filters": not_bob}, format="json")
    assert found.status_code == 200 and [m["id"] for m in found.json()["results"]] == [mine.pk]
    not_me = api(alice).post("/v3/memories/", {"filters": {"NOT": [{"user_id": "alice"}]}}, format="json")
    assert not_me.status_code == 200 and not_me.json()["results"] == []
    mixed = {"AND": [{"user_id": {"in": ["alice", "bob"]}}, not_bob]}
    searched = client_of("svc").post("/v3/memories/search/", {"query": "oolong", "filters": mixed}, format="json")
    assert [m["id"] for m in searched.json()["results"]] == [mine.pk]
    # A service key still names whose memories it searches; a limited one reaches no one else.
    assert client_of("svc").post("/v3/memories/", {"filters": not_bob}, format="json").status_code == 400
    limited = client_of("lsvc").post(
        "/v3/memories/", {"filters": {"AND": [{"user_id": "bob"}, {"NOT": [{"user_id": "alice"}]}]}}, format="json"
    )
    assert [m["id"] for m in limited.json()["results"]] == [theirs.pk]


def test_reads_through_this_api_are_recorded_for_the_owner(client_of, alice, svc):
    memory = UserMemoryFactory(owner=alice, content="alice plays chess")
    client = client_of("svc")
    client.post("/v3/memories/search/", {"query": "chess", "filters": {"user_id": "alice"}}, format="json")
    client.get(f"/v1/memories/{memory.pk}/")
    reads = MemoryRead.objects.filter(item_ref=memory.pk, path=ReadPath.MEM0)
    assert reads.count() == 2 and {(r.user_id, r.principal_id) for r in reads} == {(alice.pk, svc.pk)}


# --- change and forget -----------------------------------------------------------------
def test_update_is_a_supersede_and_keeps_the_tags(api, alice):
    client = api(alice)
    created = add(client, messages="I like tea", agent_id="a1", infer=False, metadata={"k": 1}).json()["results"][0]
    response = client.put(f"/v1/memories/{created['id']}/", {"text": "I like coffee"}, format="json")
    assert response.status_code == 200
    new = response.json()
    assert new["memory"] == "I like coffee" and new["previous_id"] == created["id"] and new["id"] != created["id"]
    assert new["agent_id"] == "a1" and new["metadata"] == {"k": 1}
    old = client.get(f"/v1/memories/{created['id']}/").json()
    assert old["status"] == "superseded" and old["superseded_by"] == new["id"]
    again = client.put(f"/v1/memories/{created['id']}/", {"text": "I like cocoa"}, format="json")
    assert again.status_code == 409  # the old version is history; its newer one is the memory
    day = (timezone.now() + timezone.timedelta(days=5)).date().isoformat()
    dated = client.put(f"/v1/memories/{new['id']}/", {"expiration_date": day}, format="json").json()
    assert dated["memory"] == "I like coffee" and dated["expiration_date"] == day
    refused = client.put(f"/v1/memories/{dated['id']}/", {"text": "my password is Hunter2Hunter2"}, format="json")
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "contains_secret"


def test_delete_forgets_physically_with_older_versions_and_derived_rows(api, alice):
    client = api(alice)
    first = add(client, messages="I live in Rome.").json()["results"][0]
    second = add(client, messages="I live in Oslo.").json()["results"][0]
    assert second["event"] == "UPDATE"
    client.get(f"/v1/memories/{second['id']}/")  # a read recorded
    response = client.delete(f"/v1/memories/{second['id']}/")
    assert response.status_code == 200
    assert set(response.json()["deleted"]) == {first["id"], second["id"]}
    assert not Memory.objects.filter(pk__in=[first["id"], second["id"]]).exists()
    assert not SearchDocument.objects.filter(ref__in=[first["id"], second["id"]]).exists()
    assert not MemoryRead.objects.filter(item_ref__in=[first["id"], second["id"]]).exists()


def test_delete_all_forgets_the_users_memories_narrowed_by_tags(api, alice, bob, alices):
    theirs = UserMemoryFactory(owner=bob, content="bob's")
    client = api(alice)
    narrowed = client.delete("/v1/memories/?agent_id=food").json()
    assert narrowed["deleted"] == 2
    assert set(Memory.objects.filter(owner=alice).values_list("pk", flat=True)) == {alices["berlin"], alices["jazz"]}
    everything = client.delete("/v1/memories/?user_id=alice").json()
    assert everything["deleted"] == 2 and not Memory.objects.filter(owner=alice).exists()
    assert Memory.objects.filter(pk=theirs.pk).exists()
    assert client.delete("/v1/memories/?categories=x").status_code == 400


@pytest.mark.parametrize(
    "filters",
    [
        "{'user_id': 'alice', 'agent_id': 'food'}",  # what mem0's client sends: the dict as Python prints it
        '{"user_id": "alice", "agent_id": "food"}',
        "{'agent_id': 'food'}",
    ],
)
def test_delete_all_takes_filters_as_mem0s_client_sends_them(api, alice, bob, alices, filters):
    theirs = UserMemoryFactory(owner=bob, content="bob's")
    response = api(alice).delete("/v1/memories/", QUERY_STRING=urlencode({"filters": filters}))
    assert response.status_code == 200, response.content
    assert response.json()["deleted"] == 2
    assert set(Memory.objects.filter(owner=alice).values_list("pk", flat=True)) == {alices["berlin"], alices["jazz"]}
    assert Memory.objects.filter(pk=theirs.pk).exists()


@pytest.mark.parametrize(
    "filters",
    [
        "{'user_id': 'bob'}",  # another user's: unknown to alice's key
        "{'user_id': 'alice', 'agent_id': None}",  # null is no equality: refused, not widened to every agent
        "{'agent_id': {'in': ['food']}}",
        "{'categories': 'x'}",
        "['user_id', 'alice']",
        "__import__('os').system('true')",
        "{'user_id': 'alice', 'agent_id': 'food'} or 1",
        "{" * 300 + "}" * 300,
        "{'agent_id': 'x" + "y" * 2000 + "'}",
        "",
        "null",
    ],
)
def test_delete_all_refuses_other_filters_and_changes_nothing(api, alice, bob, alices, filters):
    UserMemoryFactory(owner=bob, content="bob's")
    before = snapshot()
    response = api(alice).delete("/v1/memories/", QUERY_STRING=urlencode({"filters": filters}))
    assert response.status_code in (400, 404), response.content
    assert response.json()["detail"]
    assert snapshot() == before


@pytest.mark.parametrize(
    "query_string",
    [
        "agent_id=",  # an unset variable: refused, never "every agent"
        "user_id=alice&agent_id=",
        "user_id=",
        "agent_id=*",
        "filters={}",
        "filters=" + quote("{'agent_id': '*'}"),
        "filters=" + quote("{'agent_id': ''}"),
        "agent_id=food&agent_id=travel",  # given twice: refused, not the last one taken
        "filters=" + quote("{'agent_id': 'food'}") + "&filters=" + quote("{'agent_id': 'travel'}"),
        "org_id=elsewhere&org_id=memory-service",
        "filters=" + "[" * 1999,  # deeper than the JSON reader goes
        "filters=" + "[" * 1000 + "]" * 1000,
    ],
)
def test_delete_all_refuses_empty_wildcard_repeated_or_deep_parameters(api, alice, bob, alices, query_string):
    UserMemoryFactory(owner=bob, content="bob's")
    before = snapshot()
    response = api(alice).delete("/v1/memories/", QUERY_STRING=query_string)
    assert response.status_code == 400, response.content
    assert snapshot() == before


@pytest.mark.parametrize(
    ("method", "path", "query_string"),
    [
        ("get", "/v1/memories/{id}/", "org_id=elsewhere"),
        ("get", "/v1/memories/{id}/", "bogus=1"),
        ("put", "/v1/memories/{id}/", "project_id=elsewhere"),
        ("delete", "/v1/memories/{id}/", "org_id=elsewhere"),
        ("delete", "/v1/memories/{id}/", "delete_linked=true&delete_linked=false"),
        ("get", "/v1/memories/{id}/history/", "project_id=elsewhere"),
        ("get", "/v1/ping/", "org_id=elsewhere"),
        ("get", "/v1/entities/", "project_id=elsewhere"),
        ("delete", "/v2/entities/agent/food/", "org_id=elsewhere"),
        ("post", "/v3/memories/", "page=1&page=2"),
        ("post", "/v3/memories/search/", "top_k=5"),
        ("get", "/v1/memories/", "agent_id="),
        ("get", "/v1/memories/", "user_id=alice&user_id=bob"),
    ],
)
def test_every_path_holds_its_query_string_to_what_it_takes(api, alice, alices, method, path, query_string):
    """The older clients send org_id and project_id with every call: another deployment's is
    refused wherever it comes; so is a parameter a path does not take, or one given twice."""
    before = snapshot()
    body = {"text": "I listen to blues"} if method == "put" else {"query": "jazz"} if "search" in path else {}
    call = getattr(api(alice), method)
    response = call(path.format(id=alices["jazz"]), body, format="json", QUERY_STRING=query_string)
    assert response.status_code == 400, response.content
    assert snapshot() == before


def test_generated_query_strings_never_fail_the_server_nor_reach_another_user(api, alice, bob, alices):
    """Any query string on any mem0 path, from alice's key: an answer (never a 500), and bob's
    memories untouched whatever it deleted of hers."""
    theirs = UserMemoryFactory(
        owner=bob, content="bob's quokka", evidence={"via": "mem0", "mem0": {"agent_id": "food"}}
    )
    bobs = sorted(Memory.objects.filter(owner=bob).values_list("id", "content", "status"))
    client = api(alice)
    names = st.sampled_from(
        [
            "user_id",
            "agent_id",
            "run_id",
            "app_id",
            "filters",
            "org_id",
            "project_id",
            "page",
            "page_size",
            "delete_linked",
            "top_k",
            "q",
            "",
        ]
    )
    values = st.one_of(
        st.sampled_from(
            [
                "alice",
                "bob",
                "food",
                "*",
                "",
                "{}",
                "{'user_id': 'bob'}",
                "{'agent_id': 'food'}",
                "0",
                "-1",
                "memory-service",
                "default",
                "[" * 50,
                "{" * 50,
            ]
        ),
        st.text(max_size=40),
    )

    @hypothesis_settings(max_examples=120, deadline=None)
    @given(
        target=st.sampled_from(
            [
                ("get", "/v1/memories/"),
                ("delete", "/v1/memories/"),
                ("get", "/v1/entities/"),
                ("get", "/v1/memories/{id}/"),
                ("get", "/v1/memories/{id}/history/"),
                ("delete", "/v2/entities/agent/food/"),
                ("post", "/v3/memories/"),
                ("post", "/v2/memories/"),
                ("get", "/api/mem0//v1/memories/"),
            ]
        ),
        pairs=st.lists(st.tuples(names, values), max_size=4),
    )
    def answers(target, pairs):
        method, path = target
        query_string = urlencode(pairs, encoding="utf-8", errors="surrogatepass")
        response = getattr(client, method)(path.format(id=alices["berlin"]), QUERY_STRING=query_string)
        assert response.status_code < 500, (path, query_string, response.content[:300])
        assert sorted(Memory.objects.filter(owner=bob).values_list("id", "content", "status")) == bobs

    answers()
    assert Memory.objects.filter(pk=theirs.pk).exists()


def test_the_deployments_own_org_and_project_and_delete_linked_are_taken(api, alice, alices):
    client = api(alice)
    ours = "org_id=memory-service&project_id=default"
    assert client.get(f"/v1/memories/{alices['jazz']}/", QUERY_STRING=ours).status_code == 200
    assert client.get(f"/v1/memories/{alices['jazz']}/history/", QUERY_STRING=ours).status_code == 200
    assert client.get("/v1/entities/", QUERY_STRING=ours).status_code == 200
    deleted = client.delete(f"/v1/memories/{alices['jazz']}/", QUERY_STRING=f"{ours}&delete_linked=true")
    assert deleted.status_code == 200 and deleted.json()["deleted"] == [alices["jazz"]]


@pytest.mark.parametrize("query_string", ["", "org_id=memory-service&project_id=default", "filters=" + quote("{}")])
def test_delete_all_naming_nobody_is_refused(api, alice, alices, query_string):
    """mem0's clients leave out an argument that is None: delete_all(agent_id=unset) arrives
    naming nobody, which is refused rather than read as every memory of the key's user."""
    before = snapshot()
    response = api(alice).delete("/v1/memories/", QUERY_STRING=query_string)
    assert response.status_code == 400, response.content
    assert snapshot() == before


def test_query_strings_hold_delete_linked_to_a_boolean_head_as_get_and_names_short(api, alice, alices):
    client = api(alice)
    before = snapshot()
    assert client.delete(f"/v1/memories/{alices['jazz']}/", QUERY_STRING="delete_linked=banana").status_code == 400
    assert snapshot() == before
    assert client.head("/v1/memories/", QUERY_STRING="user_id=alice").status_code == 200
    names = "&".join(f"{'x' * 300}{i}=1" for i in range(20))
    refused = client.get("/v1/entities/", QUERY_STRING=names)
    assert refused.status_code == 400 and len(refused.content) < 2000


def test_delete_all_refuses_a_field_given_twice_with_two_values(api, alice, alices):
    before = snapshot()
    twice = urlencode({"agent_id": "travel", "filters": "{'agent_id': 'food'}"})
    assert api(alice).delete("/v1/memories/", QUERY_STRING=twice).status_code == 400
    assert snapshot() == before
    same = urlencode({"agent_id": "food", "filters": "{'agent_id': 'food'}"})
    assert api(alice).delete("/v1/memories/", QUERY_STRING=same).json()["deleted"] == 2


@hypothesis_settings(max_examples=200, deadline=None)
@given(
    text=st.one_of(
        st.text(max_size=300), st.from_regex(r"\{('[a-z_]{1,8}': ('[^']{0,12}'|None|\d+|\[\]|\{\}),? ?){0,4}\}")
    )
)
def test_the_filters_parameter_is_an_object_of_entity_strings_or_refused(text):
    """Whatever the text, reading it is either the entity fields as strings or a 400: it never
    runs, never raises anything else, and never yields another shape."""
    try:
        read = query.entities_param(text)
    except InvalidInput:
        return
    assert isinstance(read, dict)
    assert set(read) <= set(query.ENTITY_FIELDS) and all(isinstance(v, str) for v in read.values())


# --- the paths of mem0's clients before 2.0 (tests/clients/test_mem0_older_live.py) -------
def test_older_clients_paths_add_list_and_search_as_the_current_ones(api, alice, bob, alices):
    """The paths of mem0's clients before 2.0 answer a bare list (mem0's "v1.0" format, which
    those clients' types read) unless asked for output_format "v1.1"; a paged list keeps its page."""
    client = api(alice)
    deployment = {"org_id": "memory-service", "project_id": "default"}
    added = client.post("/v1/memories/", {"messages": "I collect stamps", "infer": False, **deployment}, format="json")
    assert added.status_code == 200 and added.json()[0]["event"] == "ADD"
    asked = {"messages": "I collect coins", "infer": False, "output_format": "v1.1", "api_version": "v2"}
    assert client.post("/v1/memories/", asked, format="json").json()["results"][0]["event"] == "ADD"
    food = {m["id"] for m in client.post("/v2/memories/", {"agent_id": "food", **deployment}, format="json").json()}
    assert food == {alices["pizza"], alices["sushi"]}
    v11 = client.post("/v2/memories/", {"agent_id": "food", "output_format": "v1.1"}, format="json").json()
    assert {m["id"] for m in v11["results"]} == food
    paged = client.post("/v2/memories/?page=1&page_size=1", {"agent_id": "food"}, format="json").json()
    assert paged["count"] == 2 and len(paged["results"]) == 1
    listed = client.get("/v1/memories/", {"agent_id": "food", "version": "v1", **deployment}).json()
    assert {m["id"] for m in listed} == food
    for path in ("/v1/memories/search/", "/v2/memories/search/"):
        found = client.post(path, {"query": "sushi", "user_id": "alice", **deployment}, format="json").json()
        assert found[0]["id"] == alices["sushi"]
        asked = {"query": "sushi", "output_format": "v1.1"}
        assert client.post(path, asked, format="json").json()["results"][0]["id"] == alices["sushi"]
    # the current paths keep their shape whatever is asked
    assert "results" in client.post("/v3/memories/search/", {"query": "sushi"}, format="json").json()
    assert "results" in client.post("/v3/memories/", {}, format="json").json()
    assert api(bob).get("/v1/memories/", {"user_id": "alice"}).status_code == 404


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.post("/v1/memories/", {"messages": "I like tea", "infer": False, "org_id": "org_x"}, format="json"),
        lambda c: c.post("/v2/memories/", {"project_id": "proj_x"}, format="json"),
        lambda c: c.post("/v2/memories/search/", {"query": "tea", "org_id": 7}, format="json"),
        lambda c: c.get("/v1/memories/", {"org_id": "org_x"}),
        lambda c: c.get("/v1/memories/", {"top_k": "5"}),
        lambda c: c.delete("/v1/memories/", QUERY_STRING="project_id=proj_x"),
        lambda c: c.delete("/v1/memories/", QUERY_STRING="org_id=memory-service&bogus=1"),
    ],
)
def test_another_organisation_or_project_or_parameter_is_refused_and_changes_nothing(api, alice, alices, call):
    before = snapshot()
    response = call(api(alice))
    assert response.status_code == 400, response.content
    assert response.json()["detail"]
    assert snapshot() == before


def test_entities_page_when_asked_and_refuse_other_parameters(api, alice, alices):
    client = api(alice)
    everything = client.get("/v1/entities/").json()
    assert everything["count"] == 4 and len(everything["results"]) == 4 and everything["next"] is None
    first = client.get("/v1/entities/", {"page": 1, "page_size": 3}).json()
    second = client.get(first["next"]).json()
    assert first["count"] == 4 and len(first["results"]) == 3 and second["previous"] and second["next"] is None
    assert first["results"] + second["results"] == everything["results"]
    assert client.get("/v1/entities/", {"page": 3, "page_size": 3}).status_code == 404
    assert client.get("/v1/entities/", {"page_size": 0}).status_code == 400
    refused = client.get("/v1/entities/", {"bogus": 1})
    assert refused.status_code == 400 and "bogus" in refused.json()["detail"]


def test_a_search_may_say_where_it_came_from(api, alice, alices):
    client = api(alice)
    assert search(client, "sushi", source="OPENCLAW")[0] == alices["sushi"]
    too_long = client.post("/v3/memories/search/", {"query": "sushi", "source": "x" * 41}, format="json")
    assert too_long.status_code == 400


def test_deleting_an_entity_by_an_id_is_refused_as_unsupported(api, alice, alices):
    before = snapshot()
    response = api(alice).delete("/v1/entities/agent/food/")
    assert response.status_code == 400 and response.json()["error"]["code"] == "unsupported"
    assert snapshot() == before


def test_entities_and_deleting_one(api, alice, alices):
    client = api(alice)
    listed = client.get("/v1/entities/").json()["results"]
    entities = {(e["type"], e["name"]): e["total_memories"] for e in listed}
    assert entities == {("user", "alice"): 4, ("agent", "food"): 2, ("agent", "travel"): 1, ("run", "r9"): 1}
    made = Memory.objects.in_bulk(alices.values())
    food = [made[alices["pizza"]], made[alices["sushi"]]]
    (agent_food,) = [e for e in listed if e["name"] == "food"]
    assert agent_food["created_at"] == min(m.created_at for m in food).isoformat()
    assert agent_food["updated_at"] == max(m.updated_at for m in food).isoformat()
    assert client.delete("/v2/entities/agent/food/").json()["deleted"] == 2
    assert client.delete("/v2/entities/planet/mars/").status_code == 400


def test_deleting_an_entity_again_or_one_of_nobody_deletes_nothing_and_is_no_error(api, alice, bob, alices):
    """mem0's ``reset()`` deletes every entity ``users()`` listed, the user first: by then its
    agents' and runs' memories are gone, and their deletes must not fail the call."""
    assert api(alice).delete("/v2/entities/user/alice/").json()["deleted"] == 4
    for path in ("/v2/entities/agent/food/", "/v2/entities/run/r9/", "/v2/entities/app/never/"):
        response = api(alice).delete(path)
        assert response.status_code == 200 and response.json()["deleted"] == 0


def test_another_users_tag_is_out_of_reach_of_an_entity_delete(api, alice, bob, alices):
    before = snapshot()
    response = api(bob).delete("/v2/entities/agent/food/")
    assert response.status_code == 200 and response.json()["deleted"] == 0
    assert snapshot() == before
    assert api(bob).delete("/v2/entities/user/alice/").status_code == 404
    assert snapshot() == before


@pytest.mark.parametrize("run_id", ["chat/42", "a/b/c", "ends/", "50% off?", "chat#1"])
def test_an_entity_whose_name_holds_a_slash_or_reserved_characters_can_be_deleted(api, alice, alices, run_id):
    client = api(alice)
    made = add(client, messages=f"I keep notes for {run_id}", infer=False, run_id=run_id).json()["results"][0]["id"]
    listed = {(e["type"], e["name"]) for e in client.get("/v1/entities/").json()["results"]}
    assert ("run", run_id) in listed
    response = client.delete(f"/v2/entities/run/{quote(run_id, safe='')}/")
    assert response.status_code == 200 and response.json()["deleted"] == 1
    assert not Memory.objects.filter(pk=made).exists()
    assert Memory.objects.filter(owner=alice).count() == 4  # the others stay


def test_batch_update_and_delete_are_all_or_nothing(api, alice, bob, alices):
    client = api(alice)
    theirs = UserMemoryFactory(owner=bob, content="bob's quokka")
    before = snapshot()
    mixed = [{"memory_id": alices["jazz"], "text": "I listen to blues"}, {"memory_id": theirs.pk, "text": "x"}]
    assert client.put("/v1/batch/", {"memories": mixed}, format="json").status_code == 404
    assert (
        client.delete(
            "/v1/batch/", {"memories": [{"memory_id": alices["jazz"]}, {"memory_id": theirs.pk}]}, format="json"
        ).status_code
        == 404
    )
    assert snapshot() == before
    done = client.put(
        "/v1/batch/", {"memories": [{"memory_id": alices["jazz"], "text": "I listen to blues"}]}, format="json"
    )
    assert done.status_code == 200 and done.json()["results"][0]["memory"] == "I listen to blues"
    gone = client.delete(
        "/v1/batch/", {"memories": [{"memory_id": alices["berlin"]}, {"memory_id": alices["pizza"]}]}, format="json"
    )
    assert gone.status_code == 200 and not Memory.objects.filter(pk__in=[alices["berlin"], alices["pizza"]]).exists()


@pytest.mark.parametrize(
    "path",
    ["/v1/exports/", "/v1/summary/", "/v1/feedback/", "/v2/profiles/settings/", "/v2/entities/user/alice/profile/"],
)
def test_endpoints_it_does_not_offer_say_so(api, alice, path):
    response = api(alice).post(path, {}, format="json")
    assert response.status_code == 400 and "not supported" in response.json()["detail"]


def test_what_it_writes_is_in_the_memory_home_with_its_provenance_and_export(api, alice, svc, client_of):
    event = add(client_of("svc"), messages="I like jazz", user_id="alice", infer=False).json()["results"][0]
    client = api(alice)
    item = client.get(f"/api/users/me/memory-home/items/{event['id']}/").json()
    assert "mem0-compatible API" in item["provenance"]["sentence"] and "svc" in item["provenance"]["sentence"]
    exported = client.get("/api/users/me/export/").json()
    assert event["id"] in [m.get("id") for m in exported["memories"]["user"]]
    assert client.delete(f"/api/users/me/memories/{event['id']}").status_code == 204


def test_the_schema_describes_it_once_under_api_mem0(api, alice):
    schema = api(alice).get("/api/schema/?format=json").json()
    assert "/api/mem0/v3/memories/search/" in schema["paths"]
    assert not [path for path in schema["paths"] if path.startswith(("/v1/", "/v2/", "/v3/"))]


# --- metadata operators ------------------------------------------------------------------
def listed(client, filters) -> tuple[int, set[str]]:
    response = client.post("/v3/memories/?page_size=200", {"filters": filters}, format="json")
    return response.status_code, {m["id"] for m in response.json().get("results", [])}


def test_metadata_operators_narrow_as_mem0s_do(api, alice, alices):
    client = api(alice)
    everyone = set(alices.values())
    assert listed(client, {"metadata": {"topic": {"in": ["food", "music"]}}}) == (
        200,
        {alices["pizza"], alices["sushi"]},
    )
    assert listed(client, {"metadata": {"topic": {"eq": "food"}}}) == (200, {alices["pizza"], alices["sushi"]})
    assert listed(client, {"metadata": {"n": {"ne": 3}}}) == (200, everyone - {alices["pizza"]})
    assert listed(client, {"metadata": {"topic": {"nin": ["food"]}}}) == (200, {alices["berlin"], alices["jazz"]})
    assert listed(client, {"metadata": {"n": {"in": [3], "ne": 4}}}) == (200, {alices["pizza"]})
    # Not a 200 that ignores them: an operator it does not offer is named in a 400.
    for op, operand in (("gt", 1), ("contains", "fo"), ("lte", 3)):
        response = client.post("/v3/memories/", {"filters": {"metadata": {"n": {op: operand}}}}, format="json")
        assert response.status_code == 400 and response.json()["error"]["code"] == "unsupported_filter"
        assert repr(op) in response.json()["detail"]
    for bad in ({"in": []}, {"in": "food"}, {"nin": list(range(101))}):
        assert listed(client, {"metadata": {"topic": bad}})[0] == 400
    # An object that is not all operators is still a value to equal.
    add(client, messages="I file receipts monthly", infer=False, metadata={"rule": {"in": "inbox", "every": "month"}})
    (filed,) = listed(client, {"metadata": {"rule": {"in": "inbox", "every": "month"}}})[1]
    assert Memory.objects.get(pk=filed).content == "I file receipts monthly"


SCALARS = st.one_of(st.integers(-3, 3), st.sampled_from(["x", "y", "food", ""]), st.booleans())
STORED = [{"a": 1}, {"a": "x", "b": True}, {"b": 2, "c": "food"}, {}, {"a": True}, {"a": 0, "c": ""}]


def json_equal(left, right) -> bool:
    return type(left) is type(right) and left == right  # JSON: true is not 1


def reference(stored: dict, key: str, spec) -> bool | None:
    """What mem0's metadata filter means for one memory's metadata; None: a 400."""
    from memory_app.compat.query import OPERATOR_NAMES

    present = key in stored
    if not (isinstance(spec, dict) and spec and set(spec) <= OPERATOR_NAMES):
        return present and json_equal(stored[key], spec)
    verdict = True
    for op, operand in spec.items():
        if op not in ("eq", "ne", "in", "nin"):
            return None
        if op in ("in", "nin") and (not isinstance(operand, list) or not operand):
            return None
        hit = present and (
            any(json_equal(stored[key], item) for item in operand)
            if op in ("in", "nin")
            else json_equal(stored[key], operand)
        )
        verdict &= hit if op in ("eq", "in") else not hit
    return verdict


def test_metadata_filters_agree_with_their_meaning_on_generated_filters(api, alice):
    client = api(alice)
    made = [
        add(client, messages=f"generated fact number {i}", infer=False, metadata=meta).json()["results"][0]["id"]
        for i, meta in enumerate(STORED)
    ]
    stored = dict(zip(made, STORED, strict=True))
    before = snapshot()

    @hypothesis_settings(max_examples=150, deadline=None)
    @given(
        key=st.sampled_from(["a", "b", "c", "in"]),
        spec=st.one_of(
            SCALARS,
            st.dictionaries(
                st.sampled_from(["eq", "ne", "in", "nin", "gt", "icontains", "other"]),
                st.one_of(SCALARS, st.lists(SCALARS, max_size=3)),
                max_size=3,
            ),
        ),
    )
    def agrees(key, spec):
        status, found = listed(client, {"metadata": {key: spec}})
        verdicts = {pk: reference(meta, key, spec) for pk, meta in stored.items()}
        if None in verdicts.values():
            assert status == 400
        else:
            assert status == 200 and found == {pk for pk, keep in verdicts.items() if keep}

    agrees()
    assert snapshot() == before
