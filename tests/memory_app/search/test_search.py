import pytest
from django.contrib.auth.models import AnonymousUser

from identity_app.chat_reach import chat_in_reach
from memory_app.memories import services
from memory_app.memories.models import GLOBAL_SCOPE_ID
from memory_app.memories.selectors import memories_visible
from memory_app.scoped import search
from memory_app.scoped.services import scoped_item_create
from memory_app.search.analysis import query_terms
from memory_app.search.engine import RRF_K
from memory_app.search.models import SearchDocument, SearchPosting
from tests.factories import ChatBindingFactory

pytestmark = pytest.mark.django_db

A = "milky:private:10001"
B = "milky:private:20002"
MODES = ["fts", "vector", "hybrid"]


def put(actor, content, kind="preference", session=A, **kw):
    memory, created = scoped_item_create(actor=actor, session_id=session, kind=kind, content=content, **kw)
    assert created
    return memory


def do_search(client, query, session=A, mode="fts", limit=10):
    response = client.post(
        "/api/memory/search", {"query": query, "session_id": session, "mode": mode, "limit": limit}, format="json"
    )
    assert response.status_code == 200, response.content
    return response.json()["results"]


@pytest.fixture
def two_chats(svc):
    a_pref = put(svc, "I prefer oolong tea in the morning", session=A)
    b_pref = put(svc, "I prefer espresso coffee in the morning", session=B)
    # A global item (a legacy session writes to global; what a typed chat says waits for review).
    decision = put(
        svc, "We decided to serve tea and coffee at the morning standup", kind="decision", session="milky:20002"
    )
    return a_pref, b_pref, decision


@pytest.mark.parametrize("mode", MODES)
def test_user_a_never_sees_user_b_preference(api, svc, two_chats, mode):
    a_pref, b_pref, _decision = two_chats
    for query in ("morning coffee espresso", "prefer tea coffee morning", "espresso"):
        ids = [hit["id"] for hit in do_search(api(svc), query, session=A, mode=mode)]
        assert b_pref.pk not in ids
    ids_b = [hit["id"] for hit in do_search(api(svc), "morning tea oolong", session=B, mode=mode)]
    assert a_pref.pk not in ids_b


@pytest.mark.parametrize("mode", MODES)
def test_chat_first_then_global_fills_the_budget(api, svc, two_chats, mode):
    a_pref, _b_pref, decision = two_chats
    hits = do_search(api(svc), "morning tea", session=A, mode=mode)
    assert [h["id"] for h in hits] == [a_pref.pk, decision.pk]
    assert [(h["scope_type"], h["scope_id"]) for h in hits] == [("chat", A), ("global", GLOBAL_SCOPE_ID)]
    only_one = do_search(api(svc), "morning tea", session=A, mode=mode, limit=1)
    assert [h["id"] for h in only_one] == [a_pref.pk]


@pytest.mark.parametrize("mode", MODES)
def test_legacy_session_sees_only_global(api, svc, two_chats, mode):
    _a_pref, _b_pref, decision = two_chats
    hits = do_search(api(svc), "morning tea coffee espresso oolong", session="milky:10001", mode=mode)
    assert [h["id"] for h in hits] == [decision.pk]


def test_chinese_two_character_query_matches(api, svc):
    coffee = put(svc, "我每天早上喝咖啡", session=A)
    put(svc, "我喜欢喝绿茶", session=A)
    for mode in MODES:
        hits = do_search(api(svc), "咖啡", mode=mode)
        assert hits and hits[0]["id"] == coffee.pk, mode


def test_mixed_language_queries(api, svc):
    mixed = put(svc, "项目使用 PostgreSQL 作为主数据库", kind="fact", session=A)
    put(svc, "Standup is at nine", kind="fact", session=A)
    for query in ("PostgreSQL 数据库", "postgresql", "数据库", "主数据库用的是什么 database"):
        hits = do_search(api(svc), query)
        assert hits and hits[0]["id"] == mixed.pk, query


