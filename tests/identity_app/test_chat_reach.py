"""The chat reach rule (``identity_app.chat_reach``, docs/API.md "Chat reach"): every path that
takes a chat key asks it, and a chat out of reach is answered exactly like a chat that does
not exist — 404 ``not_found`` with the same body, or no items — and nothing changes.

Setup: alice's private chat A and bob's B are bound; U is a private chat bound to nobody and
G a group chat (bound to nobody). ``lim`` is a service token limited to alice, ``lim2`` a
second one of the same principal and limits, ``full`` the principal's unlimited token."""

import pytest
from django.contrib.auth.models import AnonymousUser, Permission
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from config.errors import NotFound
from identity_app.authentication import ApiTokenAuthentication
from identity_app.chat_reach import (
    ALL_CHATS,
    _decide,
    chat_in_reach,
    chat_in_reach_of_run,
    chat_keys_reachable,
    may_bind_chats,
)
from identity_app.models import ChatBinding
from identity_app.permissions import TokenReach
from identity_app.services import token_issue
from memory_app.mcp import tools
from memory_app.mcp.auth import principal_resolve
from memory_app.mcp.runs import SessionRun
from memory_app.memories.models import Memory
from memory_app.ops import services as jobs
from memory_app.ops.models import BackgroundJob
from memory_app.runs.models import AgentRun
from memory_app.scoped.context import scoped_items
from memory_app.scoped.models import MemoryCandidate
from memory_app.scoped.services import scoped_item_create
from memory_app.threads.models import Conversation, Message
from tests.factories import AgentRunFactory, ChatBindingFactory, ConversationFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db

A = "milky:private:10001"  # alice's
B = "milky:private:20002"  # bob's
U = "milky:private:30003"  # a private chat bound to nobody
G = "milky:group:40004"  # a group chat, bound to nobody
MALFORMED = (
    "milky:private",
    "milky:Private:20002",
    "milky:privat:20002",
    "milky:private:20002:lane",
    "milky:private:2 2",
)


def lanes(chat: str) -> list[str]:
    """The chat itself and keys of lanes inside it: all name the same chat."""
    return [chat, f"{chat}:cron:nightly", f"{chat}:sub:1:cron:x"]


def token_client(user, **limits) -> APIClient:
    _, key = token_issue(user=user, **limits)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    client.key = key
    return client


@pytest.fixture
def world(alice, bob, svc):
    ChatBindingFactory(chat_key=A, user=alice)
    ChatBindingFactory(chat_key=B, user=bob)
    for chat, text in ((A, "alice likes peanuts"), (B, "bob likes liquorice"), (U, "someone likes figs")):
        scoped_item_create(actor=svc, session_id=chat, kind="preference", content=text)
    scoped_item_create(actor=svc, session_id=G, kind="preference", content="the group likes Mondays")


@pytest.fixture
def lim(svc):
    return token_client(svc, only_users=["alice"])


def snapshot() -> dict:
    return {
        "conversations": sorted(Conversation.objects.values_list("id", "owner_id", "session_key", "title")),
        "runs": AgentRun.objects.count(),
        "messages": Message.objects.count(),
        "memories": sorted(Memory.objects.values_list("id", "scope_type", "scope_id", "status")),
        "bindings": sorted(ChatBinding.objects.values_list("chat_key", "user_id")),
        "candidates": MemoryCandidate.objects.count(),
        "jobs": BackgroundJob.objects.count(),
    }


def assert_like_missing(response, missing):
    """``response`` is exactly the answer about a chat that does not exist."""
    assert response.status_code == 404, response.content
    assert response.json()["error"]["code"] == "not_found"
    assert response.json()["error"]["message"] == missing.json()["error"]["message"]


# --- the rule itself -----------------------------------------------------------------------


ALICE, BOB = 1, 2


