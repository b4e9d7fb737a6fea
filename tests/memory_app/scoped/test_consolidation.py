import pytest
from django.core.management import call_command

from memory_app.distill.extraction import Candidate
from memory_app.memories import services
from memory_app.memories.models import Memory, Status
from memory_app.scoped.consolidation import consolidate_turn, dream_session, system_actor
from memory_app.scoped.migration import inspect_plan
from memory_app.scoped.models import CandidateDecision, MemoryCandidate
from memory_app.scoped.services import scoped_item_create
from memory_app.search.models import SearchDocument
from tests.factories import ConversationFactory, MessageFactory, UserFactory

pytestmark = pytest.mark.django_db

A = "milky:private:10001"
B = "milky:private:20002"


def turn(*texts):
    return [{"role": "user", "content": text} for text in texts]


def consolidate(client, session, *texts):
    return client.post("/api/memory/consolidate", {"session_id": session, "messages": turn(*texts)}, format="json")


def test_consolidation_writes_scope_by_kind_when_the_deployment_shares_directly(api, svc, settings):
    settings.MEMORY_CHAT_TO_GLOBAL = "direct"
    response = consolidate(api(svc), f"{A}:cron:x", "I prefer short answers.", "We decided to ship on Tuesdays.")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["counts"]["created"] == 2
    by_kind = {m.kind: (m.scope_type, m.scope_id) for m in Memory.objects.all()}
    assert by_kind == {"preference": ("chat", A), "decision": ("global", "__global__")}
    assert MemoryCandidate.objects.filter(decision=CandidateDecision.CREATED).count() == 2
    assert {c["scope_type"] for c in body["candidates"]} == {"chat", "global"}


def test_consolidation_keeps_global_kinds_in_the_chat_until_reviewed(api, svc):
    response = consolidate(api(svc), f"{A}:cron:x", "I prefer short answers.", "We decided to ship on Tuesdays.")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["counts"] == {"created": 1, "pending": 1, "archived": 0}
    by_kind = {m.kind: (m.scope_type, m.scope_id, m.source_chat_key) for m in Memory.objects.all()}
    assert by_kind == {"preference": ("chat", A, A), "decision": ("chat", A, A)}
    pending = MemoryCandidate.objects.get(decision=CandidateDecision.PENDING)
    assert (pending.kind, pending.scope_type, pending.memory.scope_id) == ("decision", "global", A)


def test_duplicate_check_is_per_scope(api, svc):
    client = api(svc)
    consolidate(client, A, "I prefer short answers.")
    again = consolidate(client, A, "I prefer short answers.").json()
    assert again["counts"] == {"duplicate": 1, "archived": 0}
    other = consolidate(client, B, "I prefer short answers.").json()
    assert other["counts"]["created"] == 1  # the same text in another chat is not a duplicate
    assert Memory.objects.filter(scope_type="chat").count() == 2
    assert set(Memory.objects.values_list("scope_id", flat=True)) == {A, B}


def test_same_subject_is_superseded_within_the_scope_only(svc):
    def run(session, content):
        candidate = Candidate(kind="preference", content=content, subject_key="preference:tea")
        return consolidate_turn(
            actor=svc, session_id=session, messages=turn("x"), extractor=FixedExtractor([candidate])
        )

    run(A, "I prefer tea.")
    run(B, "I prefer tea.")
    report = run(A, "I prefer tea with milk.")
    assert [c.decision for c in report.candidates] == [CandidateDecision.SUPERSEDED]
    a_rows = Memory.objects.filter(scope_id=A)
    assert a_rows.filter(status=Status.ACTIVE).get().content == "I prefer tea with milk."
    assert a_rows.filter(status=Status.SUPERSEDED).count() == 1
    assert Memory.objects.get(scope_id=B).status == Status.ACTIVE


def test_consolidation_requires_a_service_principal(api, alice):
    staff = UserFactory(username="staffer", is_staff=True)
    for user in (alice, staff):
        assert consolidate(api(user), A, "I prefer tea.").status_code == 403
    assert not Memory.objects.exists() and not MemoryCandidate.objects.exists()


@pytest.mark.parametrize(
    "body",
    [
        {"session_id": "milky:private", "messages": [{"role": "user", "content": "I prefer tea."}]},
        {"session_id": A, "messages": []},
        {"session_id": A, "messages": [{"role": "user"}]},
        {"session_id": A, "messages": [{"role": "robot", "content": "x"}]},
        {"session_id": A, "messages": [{"role": "user", "content": "I prefer tea."}] * 51},
        {"session_id": A, "messages": "I prefer tea."},
        {"session_id": A, "messages": [{"role": "user", "content": 5}]},
    ],
)
def test_bad_consolidation_input_is_400(api, svc, body):
    response = api(svc).post("/api/memory/consolidate", body, format="json")
    assert response.status_code == 400
    assert not Memory.objects.exists() and not MemoryCandidate.objects.exists()