def test_natural_language_question_finds_the_row(api, svc):
    legacy = "milky:10001"  # global items
    billing = put(
        svc,
        "For billing we settled on PostgreSQL as the database; invoices partitioned by month",
        kind="decision",
        session=legacy,
    )
    put(svc, "The billing team prefers dark mode in dashboards", kind="decision", session=legacy)
    put(svc, "We picked Redis for the session cache", kind="decision", session=legacy)
    put(svc, "Database backups run nightly at two", kind="procedure", session=legacy)
    hits = do_search(api(svc), "Which database did we pick for billing?", session="milky:1")
    assert hits[0]["id"] == billing.pk
    zh = put(svc, "计费服务的数据库选择了 PostgreSQL", kind="decision", session=legacy)
    hits = do_search(api(svc), "我们给计费服务选了哪个数据库？", session="milky:1")
    assert hits[0]["id"] == zh.pk


def test_query_terms_drop_stop_words_and_split_chinese():
    assert query_terms("Which database did we pick for billing?") == ["databas", "pick", "bill"]
    assert query_terms("咖啡") == ["咖啡"]
    assert "我们" not in query_terms("我们用什么数据库")
    assert "数据" in query_terms("我们用什么数据库")


@pytest.mark.parametrize("mode", MODES)
def test_forgetting_removes_from_keyword_and_vector_search(api, svc, mode):
    memory = put(svc, "I keep my bicycle in the garage", kind="fact")
    assert [h["id"] for h in do_search(api(svc), "bicycle garage", mode=mode)] == [memory.pk]
    services.memory_forget(actor=svc, memory_id=memory.pk)
    assert do_search(api(svc), "bicycle garage", mode=mode) == []
    assert not SearchDocument.objects.filter(source="memory", ref=memory.pk).exists()
    assert not SearchPosting.objects.filter(term="bicycl").exists()


@pytest.mark.parametrize("mode", MODES)
def test_superseded_text_leaves_search(api, svc, mode):
    old = put(svc, "My favourite editor is emacs", kind="preference")
    new = services.memory_supersede(actor=svc, memory_id=old.pk, content="My favourite editor is vim")
    ids = [h["id"] for h in do_search(api(svc), "favourite editor emacs", mode=mode)]
    assert old.pk not in ids and new.pk in ids


def test_archived_item_leaves_search(api, svc):
    memory = put(svc, "Parking spot number seventeen", kind="fact")
    assert services.memory_archive(actor=svc, memory_id=memory.pk)
    for mode in MODES:
        assert do_search(api(svc), "parking spot", mode=mode) == []


def test_rescoped_item_moves_in_the_index(api, svc):
    memory = put(svc, "My cat is called Mochi", kind="fact", session="milky:1")
    assert [h["id"] for h in do_search(api(svc), "cat Mochi", session=B)] == [memory.pk]
    services.memory_rescope(
        actor=svc, memory_id=memory.pk, from_scope=("global", GLOBAL_SCOPE_ID), to_scope=("chat", A)
    )
    for mode in MODES:
        assert do_search(api(svc), "cat Mochi", session=B, mode=mode) == []
        hits = do_search(api(svc), "cat Mochi", session=A, mode=mode)
        assert [(h["id"], h["scope_id"]) for h in hits] == [(memory.pk, A)]


def test_search_permissions(api, svc, alice, bob, two_chats):
    a_pref, _b_pref, decision = two_chats
    ChatBindingFactory(chat_key=A, user=alice)
    assert [h["id"] for h in do_search(api(alice), "tea", session=A)] == [a_pref.pk, decision.pk]
    denied = api(bob).post("/api/memory/search", {"query": "tea", "session_id": A}, format="json")
    # Out of reach: answered as a chat that does not exist (docs/API.md, "Chat reach").
    assert denied.status_code == 404 and "oolong" not in denied.content.decode()
    # Legacy (global only) search is open to every authenticated user.
    assert [h["id"] for h in do_search(api(bob), "tea coffee", session="milky:5")] == [decision.pk]
    assert api().post("/api/memory/search", {"query": "tea", "session_id": A}, format="json").status_code in (401, 403)