@pytest.mark.parametrize(
    ("bound_to", "actor", "service", "reach", "acting_for", "expected"),
    [
        # 1. work for a user never reaches another user's private chat, whoever asks
        (BOB, None, True, None, ALICE, False),
        (BOB, 9, True, None, ALICE, False),
        (ALICE, 9, True, None, ALICE, True),
        (None, 9, True, None, ALICE, True),
        # 2. a user reaches the chats bound to them, and nothing else
        (ALICE, ALICE, False, None, None, True),
        (BOB, ALICE, False, None, None, False),
        (None, ALICE, False, None, None, False),
        # 3. an unlimited service principal reaches every chat
        (None, 9, True, None, None, True),
        (BOB, 9, True, None, None, True),
        # 4. a limited token: chats bound to users in its limit; never a chat bound to nobody;
        #    no chat at all when limited to projects
        (ALICE, 9, True, TokenReach(1, frozenset({ALICE}), None), None, True),
        (BOB, 9, True, TokenReach(1, frozenset({ALICE}), None), None, False),
        (None, 9, True, TokenReach(1, frozenset({ALICE}), None), None, False),
        (ALICE, 9, True, TokenReach(1, None, frozenset({"prj"})), None, False),
        (ALICE, 9, True, TokenReach(1, frozenset({ALICE}), frozenset({"prj"})), None, False),
        (BOB, 9, True, TokenReach(1, frozenset({ALICE, BOB}), None), ALICE, False),
    ],
)
def test_the_rule(bound_to, actor, service, reach, acting_for, expected):
    got = _decide(bound_to=bound_to, actor_id=actor, service=service, reach=reach, acting_for_id=acting_for)
    assert got is expected


def _principals(alice, bob, svc, admin):
    """Every kind of principal, as the token authentication leaves it on the request's user."""
    out = {"anonymous": AnonymousUser(), "admin": admin}
    for name, user, limits in (
        ("alice", alice, {}),
        ("bob", bob, {}),
        ("svc", svc, {}),
        ("svc-alice", svc, {"only_users": ["alice"]}),
        ("svc-both", svc, {"only_users": ["alice", "bob"]}),
        ("svc-project", svc, {"only_projects": [ProjectFactory(name="Zeus").pk]}),
    ):
        _, key = token_issue(user=user, **limits)
        request = RequestFactory().get("/", HTTP_AUTHORIZATION=f"Token {key}")
        out[name] = ApiTokenAuthentication().authenticate(request)[0]
    return out


def test_the_list_form_and_the_single_key_form_agree_for_every_principal(world, alice, bob, svc, admin):
    """``chat_keys_reachable`` (lists, memory visibility) and ``chat_in_reach`` (one key) are one
    rule: for every principal and chat, a key is listed exactly when it is in reach."""
    expected = {
        "anonymous": set(),
        "admin": set(),
        "alice": {A},
        "bob": {B},
        "svc": {A, B, U, G},
        "svc-alice": {A},
        "svc-both": {A, B},
        "svc-project": set(),
    }
    for name, actor in _principals(alice, bob, svc, admin).items():
        listed = chat_keys_reachable(actor=actor)
        for chat in (A, B, U, G):
            single = chat_in_reach(actor=actor, chat_key=chat)
            in_list = listed is ALL_CHATS or listed.filter(chat_key=chat).exists()
            assert single is in_list is (chat in expected[name]), (name, chat)


def test_the_rule_costs_at_most_one_query_with_a_token_and_two_with_a_session(world, alice, bob, svc):
    actors = _principals(alice, bob, svc, UserFactory(username="root", is_staff=True))
    # The token authentication read the principal's run_agents grant with the token.
    cases = [
        (actors["svc"], A, None, 0),  # nothing to look up
        (actors["svc"], A, bob, 1),  # acting for a user: the binding
        (actors["svc-alice"], B, None, 1),
        (actors["svc-alice"], U, alice, 1),
        (actors["alice"], A, None, 1),
    ]
    for actor, chat, acting_for, queries in cases:
        with CaptureQueriesContext(connection) as captured:
            chat_in_reach(actor=actor, chat_key=chat, acting_for_id=acting_for and acting_for.pk)
        assert len(captured) == queries, (actor, chat, [q["sql"] for q in captured])
    # A web session's user: the grant, then the binding; the grant is kept on the user object.
    session_user = type(alice).objects.get(pk=alice.pk)
    with CaptureQueriesContext(connection) as captured:
        assert chat_in_reach(actor=session_user, chat_key=A)
    assert len(captured) == 2
    with CaptureQueriesContext(connection) as captured:
        assert not chat_in_reach(actor=session_user, chat_key=B)
    assert len(captured) == 1
    # A run at context assembly: the binding only.
    with CaptureQueriesContext(connection) as captured:
        assert not chat_in_reach_of_run(user_id=alice.pk, chat_key=B)
    assert len(captured) == 1