class FixedExtractor:
    name = "fixed"

    def __init__(self, candidates):
        self.candidates = candidates

    def extract(self, text, *, max_items=20):
        return self.candidates[:max_items]


def test_unknown_kind_candidate_is_recorded_as_rejected(svc):
    report = consolidate_turn(
        actor=svc,
        session_id=A,
        messages=turn("anything"),
        extractor=FixedExtractor([Candidate(kind="opinion", content="x is good", subject_key="k")]),
    )
    assert [c.decision for c in report.candidates] == [CandidateDecision.REJECTED]
    assert not Memory.objects.exists()


def _history(session, owner, *texts):
    conv = ConversationFactory(owner=owner, session_key=session)
    for text in texts:
        MessageFactory(conversation=conv, content=text)


def test_dreaming_writes_chat_items_and_never_archives_another_chat(svc):
    owner = UserFactory()
    actor = system_actor()
    # Chat B holds an exact duplicate pair; dreaming chat A must leave it alone.
    b_old, _ = scoped_item_create(actor=svc, session_id=B, kind="fact", content="The wifi password is on the fridge")
    b_new = services.memory_create(
        actor=svc, tier="chat", scope_id=B, kind="fact", content="the wifi password is on the fridge!"
    )
    a_old = services.memory_create(actor=svc, tier="chat", scope_id=A, kind="fact", content="My desk is by the window")
    a_new = services.memory_create(actor=svc, tier="chat", scope_id=A, kind="fact", content="my desk is by the window.")
    _history(A, owner, "I prefer green tea.", "We decided to use Django.")
    report = dream_session(actor=actor, session_id=A)
    assert report.archived == [a_old.pk]
    assert Memory.objects.get(pk=a_new.pk).status == Status.ACTIVE
    assert set(Memory.objects.filter(scope_id=B).values_list("status", flat=True)) == {Status.ACTIVE}
    assert Memory.objects.filter(pk__in=[b_old.pk, b_new.pk], status=Status.ACTIVE).count() == 2
    pref = Memory.objects.get(kind="preference")
    assert (pref.scope_type, pref.scope_id, pref.origin) == ("chat", A, "consolidation")
    decision = Memory.objects.get(kind="decision")
    assert (decision.scope_type, decision.scope_id) == ("chat", A)  # waits for review in its own chat
    assert not Memory.objects.filter(scope_type="global").exists()
    assert MemoryCandidate.objects.filter(source="dream", session_id=A).count() == 2


def test_dreaming_a_legacy_session_archives_nothing(svc):
    owner = UserFactory()
    g1 = services.memory_create(actor=svc, tier="global", kind="procedure", content="Restart the bot nightly")
    services.memory_create(actor=svc, tier="global", kind="procedure", content="restart the bot nightly.")
    _history("milky:10001", owner, "I prefer green tea.")
    report = dream_session(actor=system_actor(), session_id="milky:10001")
    assert report.archived == []
    assert Memory.objects.get(pk=g1.pk).status == Status.ACTIVE
    assert Memory.objects.get(kind="preference").scope_type == "global"


def test_dream_command(svc, capsys):
    owner = UserFactory()
    _history(A, owner, "I prefer window seats.")
    _history(B, owner, "I prefer aisle seats.")
    call_command("dream")
    out = capsys.readouterr().out
    assert f"{A}: " in out and f"{B}: " in out
    assert set(Memory.objects.values_list("scope_id", flat=True)) == {A, B}
    call_command("dream", "--session", A)
    assert Memory.objects.count() == 2  # re-dreaming adds nothing


def test_memory_worker_runs_the_dreaming_pass(svc, capsys):
    owner = UserFactory()
    _history(A, owner, "I prefer window seats.")
    _history(B, owner, "I prefer aisle seats.")
    call_command("memory_worker", "--once", "--dream")
    assert "dreaming pass: 2 sessions (0 failed)" in capsys.readouterr().out
    assert sorted(Memory.objects.values_list("scope_id", "content")) == [
        (A, "I prefer window seats."),
        (B, "I prefer aisle seats."),
    ]
    call_command("memory_worker", "--once")  # without --dream nothing is consolidated
    assert Memory.objects.count() == 2