@pytest.mark.parametrize(
    "body",
    [
        {"query": "tea", "session_id": "milky:private"},
        {"query": "tea", "session_id": A, "mode": "semantic"},
        {"query": "tea", "session_id": A, "limit": 0},
        {"query": "tea", "session_id": A, "limit": 51},
        {"query": "x" * 1001, "session_id": A},
        {"query": "", "session_id": A},
        {"query": "tea", "session_id": A, "scope_type": "global"},
        {"query": ["tea"], "session_id": A},
    ],
)
def test_bad_search_input_is_400(api, svc, body):
    response = api(svc).post("/api/memory/search", body, format="json")
    assert response.status_code == 400
    assert "error" in response.json()


def test_query_without_terms_returns_nothing(api, svc, two_chats):
    assert do_search(api(svc), "the of and ?!", mode="fts") == []


def test_like_wildcards_in_queries_are_literal(api, svc):
    put(svc, "100 percent sure", kind="fact")
    assert do_search(api(svc), "%_%") == []


def test_hybrid_uses_reciprocal_rank_fusion(svc):
    memory = put(svc, "Weekly report goes out on Friday", kind="task")
    hits = search.search_scope(scope=("chat", A), query="weekly report", limit=5, mode="hybrid")
    assert hits[0].id == memory.pk
    assert hits[0].score == pytest.approx(2 / (RRF_K + 1))


def test_documents_follow_the_item_scope_and_status(svc):
    old = put(svc, "I park on level two", kind="fact", session="milky:1")
    doc = SearchDocument.objects.select_related("scope").get(source="memory", ref=old.pk)
    assert doc.scope.key == "global:__global__" and doc.vector is not None
    services.memory_rescope(actor=svc, memory_id=old.pk, from_scope=("global", GLOBAL_SCOPE_ID), to_scope=("chat", A))
    moved = SearchDocument.objects.select_related("scope").get(source="memory", ref=old.pk)
    assert moved.pk == doc.pk and moved.scope.key == f"chat:{A}"  # moved, vector kept
    assert set(SearchPosting.objects.filter(document=moved).values_list("scope_id", flat=True)) == {moved.scope_id}
    assert (moved.scope.docs, doc.scope.__class__.objects.get(pk=doc.scope_id).docs) == (1, 0)
    new = services.memory_supersede(actor=svc, memory_id=old.pk, content="I park on level three")
    assert not SearchDocument.objects.filter(source="memory", ref=old.pk).exists()
    assert SearchDocument.objects.get(source="memory", ref=new.pk).scope.key == f"chat:{A}"


def test_chat_scope_access_and_memory_visibility_share_one_rule(svc, alice, bob, admin):
    put(svc, "I like plums")
    ChatBindingFactory(chat_key=A, user=alice)
    expected = {"svc": True, "alice": True, "bob": False, "admin": False, "anonymous": False}
    for name, user in {"svc": svc, "alice": alice, "bob": bob, "admin": admin, "anonymous": AnonymousUser()}.items():
        sees_rows = memories_visible(user=user, tier="chat").filter(scope_id=A).exists()
        assert chat_in_reach(actor=user, chat_key=A) is sees_rows is expected[name], name
        assert chat_in_reach(actor=user, chat_key=B) is (name == "svc"), name  # B has no rows


def test_search_response_and_schema_carry_warnings(api, svc):
    put(svc, "I keep my bicycle in the garage", kind="fact")
    body = api(svc).post("/api/memory/search", {"query": "bicycle", "session_id": A}, format="json").json()
    assert body["warnings"] == [] and body["mode"] == "hybrid"
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    assert "warnings" in schema["components"]["schemas"]["SearchOutput"]["properties"]