# --- conversations -------------------------------------------------------------------------


def test_a_limited_token_cannot_give_its_users_conversation_another_chat(world, alice, lim):
    """The attack: a conversation for alice whose session_key is bob's chat (or a lane of it),
    a chat of nobody, a group. Each is exactly the answer of a chat that does not exist."""
    before = snapshot()
    missing = lim.post("/api/conversations", {"user": "alice", "session_key": "zzz:private:999"}, format="json")
    assert missing.status_code == 404
    for key in [*lanes(B), *lanes(U), *lanes(G)]:
        response = lim.post("/api/conversations", {"user": "alice", "title": "t", "session_key": key}, format="json")
        assert_like_missing(response, missing)
    for key in MALFORMED:
        response = lim.post("/api/conversations", {"user": "alice", "session_key": key}, format="json")
        assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_session_key", key
    assert snapshot() == before
    # Its own user's chat, in any lane, and a legacy key (no chat: the global scope) are fine.
    for key in [*lanes(A), "milky:10001"]:
        response = lim.post("/api/conversations", {"user": "alice", "session_key": key}, format="json")
        assert response.status_code == 201, (key, response.content)


def test_even_an_unlimited_principal_cannot_put_one_users_chat_in_anothers_conversation(world, api, svc):
    client = api(svc)
    for key in lanes(B):
        response = client.post("/api/conversations", {"user": "alice", "session_key": key}, format="json")
        assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert not Conversation.objects.exists()
    for key in (A, U, G):  # hers, and chats bound to nobody
        assert (
            client.post("/api/conversations", {"user": "alice", "session_key": key}, format="json").status_code == 201
        )


def test_a_conversations_session_key_cannot_be_changed(world, api, svc, alice):
    client = api(svc)
    created = client.post("/api/conversations", {"user": "alice", "session_key": A}, format="json").json()
    response = client.patch(f"/api/conversations/{created['id']}", {"session_key": B}, format="json")
    assert response.status_code == 400
    assert Conversation.objects.get(pk=created["id"]).session_key == A


def test_a_limited_token_cannot_start_or_take_over_a_run_in_a_chat_out_of_its_reach(world, api, svc, alice, lim):
    """An unlimited principal gave alice's conversation a group chat (bound to nobody): a token
    limited to alice sees the conversation but may not run in it, nor claim a run of it, since
    the run token would read the group's items."""
    full = api(svc)
    conversation = full.post("/api/conversations", {"user": "alice", "session_key": f"{G}:cron:x"}, format="json")
    run = full.post(
        "/api/runs",
        {"user": "alice", "conversation_id": conversation.json()["id"], "request_id": "r", "worker_id": "w"},
        format="json",
    ).json()
    AgentRun.objects.filter(pk=run["id"]).update(lease_expires_at=None)  # free to take over
    before = snapshot() | {"leases": sorted(AgentRun.objects.values_list("id", "lease_generation", "worker_id"))}
    body = {"user": "alice", "conversation_id": conversation.json()["id"], "request_id": "r2", "worker_id": "w2"}
    for response in (
        lim.post("/api/runs", body, format="json"),
        lim.post(f"/api/runs/{run['id']}/claim", {"worker_id": "w2"}, format="json"),
    ):
        assert response.status_code == 404 and response.json()["error"]["code"] == "not_found", response.content
    assert (
        snapshot() | {"leases": sorted(AgentRun.objects.values_list("id", "lease_generation", "worker_id"))} == before
    )
    assert full.post(f"/api/runs/{run['id']}/claim", {"worker_id": "w2"}, format="json").status_code == 200


