"""The memory home over the API: the overview, one search, items with their provenance, and
correcting and forgetting chat items bound to the caller (one, a selection, everything)."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone, translation

from identity_app.models import ChatBinding
from memory_app.automemory.models import AutoMemoryLogEntry
from memory_app.home.provenance import provenance_for
from memory_app.memories import services as memory_services
from memory_app.memories.models import Memory, Origin, Status
from memory_app.notes import services as notes_services
from memory_app.notes.models import WorkspaceChange
from memory_app.scoped.models import MemoryCandidate, ScopeMigrationEntry, ScopeMigrationPlan
from tests.factories import ChatBindingFactory, ChatMemoryFactory, MembershipFactory, ProjectFactory, UserMemoryFactory
from tests.memory_app.home.conftest import (
    ALICE_CHAT,
    BOB_CHAT,
    assert_forgotten,
    assert_scope_empty,
    index_rows,
    memory_rows,
)

pytestmark = pytest.mark.django_db

HOME = "/api/users/me/memory-home"
ITEMS = HOME + "/items"


def by_source(body) -> dict:
    return {s["source"]: s for s in body["sources"]}


# --- the overview ----------------------------------------------------------------------------
def test_overview_groups_everything_about_me_with_counts_sentences_and_switches(api, home):
    body = api(home.alice).get(HOME).json()
    sources = by_source(body)
    project_key = f"project:{home.project.pk}"
    assert list(sources) == ["user", "notes", project_key, f"chat:{ALICE_CHAT}", "shared", "auto"]
    assert sources["shared"]["count"] == 0 and sources["shared"]["latest"] == []
    assert sources["user"]["count"] == 1 and sources["user"]["latest"][0]["content"] == "I like green tea"
    assert sources["notes"]["count"] == 2 and sources["notes"]["notes_file"]["exists"] is True
    assert sources[project_key]["count"] == 3
    assert sources[project_key]["project"] == {"id": home.project.pk, "name": "Apollo", "role": "owner", "members": 3}
    assert sources[f"chat:{ALICE_CHAT}"]["count"] == 2
    assert sources["auto"]["count"] == 1 and sources["auto"]["latest"][0]["id"] == home.auto.pk
    assert body["total"] == 1 + 2 + 3 + 2
    switches = {s["name"]: s["on"] for s in body["switches"]}
    assert switches == {"enable_memory": True, "auto_memory_use": False, "auto_memory_generate": False}
    assert (
        "it is off now" in sources["user"]["sentence"]
        and "Helper agents it starts never see them" in sources["user"]["sentence"]
    )
    assert "it is on now" in sources["notes"]["sentence"]
    assert "3 people" in sources[project_key]["sentence"]
    assert sources["notes"]["switches"] == ["enable_memory"] and sources["auto"]["switches"] == ["auto_memory_generate"]


def test_overview_sentences_follow_the_switches(api, home):
    client = api(home.alice)
    assert client.put("/api/users/me/settings", {"enable_memory": False}, format="json").status_code == 200
    assert client.put("/api/users/me/auto-memory-settings", {"use": True}, format="json").status_code == 200
    sources = by_source(client.get(HOME).json())
    assert "it is off now" in sources["notes"]["sentence"]
    assert "it is on now" in sources["user"]["sentence"]


def test_overview_of_another_user_holds_nothing_of_alices(api, home):
    for user in (home.bob, home.vera, home.svc):
        text = api(user).get(HOME).content.decode()
        for secret in ("green tea", "passport", "window seats", "trains over planes", ALICE_CHAT):
            assert secret not in text, (user, secret)
    sources = by_source(api(home.bob).get(HOME).json())
    assert f"chat:{BOB_CHAT}" in sources and f"chat:{ALICE_CHAT}" not in sources
    assert sources[f"project:{home.project.pk}"]["count"] == 3  # bob is a member of Apollo
    assert sources["auto"]["count"] == 0  # extracted from alice's runs, not his


def test_a_service_principal_sees_no_chat_it_is_not_bound_to(api, home):
    sources = by_source(api(home.svc).get(HOME).json())
    assert not [key for key in sources if key.startswith("chat:")]


def test_overview_queries_do_not_grow_with_projects_and_chats(api, home):
    client = api(home.alice)
    client.get(HOME)  # the token's first use records it; later requests do not
    with CaptureQueriesContext(connection) as few:
        assert client.get(HOME).status_code == 200
    for n in range(8):
        project = ProjectFactory(name=f"P{n}")
        MembershipFactory(project=project, user=home.alice, role="owner")
        ChatBindingFactory(user=home.alice, chat_key=f"milky:private:3000{n}")
        ChatMemoryFactory(scope_id=f"milky:private:3000{n}")
    with CaptureQueriesContext(connection) as many:
        assert client.get(HOME).status_code == 200
    assert len(many) == len(few)


# --- one search ----------------------------------------------------------------------------
def test_one_search_finds_memories_of_every_source_and_notes_lines(api, home):
    body = api(home.alice).get(HOME + "/search", {"q": "passport tea billing reviews walnuts"}).json()
    found = {hit["id"]: hit["source"] for hit in body["results"]}
    assert found[home.chat_item.pk] == f"chat:{ALICE_CHAT}"
    assert found[home.mine.pk] == "user"
    assert found[home.auto.pk] == f"project:{home.project.pk}"
    assert found[home.bobs_project_memory.pk] == f"project:{home.project.pk}"
    assert home.bobs_memory.pk not in found and home.bobs_chat_item.pk not in found
    assert [(n["line"], n["text"]) for n in body["notes"]] == [(2, "- Allergic to walnuts")]
    assert body["notes"][0]["score"] > 0
    assert all(hit["provenance"]["sentence"] for hit in body["results"])


def test_search_never_reaches_other_peoples_memories(api, home):
    for user, words in ((home.bob, "passport green tea walnuts"), (home.vera, "passport"), (home.svc, "passport")):
        body = api(user).get(HOME + "/search", {"q": words}).json()
        ids = {hit["id"] for hit in body["results"]}
        assert not ids & {home.chat_item.pk, home.mine.pk, home.consolidated.pk}, user
        assert body["notes"] == []
    bob = api(home.bob).get(HOME + "/search", {"q": "Lyon stamps"}).json()
    assert {hit["id"] for hit in bob["results"]} == {home.bobs_chat_item.pk, home.bobs_memory.pk}


@pytest.mark.parametrize(
    "params", [{}, {"q": ""}, {"q": "x" * 201}, {"q": "tea", "limit": "0"}, {"q": "tea", "limit": "a"}]
)
def test_search_input_is_checked(api, home, params):
    response = api(home.alice).get(HOME + "/search", params)
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid"


# --- items with their provenance ---------------------------------------------------------------
def items(client, source, **params):
    response = client.get(ITEMS, {"source": source, **params})
    assert response.status_code == 200, response.content
    return {item["id"]: item for item in response.json()["results"]}


def test_provenance_names_who_wrote_each_item_and_links_its_origin(api, home):
    client = api(home.alice)
    project = items(client, f"project:{home.project.pk}")
    auto = project[home.auto.pk]["provenance"]
    assert auto["sentence"].startswith(f"Auto-memory extracted it from your agent task {home.run.pk}")
    assert auto["run_id"] == home.run.pk
    assert auto["thread"]["id"] == home.run.conversation_id
    assert auto["auto_memory_log_entry"]["id"] == home.log_entry.pk
    assert project[home.auto.pk]["origin_label"] == "extracted by auto-memory"
    mine = project[home.project_memory.pk]["provenance"]
    assert (mine["author"], mine["sentence"]) == ("you", "You saved it through the API.")
    bobs = project[home.bobs_project_memory.pk]["provenance"]
    assert (bobs["author"], bobs["author_name"]) == ("member", "bob")
    assert bobs["sentence"] == "Project member “bob” saved it through the API."
    chat = items(client, f"chat:{ALICE_CHAT}")
    consolidated = chat[home.consolidated.pk]["provenance"]
    assert consolidated["consolidation"]["decision"] == "created"
    assert consolidated["sentence"] == f"The agent service “svc” learned it from the chat {ALICE_CHAT}."
    assert chat[home.chat_item.pk]["provenance"]["author"] == "service"
    assert items(client, "user")[home.mine.pk]["provenance"]["sentence"] == "You wrote it by hand."


# Words of the service's insides that the sentences shown to a person never use (issue: plain words).
JARGON = re.compile(r"\b(?:runs?|sub-?agents?|runtime|consolidat\w*|dream\w*|scope|gate|lease|coordinator)\b", re.I)


def test_provenance_sentences_use_plain_words_in_both_languages(api, home, svc):
    """Every way an item comes to be, told without the service's vocabulary (run, runtime,
    consolidation, dreaming, scope migration); in Chinese, without the English it replaced."""
    MemoryCandidate.objects.filter(memory=home.consolidated).update(source="dream")
    dreamed = home.consolidated
    untracked = memory_services.memory_create(
        actor=home.alice, tier="user", kind="fact", content="I ride a bike", origin=Origin.AUTO
    )
    tool = memory_services.memory_create(actor=home.alice, tier="user", kind="fact", content="Tea", origin=Origin.TOOL)
    moved = ChatMemoryFactory(scope_id=ALICE_CHAT, content="Moved here", origin=Origin.MIGRATION, created_by=svc)
    plan = ScopeMigrationPlan.objects.create(name="p", applied_at=timezone.now())
    ScopeMigrationEntry.objects.create(
        plan=plan, item_id=moved.pk, kind="fact", decision="migrate", fingerprint="f", result="applied"
    )
    memories = [home.auto, dreamed, untracked, tool, moved, home.chat_item, home.mine]
    english = {pk: p.sentence for pk, p in provenance_for(user=home.alice, memories=memories).items()}
    english[home.auto.pk + " (bob)"] = provenance_for(user=home.bob, memories=[home.auto])[home.auto.pk].sentence
    assert english[dreamed.pk] == f"The agent service “svc” learned it when looking back over the chat {ALICE_CHAT}."
    assert english[untracked.pk] == "Auto-memory extracted it from one of your agent tasks."
    assert english[moved.pk].startswith("An operator moved it here. ")
    assert "An operator moved it into this chat from the memories shared with everyone." in english[moved.pk]
    assert {pk: JARGON.findall(sentence) for pk, sentence in english.items() if JARGON.search(sentence)} == {}
    with translation.override("zh-hans"):
        chinese = [p.sentence for p in provenance_for(user=home.alice, memories=memories).values()]
    assert all(re.search(r"[\u4e00-\u9fff]", sentence) for sentence in chinese)
    assert not [sentence for sentence in chinese if re.search(r"\b(?:run|runtime|agent task|operator)\b", sentence)]


def test_provenance_of_bobs_view_of_alices_auto_memory_has_no_links_into_her_runs(api, home):
    item = items(api(home.bob), f"project:{home.project.pk}")[home.auto.pk]["provenance"]
    assert item["sentence"] == "Auto-memory extracted it from an agent task of project member “alice”."
    assert (item["run_id"], item["thread"], item["auto_memory_log_entry"]) == (None, None, None)


def test_correction_chain_is_part_of_the_provenance(api, home):
    client = api(home.alice)
    response = client.post(f"{ITEMS}/{home.mine.pk}/supersede", {"content": "I like white tea"}, format="json")
    assert response.status_code == 201
    new = response.json()
    assert new["provenance"]["replaces"] == home.mine.pk
    assert new["provenance"]["sentence"] == "You saved it through the API. It corrects an earlier version."
    detail = client.get(f"{ITEMS}/{home.mine.pk}").json()
    assert detail["status"] == Status.SUPERSEDED and detail["provenance"]["replaced_by"] == new["id"]
    assert [m["id"] for m in detail["chain"]] == [home.mine.pk, new["id"]]


def test_an_item_names_its_source_as_the_overview_does(api, home):
    """One view-model of a home item (``home_items``) for the API and the pages: a chat the user
    named is called by that name in its items, their search hits and their detail, as in the
    overview."""
    ChatBinding.objects.filter(chat_key=ALICE_CHAT).update(display_name="Travel planning")
    client = api(home.alice)
    title = by_source(client.get(HOME).json())[f"chat:{ALICE_CHAT}"]["title"]
    assert title == "Chat “Travel planning”"
    listed = items(client, f"chat:{ALICE_CHAT}")
    assert len(listed) == 2 and {item["source_title"] for item in listed.values()} == {title}
    assert client.get(f"{ITEMS}/{home.chat_item.pk}").json()["source_title"] == title
    found = client.get(HOME + "/search", {"q": "passport"}).json()["results"]
    assert [(hit["id"], hit["source_title"]) for hit in found] == [(home.chat_item.pk, title)]
    bobs = items(api(home.bob), f"chat:{BOB_CHAT}")  # bob's chat has no name: its key
    assert [item["source_title"] for item in bobs.values()] == [f"Chat “{BOB_CHAT}”"]


def test_item_list_queries_do_not_grow_with_items(api, home):
    client = api(home.alice)
    items(client, f"chat:{ALICE_CHAT}")  # the token's first use records it; later requests do not
    with CaptureQueriesContext(connection) as few:
        items(client, f"chat:{ALICE_CHAT}")
    for n in range(20):
        ChatMemoryFactory(scope_id=ALICE_CHAT, content=f"item {n}", created_by=home.svc)
    with CaptureQueriesContext(connection) as many:
        assert len(items(client, f"chat:{ALICE_CHAT}")) == 22
    assert len(many) == len(few)


@pytest.mark.parametrize(
    "source",
    [
        "",
        "chat",
        "chat:",
        "chat:milky:10001",
        "chat:milky:private:10001:cron:x",
        "project:",
        "project:../x",
        "global",
        "x" * 300,
    ],
)
def test_unknown_sources_are_400(api, home, source):
    response = api(home.alice).get(ITEMS, {"source": source})
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_source"


def test_sources_of_others_are_404(api, home):
    client = api(home.alice)
    assert client.get(ITEMS, {"source": f"chat:{BOB_CHAT}"}).status_code == 404
    assert client.get(ITEMS, {"source": "chat:milky:private:55555"}).status_code == 404
    other = ProjectFactory(name="Zeus")
    assert client.get(ITEMS, {"source": f"project:{other.pk}"}).status_code == 404
    assert client.get(ITEMS, {"source": "project:prj_forged"}).status_code == 404


# --- correct and forget a chat item bound to me ----------------------------------------------
def test_the_bound_user_corrects_and_forgets_a_chat_item(api, home):
    client = api(home.alice)
    response = client.post(
        f"{ITEMS}/{home.chat_item.pk}/supersede", {"content": "Renew the passport in July."}, format="json"
    )
    assert response.status_code == 201, response.content
    new_id = response.json()["id"]
    assert response.json()["source"] == f"chat:{ALICE_CHAT}"
    assert client.delete(f"{ITEMS}/{new_id}").status_code == 204
    assert_forgotten([new_id, home.chat_item.pk])


@pytest.mark.parametrize("who", ["bob", "vera", "svc", "mallory"])
def test_nobody_else_corrects_or_forgets_alices_chat_item(api, home, mallory, who):
    client = api(getattr(home, who, None) or mallory)
    before = (memory_rows(), index_rows())
    assert client.delete(f"{ITEMS}/{home.chat_item.pk}").status_code == 404
    response = client.post(f"{ITEMS}/{home.chat_item.pk}/supersede", {"content": "hijacked"}, format="json")
    assert response.status_code == 404
    assert client.post(HOME + "/forget", {"ids": [home.chat_item.pk]}, format="json").status_code == 404
    assert (memory_rows(), index_rows()) == before


def test_a_viewer_reads_but_does_not_change_project_items(api, home):
    client = api(home.vera)
    before = memory_rows()
    assert client.get(f"{ITEMS}/{home.project_memory.pk}").json()["can_change"] is False
    assert client.delete(f"{ITEMS}/{home.project_memory.pk}").status_code == 403
    assert (
        client.post(f"{ITEMS}/{home.project_memory.pk}/supersede", {"content": "x"}, format="json").status_code == 403
    )
    assert client.post(HOME + "/forget", {"ids": [home.project_memory.pk]}, format="json").status_code == 403
    assert memory_rows() == before


def test_forged_ids_are_404(api, home):
    client = api(home.alice)
    before = memory_rows()
    assert client.get(f"{ITEMS}/mem_forged").status_code == 404
    assert client.delete(f"{ITEMS}/mem_forged").status_code == 404
    assert client.post(f"{ITEMS}/mem_forged/supersede", {"content": "x"}, format="json").status_code == 404
    assert memory_rows() == before


# --- bulk forget -----------------------------------------------------------------------------
def test_bulk_forget_removes_the_selection_with_derived_rows(api, home):
    client = api(home.alice)
    selection = [home.mine.pk, home.chat_item.pk, home.consolidated.pk]
    candidates = list(MemoryCandidate.objects.filter(memory_id=home.consolidated.pk).values_list("pk", flat=True))
    assert candidates
    response = client.post(HOME + "/forget", {"ids": selection}, format="json")
    assert response.status_code == 200 and sorted(response.json()["forgotten"]) == sorted(selection)
    assert_forgotten(selection)
    assert not MemoryCandidate.objects.filter(pk__in=candidates).exists()
    assert Memory.objects.filter(pk__in=[home.project_memory.pk, home.bobs_chat_item.pk]).count() == 2


@pytest.mark.parametrize(
    "body",
    [
        {"ids": []},
        {"ids": "mem_x"},
        {"ids": [1, 2]},
        {"ids": [f"mem_{n}" for n in range(501)]},
        {"ids": ["mem_x"], "extra": True},
        {},
    ],
)
def test_malformed_bulk_forget_changes_nothing(api, home, body):
    before = memory_rows()
    response = api(home.alice).post(HOME + "/forget", body, format="json")
    assert response.status_code == 400
    assert memory_rows() == before


def test_bulk_forget_with_one_foreign_id_forgets_nothing(api, home):
    before = (memory_rows(), index_rows())
    for foreign in (home.bobs_memory.pk, home.bobs_chat_item.pk, "mem_forged"):
        response = api(home.alice).post(HOME + "/forget", {"ids": [home.mine.pk, foreign]}, format="json")
        assert response.status_code == 404
    assert (memory_rows(), index_rows()) == before


# --- forget everything -----------------------------------------------------------------------
def forget_all(client, source, confirm="FORGET"):
    return client.post(HOME + "/forget-all", {"source": source, "confirm": confirm}, format="json")


@pytest.mark.parametrize("confirm", ["", "forget", "FORGET ", "Forget", "yes"])
def test_forget_everything_needs_the_typed_confirmation(api, home, workspace_root, confirm):
    before = (memory_rows(), index_rows())
    response = forget_all(api(home.alice), "all", confirm)
    assert response.status_code == 400 and response.json()["error"]["code"] == "confirmation_required"
    assert (memory_rows(), index_rows()) == before
    assert (workspace_root / str(home.alice.pk) / "agents" / "MEMORY.md").exists()


def test_forget_a_chat_takes_its_items_candidates_and_index(api, home):
    rejected = MemoryCandidate.objects.create(
        session_id=f"{ALICE_CHAT}:cron:daily",
        source="dream",
        extractor="deterministic",
        scope_type="global",
        scope_id="__global__",
        kind="fact",
        content="text from alice's chat that went nowhere",
        decision="rejected",
    )
    ids = list(Memory.objects.filter(scope_id=ALICE_CHAT).values_list("pk", flat=True))
    response = forget_all(api(home.alice), f"chat:{ALICE_CHAT}")
    assert response.status_code == 200, response.content
    assert sorted(response.json()["forgotten"]) == sorted(ids) and response.json()["candidates"] >= 1
    assert_forgotten(ids)
    assert_scope_empty(f"chat:{ALICE_CHAT}")
    assert not MemoryCandidate.objects.filter(scope_id=ALICE_CHAT).exists()
    assert not MemoryCandidate.objects.filter(pk=rejected.pk).exists()
    assert Memory.objects.filter(pk=home.bobs_chat_item.pk).exists()
    assert ChatBinding.objects.filter(chat_key=ALICE_CHAT).exists()  # the chat stays bound


def test_forget_a_chat_not_bound_to_me_is_404(api, home):
    before = (memory_rows(), index_rows(), MemoryCandidate.objects.count())
    for source in (f"chat:{BOB_CHAT}", "chat:milky:private:55555"):
        assert forget_all(api(home.alice), source).status_code == 404
    assert forget_all(api(home.svc), f"chat:{ALICE_CHAT}").status_code == 404
    assert (memory_rows(), index_rows(), MemoryCandidate.objects.count()) == before


def test_forget_what_i_wrote_in_a_project_keeps_what_others_wrote(api, home):
    response = forget_all(api(home.alice), f"project:{home.project.pk}")
    assert response.status_code == 200
    assert sorted(response.json()["forgotten"]) == sorted([home.project_memory.pk, home.auto.pk])
    assert_forgotten([home.project_memory.pk, home.auto.pk])
    assert Memory.objects.filter(pk=home.bobs_project_memory.pk).exists()


def test_forget_a_project_as_viewer_or_outsider_changes_nothing(api, home, mallory):
    before = memory_rows()
    assert forget_all(api(home.vera), f"project:{home.project.pk}").status_code == 403
    assert forget_all(api(mallory), f"project:{home.project.pk}").status_code == 404
    assert forget_all(api(home.alice), "project:prj_forged").status_code == 404
    assert memory_rows() == before


def test_forget_everything_takes_my_sources_and_leaves_the_teams(api, home, workspace_root):
    client = api(home.alice)
    mine = (
        list(Memory.objects.filter(scope_type="user", owner=home.alice).values_list("pk", flat=True))
        + list(Memory.objects.filter(scope_id=ALICE_CHAT).values_list("pk", flat=True))
        + [home.auto.pk]
    )
    assert WorkspaceChange.objects.filter(user=home.alice).exists()
    response = forget_all(client, "all")
    assert response.status_code == 200, response.content
    body = response.json()
    assert sorted(body["forgotten"]) == sorted(mine) and body["notes_deleted"] is True and body["remaining"] == 0
    assert_forgotten(mine)
    assert_scope_empty(f"user:{home.alice.pk}")
    assert_scope_empty(f"chat:{ALICE_CHAT}")
    assert not (workspace_root / str(home.alice.pk) / "agents" / "MEMORY.md").exists()
    assert not WorkspaceChange.objects.filter(user=home.alice, name="MEMORY.md").exists()
    # The log keeps that auto-memory ran, not the forgotten text.
    assert AutoMemoryLogEntry.objects.get(pk=home.log_entry.pk).content == ""
    # What is not only mine stays: the project memories written by hand, and everyone else's.
    assert (
        Memory.objects.filter(
            pk__in=[home.project_memory.pk, home.bobs_project_memory.pk, home.bobs_memory.pk, home.bobs_chat_item.pk]
        ).count()
        == 4
    )
    overview = by_source(client.get(HOME).json())
    assert overview["user"]["count"] == 0 and overview["notes"]["count"] == 0
    assert overview[f"chat:{ALICE_CHAT}"]["count"] == 0 and overview["auto"]["count"] == 0


def test_forget_everything_leaves_auto_memories_of_projects_i_may_no_longer_write(api, home):
    from identity_app.models import Membership

    Membership.objects.filter(project=home.project, user=home.alice).update(role="viewer")
    response = forget_all(api(home.alice), "auto")
    assert response.status_code == 200
    assert response.json()["forgotten"] == [] and response.json()["kept_read_only"] == 1
    assert Memory.objects.filter(pk=home.auto.pk).exists()


def test_forget_everything_of_another_user_touches_nothing_of_alices(api, home, workspace_root):
    before = sorted(Memory.objects.exclude(owner=home.bob).exclude(scope_id=BOB_CHAT).values_list("pk", "status"))
    assert forget_all(api(home.bob), "all").status_code == 200
    assert sorted(Memory.objects.values_list("pk", "status")) == before
    assert (workspace_root / str(home.alice.pk) / "agents" / "MEMORY.md").exists()


def test_forget_the_notes_file_alone(api, home, workspace_root):
    before = memory_rows()
    response = forget_all(api(home.alice), "notes")
    assert response.status_code == 200 and response.json()["notes_deleted"] is True
    assert memory_rows() == before
    assert not (workspace_root / str(home.alice.pk) / "agents" / "MEMORY.md").exists()
    assert not WorkspaceChange.objects.filter(user=home.alice, name="MEMORY.md").exists()  # nor its old text
    assert notes_services.workspace_file_delete(user=home.alice, name="MEMORY.md") is False


@pytest.mark.parametrize(
    "body", [{"source": "all"}, {"confirm": "FORGET"}, {"source": "everything", "confirm": "FORGET"}]
)
def test_forget_everything_input_is_checked(api, home, body):
    before = memory_rows()
    assert api(home.alice).post(HOME + "/forget-all", body, format="json").status_code == 400
    assert memory_rows() == before


def test_forget_everything_is_bounded_per_call(api, home, monkeypatch):
    from memory_app.home.services import forget

    monkeypatch.setattr(forget, "FORGET_ALL_LIMIT", 3)
    for n in range(5):
        UserMemoryFactory(owner=home.alice, content=f"fact {n}")
    client = api(home.alice)
    first = forget_all(client, "user").json()
    assert len(first["forgotten"]) == 3 and first["remaining"] == 3
    second = forget_all(client, "user").json()
    assert len(second["forgotten"]) == 3 and second["remaining"] == 0
    assert not Memory.objects.filter(scope_type="user", owner=home.alice).exists()
