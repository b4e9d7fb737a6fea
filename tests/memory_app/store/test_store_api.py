"""The store over HTTP (docs/integrations.md, "The store"): namespaces map to the three scopes and
their rules; a key is one memory and its corrections; values come back as they were put. The
LangGraph adapter is driven against a live server in tests/clients/test_langgraph_live.py."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from identity_app.models import Role
from identity_app.services import token_issue
from memory_app.memories.models import Memory, Status, Tier
from memory_app.reads.models import MemoryRead, ReadPath
from memory_app.scoped.services import scoped_item_create
from tests.factories import ChatBindingFactory, MembershipFactory, UserFactory, UserMemoryFactory

pytestmark = pytest.mark.django_db

CHAT = "milky:private:10001"


def batch(client, *ops, status=200):
    response = client.post("/api/store/batch", {"ops": list(ops)}, format="json")
    assert response.status_code == status, response.content
    return response.json()["results"] if status == 200 else response.json()


def put(ns, key, value, **extra):
    return {"op": "put", "namespace": list(ns), "key": key, "value": value, **extra}


def get(ns, key, **extra):
    return {"op": "get", "namespace": list(ns), "key": key, **extra}


def search(ns, **extra):
    return {"op": "search", "namespace_prefix": list(ns), **extra}


def snapshot():
    return sorted(Memory.objects.values_list("id", "status", "content", "metadata", "store_key", "expires_at"))


def test_put_then_get_gives_the_value_back_as_it_was_put(api, alice):
    client = api(alice)
    value = {"content": "Alice likes pizza", "kind": "preference", "score": 4.5, "tags": ["a", {"b": None}]}
    assert batch(client, put(("users", "alice", "prefs"), "food", value)) == [None]
    (item,) = batch(client, get(("users", "alice", "prefs"), "food"))
    assert item["value"] == value and item["key"] == "food"
    assert item["namespace"] == ["users", "alice", "prefs"]
    memory = Memory.objects.get(pk=item["id"])
    assert (memory.scope_type, memory.owner, memory.kind, memory.content) == (
        Tier.USER,
        alice,
        "preference",
        "Alice likes pizza",
    )
    assert memory.metadata == {"score": 4.5, "tags": ["a", {"b": None}]}


def test_a_value_without_content_round_trips_and_is_found_by_its_fields(api, alice):
    client = api(alice)
    value = {"title": "Quarterly plan", "body": "ship the kayak rental feature"}
    batch(client, put(("users", "alice", "docs"), "plan", value))
    (item,) = batch(client, get(("users", "alice", "docs"), "plan"))
    assert item["value"] == value
    (found,) = batch(client, search(("users", "alice"), query="kayak"))
    assert [f["key"] for f in found][:1] == ["plan"]
    batch(client, put(("users", "alice", "docs"), "p2", {"a": 1, "b": "hidden words"}, text="only otter here"))
    (found,) = batch(client, search(("users", "alice"), query="otter"))
    assert found[0]["key"] == "p2" and found[0]["value"] == {"a": 1, "b": "hidden words"}


def test_a_key_is_one_memory_and_a_new_value_corrects_it(api, alice):
    client = api(alice)
    ns = ("users", "alice", "prefs")
    batch(client, put(ns, "food", {"content": "Alice likes pizza"}))
    first = Memory.objects.get(store_key="food")
    batch(client, put(ns, "food", {"content": "Alice likes pizza"}))  # the same value: nothing new
    assert Memory.objects.filter(store_key="food").count() == 1
    batch(client, put(ns, "food", {"content": "Alice likes sushi"}))
    (item,) = batch(client, get(ns, "food"))
    assert item["value"] == {"content": "Alice likes sushi"}
    assert item["created_at"] == first.created_at.isoformat() and item["updated_at"] > item["created_at"]
    first.refresh_from_db()
    assert first.status == Status.SUPERSEDED and first.superseded_by_id == item["id"]
    assert batch(client, get(("users", "alice", "other"), "food")) == [None]  # keys are per namespace


def test_delete_forgets_the_key_and_its_history(api, alice):
    client = api(alice)
    ns = ("users", "alice")
    batch(client, put(ns, "k", {"content": "v1"}), put(ns, "k", {"content": "v2"}))
    assert Memory.objects.filter(store_key="k").count() == 2
    batch(client, put(ns, "k", None))
    assert not Memory.objects.filter(store_key="k").exists()
    assert batch(client, get(ns, "k"), put(ns, "missing", None)) == [None, None]


def test_a_memory_written_elsewhere_is_in_its_scopes_namespace_under_its_id(api, alice):
    client = api(alice)
    memory = UserMemoryFactory(owner=alice, kind="fact", content="Alice rides a blue bike", metadata={"x": 1})
    (item,) = batch(client, get(("users", "alice"), memory.pk))
    assert item["value"] == {"x": 1, "content": "Alice rides a blue bike", "kind": "fact"}
    batch(client, put(("users", "alice"), memory.pk, {"content": "Alice rides a red bike"}))
    memory.refresh_from_db()
    assert memory.status == Status.SUPERSEDED
    (item,) = batch(client, get(("users", "alice"), memory.pk))  # the key stays, on the new version
    assert item["value"] == {"content": "Alice rides a red bike"} and item["id"] == memory.superseded_by_id


def test_putting_its_own_value_to_a_memory_written_elsewhere_gives_it_the_key_in_place(api, alice):
    client = api(alice)
    memory = UserMemoryFactory(owner=alice, kind="fact", content="Alice rides a blue bike")
    batch(client, put(("users", "alice"), memory.pk, {"content": "Alice rides a blue bike"}))
    memory.refresh_from_db()
    assert memory.status == Status.ACTIVE and memory.store_key == memory.pk  # the same version
    (item,) = batch(client, get(("users", "alice"), memory.pk))
    assert item["value"] == {"content": "Alice rides a blue bike"} and item["id"] == memory.pk


def test_the_same_value_put_again_with_other_flags_changes_them_in_place(api, alice):
    client = api(alice)
    ns = ("users", "alice", "flags")
    batch(client, put(ns, "k", {"content": "  Alice likes tea\n"}, ttl=5))
    first = Memory.objects.get(store_key="k")
    batch(client, put(ns, "k", {"content": "  Alice likes tea\n", "kind": "fact"}, index=False))
    again = Memory.objects.get(store_key="k", status=Status.ACTIVE)
    assert again.pk == first.pk and again.expires_at is None  # no new version; the ttl cleared
    (item,) = batch(client, get(ns, "k"))
    assert item["value"] == {"content": "  Alice likes tea\n", "kind": "fact"}
    (found,) = batch(client, search(ns, query="Alice likes tea"))
    assert [i["score"] for i in found] == [None]  # index: false now
    before = snapshot()
    batch(client, put(ns, "k", {"content": "  Alice likes tea\n", "kind": "fact"}, index=False))
    assert snapshot() == before  # the very same put changes nothing


def test_search_filters_like_langgraph_and_pages(api, alice):
    client = api(alice)
    ns = ("users", "alice", "test")
    docs = {
        "doc1": {"text": "red apple", "color": "red", "score": 4.5},
        "doc2": {"text": "red car", "color": "red", "score": 3.0},
        "doc3": {"text": "green apple", "color": "green", "score": 4.0},
        "doc4": {"text": "blue car", "color": "blue", "score": 3.5},
    }
    batch(client, *[put(ns, key, value) for key, value in docs.items()])
    (red,) = batch(client, search(ns, query="apple", filter={"color": "red"}))
    assert [i["key"] for i in red] == ["doc1", "doc2"] and red[0]["score"] > 0
    (high,) = batch(client, search(ns, filter={"score": {"$gte": 4.0}, "color": "green"}))
    assert [i["key"] for i in high] == ["doc3"] and high[0]["score"] is None
    (over,) = batch(client, search(ns, filter={"score": {"$gt": 3.2}}))
    assert {i["key"] for i in over} == {"doc1", "doc3", "doc4"}
    pages = [batch(client, search(ns, limit=2, offset=offset))[0] for offset in (0, 2, 4)]
    assert [len(p) for p in pages] == [2, 2, 0]
    assert {i["key"] for p in pages for i in p} == set(docs)
    bad = batch(client, search(ns, filter={"score": {"$in": [1]}}), status=400)
    assert bad["error"]["code"] == "unsupported_filter" and "$in" in bad["error"]["message"]


def test_numbers_compare_as_numbers_and_strings_as_strings(api, alice):
    client = api(alice)
    ns = ("users", "alice", "scores")
    batch(client, *[put(ns, k, {"score": v}) for k, v in (("a", 2), ("b", 9), ("c", 10), ("d", 11), ("e", "9"))])
    (found,) = batch(client, search(ns, filter={"score": {"$gte": 10}}))
    assert sorted(i["value"]["score"] for i in found) == [10, 11]
    (found,) = batch(client, search(ns, filter={"score": {"$gt": "10"}}))
    assert [i["value"]["score"] for i in found] == ["9"]


def test_ttl_sets_the_expiry_and_reads_refresh_it(api, alice):
    client = api(alice)
    ns = ("users", "alice")
    batch(client, put(ns, "tmp", {"content": "a short note"}, ttl=10))
    memory = Memory.objects.get(store_key="tmp")
    first = memory.expires_at
    assert timezone.timedelta(minutes=9) < first - timezone.now() <= timezone.timedelta(minutes=10)
    Memory.objects.filter(pk=memory.pk).update(expires_at=timezone.now() + timezone.timedelta(minutes=1))
    batch(client, get(ns, "tmp", refresh_ttl=False))
    memory.refresh_from_db()
    assert memory.expires_at - timezone.now() < timezone.timedelta(minutes=2)
    batch(client, get(ns, "tmp"))
    memory.refresh_from_db()
    assert memory.expires_at - timezone.now() > timezone.timedelta(minutes=9)
    assert Memory.objects.filter(store_key="tmp").count() == 1  # refreshed in place: no new version
    Memory.objects.filter(pk=memory.pk).update(expires_at=timezone.now() - timezone.timedelta(seconds=1))
    assert batch(client, get(ns, "tmp"), search(ns)) == [None, []]  # expired: gone for every read
    batch(client, put(ns, "tmp", {"content": "a new note"}))
    (item,) = batch(client, get(ns, "tmp"))
    assert item["value"]["content"] == "a new note" and item["expires_at"] is None
    assert batch(client, put(ns, "x", {"content": "y"}, ttl=0), status=400)["error"]["code"] == "invalid_ttl"


def test_index_false_is_never_ranked_by_a_query(api, alice):
    client = api(alice)
    ns = ("users", "alice", "test")
    batch(
        client,
        put(ns, "a", {"text": "new text about dogs"}),
        put(ns, "b", {"text": "new text about dogs"}, index=False),
    )
    (found,) = batch(client, search(ns, query="new text about dogs"))
    assert [i["key"] for i in found] == ["a", "b"] and found[1]["score"] is None


def test_a_paused_memory_is_for_no_agent(api, alice):
    client = api(alice)
    ns = ("users", "alice", "p")
    batch(client, put(ns, "k", {"content": "a paused pizza note"}))
    Memory.objects.filter(store_key="k").update(paused=True)
    assert batch(client, get(ns, "k"), search(ns, query="pizza"), search(ns)) == [None, [], []]
    batch(client, put(ns, "k", {"content": "a paused pasta note"}))  # a correction stays paused
    assert Memory.objects.get(store_key="k", status=Status.ACTIVE).paused


def test_list_namespaces(api, alice):
    client = api(alice)
    for ns in [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "c", "f"), ("x",)]:
        batch(client, put(("users", "alice", *ns), "k", {"content": "v"}))
    listed = batch(client, {"op": "list_namespaces", "prefix": ["users", "alice", "a", "b"]})[0]
    assert listed == [["users", "alice", "a", "b", "c"], ["users", "alice", "a", "b", "d", "e"]]
    deep = batch(client, {"op": "list_namespaces", "prefix": ["users", "alice"], "max_depth": 4})[0]
    assert deep == [["users", "alice", "a", "b"], ["users", "alice", "a", "c"], ["users", "alice", "x"]]
    ends = batch(client, {"op": "list_namespaces", "suffix": ["*", "f"]})[0]
    assert ends == [["users", "alice", "a", "c", "f"]]
    assert batch(client, {"op": "list_namespaces", "prefix": ["users", "alice"], "limit": 1, "offset": 1})[0] == [
        ["users", "alice", "a", "b", "d", "e"]
    ]


# --- the rules of each scope --------------------------------------------------------------
@pytest.mark.parametrize("namespace", [["users", "alice"], ["users", "alice", "prefs"]])
def test_another_user_is_404_like_a_user_that_does_not_exist(api, alice, bob, namespace):
    UserMemoryFactory(owner=alice, content="alice's quokka")
    before = snapshot()
    for op in (get(namespace, "k"), put(namespace, "k", {"content": "mine"}), search(namespace, query="quokka")):
        body = batch(api(bob), op, status=404)
        assert body["error"]["code"] == "unknown_user" and "quokka" not in str(body)
    assert snapshot() == before


def test_a_service_acts_for_the_users_its_key_reaches(api, alice, bob, svc):
    batch(api(svc), put(("users", "alice"), "k", {"content": "set by the runtime"}))
    memory = Memory.objects.get(store_key="k")
    assert (memory.owner, memory.created_by) == (alice, svc)
    _, limited = token_issue(user=svc, only_users=["bob"])
    client = api(None)
    client.credentials(HTTP_AUTHORIZATION=f"Token {limited}")
    before = snapshot()
    assert batch(client, get(("users", "alice"), "k"), status=404)["error"]["code"] == "unknown_user"
    assert batch(client, put(("users", "alice"), "k", None), status=404)["error"]["code"] == "unknown_user"
    assert snapshot() == before
    batch(client, put(("users", "bob"), "k", {"content": "for bob"}))


def test_projects_members_read_writers_write(api, alice, bob, mallory, project):
    vera = MembershipFactory(project=project, user=UserFactory(username="vera"), role=Role.VIEWER).user
    ns = ("projects", project.pk, "decisions")
    batch(api(alice), put(ns, "db", {"content": "We use PostgreSQL", "kind": "decision"}))
    (item,) = batch(api(bob), get(ns, "db"))
    assert item["value"] == {"content": "We use PostgreSQL", "kind": "decision"}
    batch(api(bob), put(ns, "db", {"content": "We use SQLite", "kind": "decision"}))
    before = snapshot()
    assert batch(api(vera), get(ns, "db"))[0]["value"]["content"] == "We use SQLite"
    assert batch(api(vera), put(ns, "db", None), status=403)["error"]["code"] == "permission_denied"
    assert batch(api(mallory), get(ns, "db"), status=404)
    assert snapshot() == before


@pytest.mark.parametrize(
    ("root", "kind"),
    [
        ("users", "Memory"),  # langmem's store manager: the schema's name
        ("users", "task"),  # a kind of this service, but not one the user tier takes
        ("users", "mood"),
        ("users", "FACT"),
        ("projects", "task"),
        ("chats", "UserProfile"),
    ],
)
def test_a_kind_the_tier_does_not_take_is_a_field_of_the_value(api, alice, svc, project, root, kind):
    """A value is any object (LangGraph's contract): its ``kind`` is the memory's kind only when
    it names one the tier takes; any other comes back as given, and a filter finds it."""
    ChatBindingFactory(user=alice, chat_key=CHAT)
    ns, client = {
        "users": (("users", "alice", "memories"), api(alice)),
        "projects": (("projects", project.pk, "memories"), api(alice)),
        "chats": (("chats", CHAT, "memories"), api(svc)),
    }[root]
    value = {"kind": kind, "content": {"content": "Alice keeps bees on the roof", "context": "said in May"}}
    batch(client, put(ns, "m1", value))
    batch(client, put(ns, "m2", {"kind": "preference", "content": "Alice prefers honey to sugar"}))
    (item,) = batch(client, get(ns, "m1"))
    assert item["value"] == value
    memory = Memory.objects.get(pk=item["id"])
    assert memory.kind == "fact" and "bees" in memory.content
    (found,) = batch(client, search(ns, query="bees on the roof", filter={"kind": kind}))
    assert [f["key"] for f in found] == ["m1"]
    (preferred,) = batch(client, search(ns, filter={"kind": "preference"}))
    assert [f["key"] for f in preferred] == ["m2"]
    assert Memory.objects.get(pk=preferred[0]["id"]).kind == "preference"


def test_chats_services_write_the_bound_user_reads(api, alice, bob, svc):
    ChatBindingFactory(user=alice, chat_key=CHAT)
    scoped_item_create(actor=svc, session_id=CHAT, kind="fact", content="alice is allergic to peanuts")
    ns = ("chats", CHAT)
    batch(api(svc), put(ns, "seat", {"content": "Prefers aisle seats", "kind": "preference"}))
    (found,) = batch(api(alice), search(ns, query="peanuts"))
    assert found[0]["value"]["content"] == "alice is allergic to peanuts"
    before = snapshot()
    assert batch(api(alice), put(ns, "new", {"content": "x"}), status=403)
    assert batch(api(bob), search(ns, query="peanuts"), status=404)
    assert batch(api(svc), get(("chats", "milky:private"), "k"), status=400)["error"]["code"] == "invalid_session_key"
    assert snapshot() == before


@pytest.mark.parametrize(
    ("op", "code"),
    [
        (put(("foo",), "k", {"content": "v"}), "invalid_namespace"),
        (put(("users",), "k", {"content": "v"}), "invalid_namespace"),
        (put(("users", "alice", "a.b"), "k", {"content": "v"}), "invalid_namespace"),
        (put(("users", "alice", ""), "k", {"content": "v"}), "invalid_namespace"),
        (put(("users", "alice", "x" * 101), "k", {"content": "v"}), "invalid_namespace"),
        (put(("users", "alice"), "", {"content": "v"}), "invalid_key"),
        (put(("users", "alice"), "k" * 201, {"content": "v"}), "invalid_key"),
        (put(("users", "alice"), "k", {"content": "x" * 4001}), "too_large"),
        (put(("users", "alice"), "k", {"content": "v", "blob": "x" * 9000}), "too_large"),
        (put(("users", "alice"), "k", {"content": "my password is Hunter2Hunter2"}), "contains_secret"),
        (put(("users", "alice"), "k", ["not", "a", "dict"]), "invalid"),
        ({"op": "drop", "namespace": ["users", "alice"]}, "invalid"),
        ({"op": "get", "namespace": ["users", "alice"], "key": "k", "extra": 1}, "invalid"),
        (search(("users", "alice"), limit=10_000), "invalid"),
    ],
)
def test_bad_operations_are_refused_and_the_batch_changes_nothing(api, alice, op, code):
    before = snapshot()
    body = batch(api(alice), put(("users", "alice"), "first", {"content": "written first"}), op, status=400)
    assert body["error"]["code"] == code, body
    assert snapshot() == before  # the first put of the batch was rolled back too


def test_store_reads_are_recorded(api, alice, svc):
    memory = UserMemoryFactory(owner=alice, content="alice plays go")
    batch(api(svc), get(("users", "alice"), memory.pk))
    batch(api(svc), search(("users", "alice"), query="go"))
    reads = MemoryRead.objects.filter(item_ref=memory.pk, path=ReadPath.STORE)
    assert reads.count() == 2 and {(r.user_id, r.principal_id) for r in reads} == {(alice.pk, svc.pk)}


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_concurrent_puts_of_one_new_key_make_one_memory(alice):
    """Real parallel connections: every writer of one new key ends in one memory and its versions."""
    import threading

    from memory_app.memories import services

    barrier, errors = threading.Barrier(6), []

    def write(n):
        try:
            barrier.wait()
            services.memory_put_keyed(
                actor=alice, tier=Tier.USER, namespace=["p"], key="same", content=f"value {n}", kind="fact"
            )
        except Exception as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    rows = Memory.objects.filter(store_key="same")
    assert rows.filter(status=Status.ACTIVE).count() == 1 and rows.count() == 6


def test_a_delete_forgets_a_paused_or_expired_item_too(api, alice):
    """``item_get`` sees only what agents may use; a delete that missed a paused memory would
    answer success and the memory would come back for every agent once resumed."""
    namespace = ("users", "alice", "prefs")
    agent = api(alice)
    batch(agent, put(namespace, "allergy", {"content": "Alice is allergic to peanuts"}))
    batch(agent, put(namespace, "city", {"content": "Alice lives in Lisbon"}))
    paused = Memory.objects.get(store_key="allergy")
    assert (
        api(alice).patch(f"/api/users/me/memory-home/items/{paused.pk}", {"paused": True}, format="json").status_code
        == 200
    )
    Memory.objects.filter(store_key="city").update(expires_at=timezone.now() - timedelta(seconds=1))
    batch(agent, put(namespace, "allergy", None), put(namespace, "city", None))
    assert not Memory.objects.filter(store_key__in=["allergy", "city"]).exists()
    assert api(alice).get(f"/api/users/me/memory-home/items/{paused.pk}").status_code == 404