# --- context assembly ----------------------------------------------------------------------


def _run_in(user, key, **kwargs):
    return AgentRunFactory(user=user, conversation=ConversationFactory(owner=user, session_key=key), **kwargs)


def test_context_never_shows_a_chat_out_of_the_runs_reach(world, alice, bob):
    """Defence in depth: a conversation that holds another user's chat (written before the rule,
    or a chat bound to someone else since) gives its run no items of it."""
    for key in lanes(B):
        assert scoped_items(run=_run_in(alice, key), query="likes liquorice")[0] is None
    assert "peanuts" in scoped_items(run=_run_in(alice, A), query="likes peanuts")[0]
    # Bound to nobody: the creator's reach was checked when the key was set.
    assert "figs" in scoped_items(run=_run_in(alice, U), query="likes figs")[0]


def test_a_chat_rebound_to_another_user_leaves_the_runs_context_at_once(world, api, svc, alice, bob, lim):
    conversation = lim.post("/api/conversations", {"user": "alice", "session_key": f"{A}:cron:x"}, format="json")
    assert conversation.status_code == 201
    run = lim.post(
        "/api/runs",
        {"user": "alice", "conversation_id": conversation.json()["id"], "request_id": "r", "worker_id": "w"},
        format="json",
    ).json()
    runner = APIClient()
    runner.credentials(HTTP_AUTHORIZATION=f"Run {run['run_token']}")

    def scoped():
        body = runner.get(f"/api/runs/{run['id']}/context", {"query": "likes peanuts"}).json()
        return [s["content"] for s in body["sections"] if s["name"] == "scoped_memory"]

    assert "peanuts" in scoped()[0]
    ChatBinding.objects.filter(chat_key=A).update(user=bob)
    assert scoped() == []


# --- chat bindings -------------------------------------------------------------------------


def test_a_limited_token_cannot_bind_a_chat_and_then_read_it(world, lim, alice):
    """The attack: bind an unbound private chat to alice, then search it. Refused alike for
    every chat (unbound, bound, alice's own), so the answer tells nothing about the chat."""
    before = snapshot()
    answers = set()
    for key in (U, B, A, "milky:private:55555"):
        response = lim.post("/api/chat-bindings", {"chat_key": key, "user": "alice"}, format="json")
        answers.add((response.status_code, response.json()["error"]["code"]))
    assert answers == {(403, "token_limited")}
    assert snapshot() == before
    search = lim.post("/api/memory/search", {"query": "figs", "session_id": U}, format="json")
    assert search.status_code == 404 and "figs" not in search.content.decode()


def test_only_a_principal_with_full_reach_binds(world, svc, alice, api, admin):
    actors = _principals(alice, UserFactory(username="carol"), svc, admin)
    assert may_bind_chats(actors["svc"]) and may_bind_chats(admin)
    for name in ("svc-alice", "svc-both", "svc-project", "alice", "anonymous"):
        assert not may_bind_chats(actors[name]), name
    staff = UserFactory(username="ops", is_staff=True)
    assert not may_bind_chats(staff)
    staff.user_permissions.add(Permission.objects.get(codename="add_chatbinding"))
    assert may_bind_chats(type(staff).objects.get(pk=staff.pk))
    response = api(svc).post("/api/chat-bindings", {"chat_key": U, "user": "alice"}, format="json")
    assert response.status_code == 201


# --- /api/memory/* -------------------------------------------------------------------------