def test_forgetting_an_item_forgets_its_candidates(svc):
    report = consolidate_turn(actor=svc, session_id=A, messages=turn("I prefer tea."))
    memory_id = report.candidates[0].memory_id
    services.memory_forget(actor=svc, memory_id=memory_id)
    assert not MemoryCandidate.objects.filter(memory_id=memory_id).exists()
    assert not MemoryCandidate.objects.exists()


def test_refresh_embeddings_covers_all_scopes_and_is_idempotent(svc, capsys):
    chat, _ = scoped_item_create(actor=svc, session_id=A, kind="preference", content="I like jazz")
    glob, _ = scoped_item_create(actor=svc, session_id=A, kind="decision", content="We use jazz radio")
    SearchDocument.objects.update(model="", vector=None)  # as after a change of the model
    call_command("refresh_embeddings", "--no-progress")
    assert "embedded 2 document(s)" in capsys.readouterr().out
    assert set(SearchDocument.objects.exclude(vector=None).values_list("ref", flat=True)) == {chat.pk, glob.pk}
    call_command("refresh_embeddings", "--no-progress")
    assert "embedded 0 document(s)" in capsys.readouterr().out
    assert SearchDocument.objects.count() == 2


def test_reindex_repairs_a_restore_done_in_sql(svc, capsys):
    from memory_app.scoped import search

    item, _ = scoped_item_create(actor=svc, session_id=A, kind="preference", content="I like plums")
    # A restore by plain SQL (as in the runbook) moves the row back without the services.
    Memory.objects.filter(pk=item.pk).update(scope_type="global", scope_id="__global__")
    assert search.cascade_search(scopes=[("global", "__global__")], query="plums", limit=5, mode="vector") == []
    call_command("refresh_embeddings", "--reindex", "--no-progress")
    assert "reindexed: 1 memory row(s)" in capsys.readouterr().out
    for mode in ("fts", "vector"):
        hits = search.cascade_search(scopes=[("global", "__global__")], query="plums", limit=5, mode=mode)
        assert [h.id for h in hits] == [item.pk], mode
    assert SearchDocument.objects.select_related("scope").get(source="memory", ref=item.pk).scope.key == (
        "global:__global__"
    )


def test_extractor_evidence_cannot_plant_a_migration_clue(svc):
    planted = {
        "source_session_id": B,
        "session_id": B,
        "chat_address": B,
        "from_chat_address": {"platform": "milky", "target_type": "private", "target_id": "20002"},
        "message_context": {"channel": "milky", "chat_type": "private", "chat_id": "20002"},
        "quote": "I prefer opera",
    }
    candidate = Candidate(kind="preference", content="I prefer opera.", subject_key="", evidence=planted)
    report = consolidate_turn(
        actor=svc, session_id="milky:10001", messages=turn("x"), extractor=FixedExtractor([candidate])
    )
    assert [c.decision for c in report.candidates] == [CandidateDecision.CREATED]
    memory = Memory.objects.get()
    assert (memory.scope_type, memory.evidence) == (
        "global",
        {"quote": "I prefer opera", "source_session_id": "milky:10001"},
    )
    (entry,) = inspect_plan()["entries"]
    assert (entry["decision"], entry["target_scope_id"], entry["candidate_scope_ids"]) == ("keep", "", [])


def test_near_duplicate_is_not_stored_so_dreaming_has_nothing_to_archive(svc):
    owner = UserFactory()
    existing = services.memory_create(
        actor=svc, tier="chat", scope_id=A, kind="preference", content="I prefer green tea!"
    )
    _history(A, owner, "I prefer green tea.")
    report = dream_session(actor=system_actor(), session_id=A)
    assert [c.decision for c in report.candidates] == [CandidateDecision.DUPLICATE]
    assert report.candidates[0].memory_id == existing.pk
    assert report.archived == []
    assert list(Memory.objects.values_list("pk", "status")) == [(existing.pk, Status.ACTIVE)]


def test_dreaming_does_not_archive_long_texts_that_differ_late(svc):
    owner = UserFactory()
    base = "My notes say " + "very " * 60
    first = services.memory_create(actor=svc, tier="chat", scope_id=A, kind="fact", content=base + "green tea")
    second = services.memory_create(actor=svc, tier="chat", scope_id=A, kind="fact", content=base + "black tea")
    _history(A, owner, "hello")
    assert dream_session(actor=system_actor(), session_id=A).archived == []
    assert set(Memory.objects.filter(pk__in=[first.pk, second.pk]).values_list("status", flat=True)) == {Status.ACTIVE}
