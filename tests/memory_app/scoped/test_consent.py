"""Nothing said in a chat is shared with everyone without consent (docs/scoped-memory.md,
"Consent"): an item of a global kind learned in a typed chat waits in that chat, pending, until
an operator approves its candidate in the admin (``MEMORY_CHAT_TO_GLOBAL=direct`` restores the
original routing). What reached global from a chat bound to a user is a source of their memory
home ("shared from your chats"): searchable, exported, forgettable by them and by nobody else."""

import importlib

import pytest
from django.apps import apps
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import Permission
from django.urls import reverse

from memory_app.memories.models import Memory, Status
from memory_app.ops import services as jobs
from memory_app.scoped.consolidation import dream_session, system_actor
from memory_app.scoped.models import CandidateDecision, MemoryCandidate
from memory_app.search.models import SearchDocument, SearchPosting
from tests.factories import (
    ChatBindingFactory,
    ConversationFactory,
    GlobalMemoryFactory,
    MessageFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

A = "milky:private:10001"  # alice's private chat
B = "milky:private:20002"  # bob's
M = "milky:private:30003"  # mallory's
ALFAMA = "We decided to sell the flat in Alfama next spring."
CANDIDATES = reverse("admin:memory_app_memorycandidate_changelist")
HOME = "/api/users/me/memory-home"


@pytest.fixture
def chats(alice, bob, mallory):
    for user, key in ((alice, A), (bob, B), (mallory, M)):
        ChatBindingFactory(user=user, chat_key=key)


def consolidate(client, session, *texts):
    messages = [{"role": "user", "content": text} for text in texts]
    response = client.post("/api/memory/consolidate", {"session_id": session, "messages": messages}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def search(client, session, query="flat in Alfama"):
    response = client.post(
        "/api/memory/search", {"session_id": session, "query": query, "mode": "fts", "limit": 50}, format="json"
    )
    assert response.status_code == 200, response.content
    return [hit["id"] for hit in response.json()["results"]]


def review(client, reviewer, action, *candidate_ids):
    client.force_login(reviewer)
    return client.post(
        CANDIDATES, {"action": action, ACTION_CHECKBOX_NAME: list(candidate_ids), "confirmed": "yes"}, follow=True
    )


def shared_source(client):
    body = client.get(HOME).json()
    return next(s for s in body["sources"] if s["source"] == "shared")


def home_items(client, source):
    response = client.get(f"{HOME}/items", {"source": source})
    assert response.status_code == 200, response.content
    return response.json()["results"]


def home_search(client, query="Alfama"):
    return [hit["id"] for hit in client.get(f"{HOME}/search", {"q": query}).json()["results"]]


def derived_rows(memory_id):
    return (
        list(SearchDocument.objects.filter(ref=memory_id).values_list("source", "scope__key")),
        SearchPosting.objects.filter(document__ref=memory_id).count(),
        MemoryCandidate.objects.filter(memory_id=memory_id).count(),
    )


def test_alfama_waits_in_alices_chat_until_an_operator_shares_it(api, client, svc, alice, bob, mallory, admin, chats):
    body = consolidate(api(svc), A, ALFAMA)
    [candidate] = body["candidates"]
    assert (candidate["decision"], candidate["scope_type"]) == ("pending", "global")
    item = Memory.objects.get(pk=candidate["memory_id"])
    assert (item.scope_type, item.scope_id, item.status, item.source_chat_key) == ("chat", A, Status.ACTIVE, A)
    assert not Memory.objects.filter(scope_type="global").exists()

    # Pending: bob (and the bots of bob's chat) do not find it; alice's chat still uses it.
    assert item.pk not in search(api(bob), B)
    assert item.pk not in search(api(svc), B)
    assert item.pk not in search(api(svc), "milky:30003")  # a legacy session searches global only
    assert item.pk in search(api(svc), A)
    assert item.pk in search(api(alice), A)
    [shown] = [i for i in home_items(api(alice), f"chat:{A}") if i["id"] == item.pk]
    assert shown["provenance"]["pending_review"] is True and shown["provenance"]["shared"] is None
    assert shared_source(api(alice))["count"] == 0

    # The operator approves: the same row moves to global, with who approved it and when.
    page = review(client, admin, "approve_candidates", candidate["id"])
    assert page.status_code == 200 and "Shared with everyone: “" in page.text
    item.refresh_from_db()
    assert (item.scope_type, item.scope_id, item.source_chat_key) == ("global", "__global__", A)
    record = MemoryCandidate.objects.get(pk=candidate["id"])
    assert (record.decision, record.memory_id, record.reviewed_by) == (CandidateDecision.CREATED, item.pk, admin)
    assert item.pk in search(api(bob), B)  # shared knowledge now, by consent

    # Alice's home: a source of its own, in its search, its export, with provenance.
    alice_api = api(alice)
    assert shared_source(alice_api)["count"] == 1
    [shared] = home_items(alice_api, "shared")
    assert (shared["id"], shared["source"], shared["can_change"], shared["can_correct"]) == (
        item.pk,
        "shared",
        True,
        False,
    )
    provenance = shared["provenance"]
    assert provenance["shared"]["chat_key"] == A
    assert provenance["shared"]["approved_by"] == "admin" and provenance["shared"]["approved_at"]
    assert "admin" in provenance["sentence"] and A in provenance["sentence"]
    assert home_search(alice_api) == [item.pk]
    export = alice_api.get("/api/users/me/export").json()
    assert [(s["chat_key"], [m["id"] for m in s["memories"]]) for s in export["memories"]["shared"]] == [(A, [item.pk])]
    assert "Alfama" in alice_api.get("/api/users/me/export/markdown").content.decode()

    # Mallory's home holds nothing of it; bob can neither see it in his home nor forget it.
    for other in (mallory, bob):
        other_api = api(other)
        assert shared_source(other_api)["count"] == 0
        assert home_items(other_api, "shared") == []
        assert home_search(other_api) == []
        assert other_api.get(f"{HOME}/items/{item.pk}").status_code == 404
        assert other_api.delete(f"{HOME}/items/{item.pk}").status_code == 404
        assert other_api.post(f"{HOME}/forget", {"ids": [item.pk]}, format="json").status_code == 404
        forget_all = other_api.post(f"{HOME}/forget-all", {"source": "all", "confirm": "FORGET"}, format="json")
        assert forget_all.status_code == 200 and item.pk not in forget_all.json()["forgotten"]
        assert "Alfama" not in str(other_api.get("/api/users/me/export").json())
    assert Memory.objects.filter(pk=item.pk).exists()

    # Alice corrects nothing (it is everyone's now) but forgets it: the row and what derives from it.
    assert alice_api.post(f"{HOME}/items/{item.pk}/supersede", {"content": "x"}, format="json").status_code == 403
    docs, postings, candidates = derived_rows(item.pk)
    assert ("memory-shared", f"shared:{A}") in docs and ("memory", "global:__global__") in docs
    assert postings and candidates == 1
    assert alice_api.delete(f"{HOME}/items/{item.pk}").status_code == 204
    assert not Memory.objects.filter(pk=item.pk).exists()
    assert derived_rows(item.pk) == ([], 0, 0)
    assert item.pk not in search(api(bob), B)


def test_forget_everything_takes_what_was_shared_from_my_chats(api, client, svc, alice, bob, admin, chats):
    first = consolidate(api(svc), A, ALFAMA)["candidates"][0]
    second = consolidate(api(svc), f"{A}:cron:weekly", "We decided to repaint the kitchen in May.")["candidates"][0]
    bobs = consolidate(api(svc), B, "We decided to move to Porto.")["candidates"][0]
    review(client, admin, "approve_candidates", first["id"], second["id"], bobs["id"])
    shared = [first["memory_id"], second["memory_id"]]
    assert Memory.objects.filter(pk__in=[*shared, bobs["memory_id"]], scope_type="global").count() == 3
    alice_api = api(alice)
    assert sorted(i["id"] for i in home_items(alice_api, "shared")) == sorted(shared)

    response = alice_api.post(f"{HOME}/forget-all", {"source": "all", "confirm": "FORGET"}, format="json")
    assert response.status_code == 200, response.content
    assert set(shared) <= set(response.json()["forgotten"])
    assert not Memory.objects.filter(pk__in=shared).exists()
    for memory_id in shared:
        assert derived_rows(memory_id) == ([], 0, 0)
    assert Memory.objects.filter(pk=bobs["memory_id"], scope_type="global").exists()  # bob's chat, not hers
    assert home_items(alice_api, "shared") == []


def test_forget_the_shared_source_alone(api, client, svc, alice, admin, chats):
    candidate = consolidate(api(svc), A, ALFAMA)["candidates"][0]
    review(client, admin, "approve_candidates", candidate["id"])
    staff_global = api(admin).post(
        "/api/memory/items",
        {"content": "Backups run at 03:00.", "kind": "procedure", "scope_type": "global"},
        format="json",
    )
    assert staff_global.status_code == 201, staff_global.content
    # Naming alice's chat is refused: staff do not reach a private chat bound to someone else.
    through_her_chat = {"content": "Rotate keys monthly.", "kind": "procedure", "scope_type": "global", "session_id": A}
    assert api(admin).post("/api/memory/items", through_her_chat, format="json").status_code == 404
    response = api(alice).post(f"{HOME}/forget-all", {"source": "shared", "confirm": "FORGET"}, format="json")
    assert response.json()["forgotten"] == [candidate["memory_id"]]
    # Staff's explicit global write is not chat-derived: not hers to see or forget.
    assert Memory.objects.filter(pk=staff_global.json()["id"], scope_type="global").exists()


def test_rejecting_keeps_the_item_in_its_chat(api, client, svc, alice, bob, admin, chats):
    candidate = consolidate(api(svc), A, ALFAMA)["candidates"][0]
    page = review(client, admin, "reject_candidates", candidate["id"])
    assert page.status_code == 200
    record = MemoryCandidate.objects.get(pk=candidate["id"])
    assert (record.decision, record.reviewed_by) == (CandidateDecision.REJECTED, admin)
    item = Memory.objects.get(pk=candidate["memory_id"])
    assert (item.scope_type, item.scope_id, item.status) == ("chat", A, Status.ACTIVE)
    assert item.pk in search(api(alice), A) and item.pk not in search(api(bob), B)
    # A later approval still shares it.
    review(client, admin, "approve_candidates", candidate["id"])
    item.refresh_from_db()
    assert item.scope_type == "global"


def test_approving_takes_global_rights_and_a_corrected_item_is_shared_in_its_new_words(
    api, client, svc, alice, admin, chats
):
    candidate = consolidate(api(svc), A, ALFAMA)["candidates"][0]
    reviewer = UserFactory(username="reviewer", is_staff=True)
    reviewer.user_permissions.add(Permission.objects.get(codename="change_memorycandidate"))
    review(client, reviewer, "approve_candidates", candidate["id"])
    assert Memory.objects.get(pk=candidate["memory_id"]).scope_type == "chat"  # global takes more
    assert MemoryCandidate.objects.get(pk=candidate["id"]).decision == CandidateDecision.PENDING

    corrected = api(alice).post(
        f"{HOME}/items/{candidate['memory_id']}/supersede",
        {"content": "We decided to sell the flat in Alfama in the autumn."},
        format="json",
    )
    assert corrected.status_code == 201, corrected.content
    review(client, admin, "approve_candidates", candidate["id"])
    new = Memory.objects.get(pk=corrected.json()["id"])
    old = Memory.objects.get(pk=candidate["memory_id"])
    assert (new.scope_type, new.status, new.source_chat_key) == ("global", Status.ACTIVE, A)
    assert (old.scope_type, old.status) == ("global", Status.SUPERSEDED)  # the chain moves whole
    assert [i["id"] for i in home_items(api(alice), "shared")] == [new.pk]


def test_the_deployment_can_opt_into_direct_sharing(api, svc, alice, bob, mallory, chats, settings):
    settings.MEMORY_CHAT_TO_GLOBAL = "direct"
    [candidate] = consolidate(api(svc), A, ALFAMA)["candidates"]
    assert (candidate["decision"], candidate["scope_type"]) == ("created", "global")
    item = Memory.objects.get(pk=candidate["memory_id"])
    assert (item.scope_type, item.source_chat_key) == ("global", A)
    assert item.pk in search(api(bob), B)
    # Still part of alice's home, shared without review.
    [shared] = home_items(api(alice), "shared")
    assert shared["id"] == item.pk
    assert shared["provenance"]["shared"] == {"chat_key": A, "approved_by": None, "approved_at": None}
    assert home_items(api(mallory), "shared") == []
    assert api(alice).delete(f"{HOME}/items/{item.pk}").status_code == 204
    assert derived_rows(item.pk) == ([], 0, 0)


def test_items_written_through_a_chat_session_wait_for_review(api, svc, alice, bob, chats):
    response = api(svc).post(
        "/api/memory/items", {"content": ALFAMA, "kind": "decision", "session_id": f"{A}:cron:x"}, format="json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["scope_type"], body["scope_id"], body["pending_review"]) == ("chat", A, True)
    assert MemoryCandidate.objects.get(pk=body["candidate_id"]).memory_id == body["id"]
    assert body["id"] not in search(api(bob), B)
    again = api(svc).post("/api/memory/items", {"content": ALFAMA, "kind": "decision", "session_id": A}, format="json")
    assert (again.status_code, again.json()["id"], again.json()["pending_review"]) == (200, body["id"], True)
    assert MemoryCandidate.objects.count() == 1
    # Chat kinds are the chat's own: no review.
    pref = api(svc).post(
        "/api/memory/items", {"content": "I like figs", "kind": "preference", "session_id": A}, format="json"
    )
    assert (pref.json()["scope_type"], pref.json()["pending_review"], pref.json()["candidate_id"]) == (
        "chat",
        False,
        None,
    )


def test_staff_writing_global_explicitly_is_direct_and_not_chat_derived(api, admin, alice, chats):
    response = api(admin).post(
        "/api/memory/items", {"content": ALFAMA, "kind": "decision", "scope_type": "global"}, format="json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["scope_type"], body["pending_review"]) == ("global", False)
    assert Memory.objects.get(pk=body["id"]).source_chat_key == ""
    assert not MemoryCandidate.objects.exists()
    assert home_items(api(alice), "shared") == []


@pytest.mark.parametrize("mode", ["review", "direct"])
def test_legacy_untyped_sessions_keep_the_seed_rule(api, svc, settings, mode):
    settings.MEMORY_CHAT_TO_GLOBAL = mode
    body = consolidate(api(svc), "milky:10001", ALFAMA, "I prefer trams.")
    assert {c["decision"] for c in body["candidates"]} == {"created"}
    assert set(Memory.objects.values_list("scope_type", "source_chat_key")) == {("global", "")}
    item = api(svc).post(
        "/api/memory/items",
        {"content": "Restart nightly", "kind": "procedure", "session_id": "milky:10001"},
        format="json",
    )
    assert (item.json()["scope_type"], item.json()["pending_review"]) == ("global", False)


def test_dreaming_one_chat_never_touches_another_scope(api, svc, alice, bob, chats):
    bobs = consolidate(api(svc), B, "I prefer tea.")["candidates"][0]["memory_id"]
    conversation = ConversationFactory(owner=alice, session_key=A)
    for text in (ALFAMA, "I prefer window seats."):
        MessageFactory(conversation=conversation, role="user", content=text)
    before = sorted(Memory.objects.exclude(scope_id=A).values_list("id", "scope_type", "scope_id", "status"))

    response = api(svc).post("/api/memory/dream", {"session_id": A}, format="json")
    assert response.status_code == 202, response.content
    jobs.jobs_run_pending(worker_id="w")
    done = api(svc).get(response.json()["status_url"]).json()
    assert done["status"] == "done", done
    decisions = {c["kind"]: (c["decision"], c["scope_type"]) for c in done["result"]["candidates"]}
    assert decisions == {"decision": ("pending", "global"), "preference": ("created", "chat")}
    assert set(Memory.objects.filter(scope_id=A).values_list("kind", "status")) == {
        ("decision", Status.ACTIVE),
        ("preference", Status.ACTIVE),
    }
    assert sorted(Memory.objects.exclude(scope_id=A).values_list("id", "scope_type", "scope_id", "status")) == before
    assert not Memory.objects.filter(scope_type="global").exists()
    assert bobs not in search(api(svc), A, "tea")

    # A second pass sees the pending item as its own and proposes nothing new.
    report = dream_session(actor=system_actor(), session_id=A)
    assert {c.decision for c in report.candidates} == {CandidateDecision.DUPLICATE}
    assert report.archived == []
    assert Memory.objects.filter(scope_id=A).count() == 2


def test_the_home_page_shows_what_was_shared_in_english_and_chinese(api, client, svc, alice, admin, chats):
    candidate = consolidate(api(svc), A, ALFAMA)["candidates"][0]
    client.force_login(admin)
    page = client.get(reverse("admin:memory_app_memorycandidate_change", args=[candidate["id"]])).content.decode()
    assert "Approve: share with everyone" in page and "Reject" in page
    review(client, admin, "approve_candidates", candidate["id"])

    client.force_login(alice)
    home = client.get(reverse("web:home"), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Shared from your chats" in home and "Alfama" in home
    item_url = reverse("web:memory_home_item", args=[candidate["memory_id"]])
    item = client.get(item_url, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "approved by admin" in item and reverse("web:memory_home_item_forget", args=[candidate["memory_id"]]) in item
    assert reverse("web:memory_home_item_correct", args=[candidate["memory_id"]]) not in item
    correct = client.get(reverse("web:memory_home_item_correct", args=[candidate["memory_id"]]))
    assert correct.status_code == 403
    chinese = client.get(reverse("web:home"), HTTP_ACCEPT_LANGUAGE="zh-Hans").content.decode()
    assert "从你的聊天中共享" in chinese
    assert "批准了将它从你的聊天" in client.get(item_url, HTTP_ACCEPT_LANGUAGE="zh-Hans").content.decode()


def test_the_migration_records_the_chat_of_global_items_consolidation_wrote_before(api, alice, chats):
    backfill = importlib.import_module("memory_app.migrations.0017_chat_to_global_consent").record_source_chats
    consolidated = GlobalMemoryFactory(origin="consolidation", evidence={"source_session_id": f"{A}:cron:x"})
    legacy = GlobalMemoryFactory(origin="consolidation", evidence={"source_session_id": "milky:10001"})
    staff = GlobalMemoryFactory(origin="api", evidence={"source_session_id": A})
    forged = GlobalMemoryFactory(origin="consolidation", evidence={"source_session_id": ["not", "a", "key"]})
    backfill(apps, None)
    keys = dict(Memory.objects.values_list("id", "source_chat_key"))
    assert keys == {consolidated.pk: A, legacy.pk: "", staff.pk: "", forged.pk: ""}
    assert [i["id"] for i in home_items(api(alice), "shared")] == [consolidated.pk]


def test_the_shared_source_reads_in_a_fixed_number_of_queries(api, client, svc, alice, admin, chats):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def share(n):
        client_svc = api(svc)
        ids = []
        for i in range(n):
            body = {"content": f"Decision {n}-{i}: room {i} is painted blue.", "kind": "decision", "session_id": A}
            ids.append(client_svc.post("/api/memory/items", body, format="json").json()["candidate_id"])
        review(client, admin, "approve_candidates", *ids)

    share(1)
    alice_api = api(alice)
    home_items(alice_api, "shared")  # the token's first use records it; later requests do not
    with CaptureQueriesContext(connection) as few:
        assert len(home_items(alice_api, "shared")) == 1
        alice_api.get(HOME)
    share(10)
    with CaptureQueriesContext(connection) as many:
        assert len(home_items(alice_api, "shared")) == 11
        alice_api.get(HOME)
    assert len(many) == len(few)