def test_memory_api_answers_a_chat_out_of_reach_as_missing_and_changes_nothing(world, lim, alice, api, bob):
    before = snapshot()
    missing = lim.post("/api/memory/search", {"query": "likes", "session_id": "zzz:private:1"}, format="json")
    for key in [*lanes(B), *lanes(U), *lanes(G)]:
        bodies = {
            "/api/memory/search": {"query": "likes", "session_id": key},
            "/api/memory/items": {"content": "x likes y", "kind": "preference", "session_id": key},
            "/api/memory/consolidate": {"session_id": key, "messages": [{"role": "user", "content": "I like tea."}]},
            "/api/memory/dream": {"session_id": key},
        }
        for path, body in bodies.items():
            response = lim.post(path, body, format="json")
            assert_like_missing(response, missing)
            for word in ("liquorice", "figs", "Mondays"):
                assert word not in response.content.decode()
        # A user searching a chat not bound to them: the same answer.
        assert_like_missing(
            api(bob).post("/api/memory/search", {"query": "x", "session_id": A}, format="json"), missing
        )
    for key in MALFORMED:
        response = lim.post("/api/memory/search", {"query": "likes", "session_id": key}, format="json")
        assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_session_key"
    assert snapshot() == before


def test_an_item_never_names_a_chat_its_writer_may_not_use(world, api, svc, admin):
    """A global kind learned "in" a chat records that chat as its source: staff allowed to
    write global items cannot claim a chat they do not reach."""
    before = snapshot()
    response = api(admin).post(
        "/api/memory/items",
        {"content": "Deploys are on Tuesdays", "kind": "procedure", "session_id": B, "scope_type": "global"},
        format="json",
    )
    assert response.status_code == 404
    assert snapshot() == before


def test_chat_memory_ids_out_of_reach_are_not_found(world, alice, bob):
    """Item detail, correct and forget go through the same visibility (the list form)."""
    item = Memory.objects.get(scope_id=B)
    client = token_client(alice)
    for response in (
        client.get(f"/api/users/me/memory-home/items/{item.pk}"),
        client.post(f"/api/users/me/memory-home/items/{item.pk}/supersede", {"content": "x"}, format="json"),
        client.delete(f"/api/users/me/memory-home/items/{item.pk}"),
    ):
        assert response.status_code == 404
    assert Memory.objects.filter(pk=item.pk, status="active").exists()


# --- MCP -------------------------------------------------------------------------------------


def _mcp(key: str, acting_user: str | None = None):
    principal = principal_resolve(authorization=f"Token {key}", acting_user=acting_user)
    return tools.CallContext(principal=principal, runs=SessionRun(principal))


def _mcp_search(ctx, key):
    return tools.tool_call(ctx=ctx, name="search_chat_memories", arguments={"session_id": key, "query": "likes"})


def test_a_service_session_acting_for_bob_cannot_search_alices_private_chat(world, svc, alice, bob):
    _, full = token_issue(user=svc)
    for key in lanes(A):
        with pytest.raises(NotFound):
            _mcp_search(_mcp(full, "bob"), key)
    assert "peanuts" in str(_mcp_search(_mcp(full, "alice"), A))
    assert "Mondays" in str(_mcp_search(_mcp(full, "bob"), G))  # a group: bound to nobody
    _, limited = token_issue(user=svc, only_users=["alice"])
    for key in (G, U, B):
        with pytest.raises(NotFound):
            _mcp_search(_mcp(limited, "alice"), key)


# --- background jobs -----------------------------------------------------------------------


def test_a_limited_token_sees_only_the_jobs_it_queued(world, svc, alice, lim):
    other = token_client(svc, only_users=["alice"])  # same principal, same limits
    full = token_client(svc)
    queued = lim.post("/api/memory/dream", {"session_id": A}, format="json")
    assert queued.status_code == 202
    url = queued.json()["status_url"]
    assert lim.get(url).status_code == 200
    assert other.get(url).status_code == 404 and other.get(url).json()["error"]["code"] == "not_found"
    assert full.get(url).status_code == 200  # the unlimited token's reach covers it
    # The job acts within the reach of its token when it runs: a chat rebound meanwhile fails.
    ChatBinding.objects.filter(chat_key=A).update(user=UserFactory(username="dave"))
    jobs.jobs_run_pending(worker_id="w")
    job = lim.get(url).json()
    assert (job["status"], job["error"]["code"]) == ("failed", "not_found")
