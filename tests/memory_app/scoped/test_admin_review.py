"""Review in the admin: consolidation candidates approved or rejected through ``scoped.review``,
and scope-migration entries approved only with a target chosen among their candidates, with a
dry run that names every entry it would skip and why."""

import re

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission
from django.urls import reverse

from memory_app.memories import services
from memory_app.memories.models import Memory, Status
from memory_app.scoped.migration import inspect_plan, plan_import
from memory_app.scoped.models import CandidateDecision, MemoryCandidate, ScopeMigrationEntry
from memory_app.scoped.services import scoped_item_create
from tests.factories import ChatBindingFactory, ChatMemoryFactory, MemoryCandidateFactory, UserFactory

pytestmark = pytest.mark.django_db

A = "milky:private:10001"
B = "milky:private:20002"
CANDIDATES = reverse("admin:memory_app_memorycandidate_changelist")
ENTRIES = reverse("admin:memory_app_scopemigrationentry_changelist")


def staff_with(client, *perms, username="operator"):
    user = UserFactory(username=username, is_staff=True)
    for perm in perms:
        app_label, codename = perm.split(".")
        user.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    client.force_login(user)
    return user


def state():
    return (
        sorted(Memory.objects.values_list("id", "scope_type", "scope_id", "status", "content")),
        sorted(MemoryCandidate.objects.values_list("id", "decision", "memory_id", "reason")),
        sorted(ScopeMigrationEntry.objects.values_list("id", "approval", "target_scope_id")),
    )


def review_url(candidate, decision):
    return reverse("admin:memory_app_memorycandidate_review", args=[quote(candidate.pk), decision])


def rejected(**kwargs):
    return MemoryCandidateFactory(decision=CandidateDecision.REJECTED, reason="low confidence", **kwargs)


# --- candidates ------------------------------------------------------------------------------


def test_approve_consolidates_a_rejected_candidate_as_the_product_would(client, admin):
    client.force_login(admin)
    candidate = rejected(content="I like green tea", subject_key="drink")
    response = client.post(
        CANDIDATES,
        {"action": "approve_candidates", ACTION_CHECKBOX_NAME: [candidate.pk], "confirmed": "yes"},
        follow=True,
    )
    candidate.refresh_from_db()
    memory = Memory.objects.get()
    assert (memory.scope_type, memory.scope_id, memory.content, memory.origin) == (
        "chat",
        A,
        "I like green tea",
        "consolidation",
    )
    assert memory.evidence["source_session_id"] == A and memory.metadata["subject_key"] == "drink"
    assert (candidate.decision, candidate.memory_id) == (CandidateDecision.CREATED, memory.pk)
    assert candidate.reason.startswith("approved by admin on review")
    assert MemoryCandidate.objects.count() == 1  # the record took the outcome; no second record
    assert "Consolidated now, as the chat&#x27;s review allows: “I like green tea”" in response.text


def test_approve_finds_the_duplicate_inside_the_scope(client, admin):
    client.force_login(admin)
    existing = ChatMemoryFactory(scope_id=A, content="I like green tea")
    ChatMemoryFactory(scope_id=B, content="I like oolong")
    candidate = rejected(content="I like green tea")
    client.post(CANDIDATES, {"action": "approve_candidates", ACTION_CHECKBOX_NAME: [candidate.pk], "confirmed": "yes"})
    candidate.refresh_from_db()
    assert (candidate.decision, candidate.memory_id) == (CandidateDecision.DUPLICATE, existing.pk)
    assert Memory.objects.count() == 2


def test_a_candidate_consolidation_itself_refuses_cannot_be_approved(client, admin):
    client.force_login(admin)
    candidate = rejected(kind="gossip", content="x")
    before = state()
    response = client.post(
        CANDIDATES,
        {"action": "approve_candidates", ACTION_CHECKBOX_NAME: [candidate.pk], "confirmed": "yes"},
        follow=True,
    )
    assert f"Candidate {candidate.pk} cannot be approved: unknown kind or empty content." in response.text
    assert state() == before


def test_reject_records_the_decision_and_archives_the_item_it_wrote(client, admin):
    client.force_login(admin)
    written = ChatMemoryFactory(scope_id=A, content="I like jazz")
    created = MemoryCandidateFactory(memory=written)
    elsewhere = ChatMemoryFactory(scope_id=A, content="I like blues")
    duplicate = MemoryCandidateFactory(memory=elsewhere, decision=CandidateDecision.DUPLICATE)
    response = client.post(
        CANDIDATES,
        {"action": "reject_candidates", ACTION_CHECKBOX_NAME: [created.pk, duplicate.pk], "confirmed": "yes"},
        follow=True,
    )
    assert "Rejected: “I like jazz”. The item it wrote is archived: agents no longer use it." in response.text
    assert "Rejected: “I like blues”. It had written no item that is still in use." in response.text
    created.refresh_from_db(), duplicate.refresh_from_db()
    assert created.decision == duplicate.decision == CandidateDecision.REJECTED
    assert "its item was archived" in created.reason and created.memory_id == written.pk
    assert Memory.objects.get(pk=written.pk).status == Status.ARCHIVED
    assert Memory.objects.get(pk=elsewhere.pk).status == Status.ACTIVE  # it existed before the candidate


def test_rejecting_twice_or_approving_a_consolidated_candidate_changes_nothing(client, admin):
    client.force_login(admin)
    candidate = MemoryCandidateFactory(memory=ChatMemoryFactory(scope_id=A, content="I like jazz"))
    before = state()
    response = client.post(
        CANDIDATES,
        {"action": "approve_candidates", ACTION_CHECKBOX_NAME: [candidate.pk], "confirmed": "yes"},
        follow=True,
    )
    assert f"Candidate {candidate.pk} is already created." in response.text
    assert state() == before


def test_the_candidate_page_offers_the_action_that_applies(client, admin):
    client.force_login(admin)
    done = MemoryCandidateFactory(memory=ChatMemoryFactory(scope_id=A))
    refused = rejected()
    page = client.get(reverse("admin:memory_app_memorycandidate_change", args=[refused.pk])).text
    assert review_url(refused, "approve") in page and review_url(refused, "reject") not in page
    page = client.get(reverse("admin:memory_app_memorycandidate_change", args=[done.pk])).text
    assert review_url(done, "reject") in page and review_url(done, "approve") not in page


def test_staff_who_may_only_read_candidates_cannot_approve_or_reject(client):
    staff_with(client, "memory_app.view_memorycandidate")
    candidate = rejected()
    other = MemoryCandidateFactory(memory=ChatMemoryFactory(scope_id=A))
    page = client.get(reverse("admin:memory_app_memorycandidate_change", args=[candidate.pk]))
    assert page.status_code == 200 and review_url(candidate, "approve") not in page.text
    for decision in ("approve", "reject"):
        assert client.post(review_url(candidate, decision), {"confirmed": "yes"}).status_code == 403
    before = state()
    for action, pk in (("approve_candidates", candidate.pk), ("reject_candidates", other.pk)):
        client.post(CANDIDATES, {"action": action, ACTION_CHECKBOX_NAME: [pk], "confirmed": "yes"})
    assert state() == before


def test_staff_without_candidate_permissions_get_403(client):
    staff_with(client, "memory_app.view_memory")
    candidate = rejected()
    before = state()
    assert client.get(CANDIDATES).status_code == 403
    response = client.post(
        CANDIDATES, {"action": "approve_candidates", ACTION_CHECKBOX_NAME: [candidate.pk], "confirmed": "yes"}
    )
    assert response.status_code == 403
    assert state() == before


def test_a_global_candidate_also_takes_the_global_write_permission(client):
    candidate = rejected(
        kind="procedure", content="Deploy with the blue button", scope_type="global", scope_id="__global__"
    )
    staff_with(client, "memory_app.change_memorycandidate", "memory_app.view_memorycandidate")
    before = state()
    response = client.post(
        CANDIDATES,
        {"action": "approve_candidates", ACTION_CHECKBOX_NAME: [candidate.pk], "confirmed": "yes"},
        follow=True,
    )
    assert "identity_app.write_global_memories" in response.text
    assert state() == before
    staff_with(
        client,
        "memory_app.change_memorycandidate",
        "memory_app.view_memorycandidate",
        "identity_app.write_global_memories",
        username="lead",
    )
    client.post(CANDIDATES, {"action": "approve_candidates", ACTION_CHECKBOX_NAME: [candidate.pk], "confirmed": "yes"})
    candidate.refresh_from_db()
    assert candidate.decision == CandidateDecision.CREATED
    assert (candidate.memory.scope_type, candidate.memory.content) == ("global", "Deploy with the blue button")


# --- scope migration entries -----------------------------------------------------------------


@pytest.fixture
def plan(admin):
    """One entry of each decision: migrate (to A), manual_review (A or B), keep."""
    glob = {
        "migrate": {"kind": "fact", "content": "I live in Lyon", "evidence": {"session_id": A}},
        "manual": {
            "kind": "fact",
            "content": "Conflicted",
            "evidence": {"session_id": A},
            "metadata": {"chat_address": B},
        },
        "keep": {"kind": "decision", "content": "We use tabs", "evidence": {"session_id": A}},
    }
    ids = {name: services.memory_create(actor=admin, tier="global", **kw).pk for name, kw in glob.items()}
    plan = plan_import(data=inspect_plan(), name="p", actor=admin)
    plan.ids = ids
    return plan


def entry(plan, name):
    return plan.entries.get(item_id=plan.ids[name])


def test_bulk_approve_refuses_manual_review_entries_without_a_target_and_names_them(client, admin, plan):
    client.force_login(admin)
    all_ids = list(plan.entries.values_list("pk", flat=True))
    response = client.post(ENTRIES, {"action": "approve", ACTION_CHECKBOX_NAME: all_ids}, follow=True)
    manual = entry(plan, "manual")
    assert manual.decision == "manual_review" and manual.approval == "pending"
    assert entry(plan, "migrate").approval == "approved" and entry(plan, "keep").approval == "pending"
    text = response.text
    assert "1 manual_review entry was not approved because it has no target yet" in text and manual.item_id in text
    assert "1 entry marked approved" in text
    # With a target chosen among its candidates it can be approved in bulk.
    ScopeMigrationEntry.objects.filter(pk=manual.pk).update(target_scope_id=B)
    client.post(ENTRIES, {"action": "approve", ACTION_CHECKBOX_NAME: [manual.pk]})
    assert entry(plan, "manual").approval == "approved"


def test_the_target_is_a_select_of_the_entrys_candidate_chats(client, admin, plan):
    client.force_login(admin)
    manual = entry(plan, "manual")
    url = reverse("admin:memory_app_scopemigrationentry_change", args=[manual.pk])
    page = client.get(url).text
    select = re.search(r'<select name="target_scope_id"[^>]*>(.*?)</select>', page, re.S)
    assert select, "the target is not a select"
    assert re.findall(r'<option value="([^"]*)"', select.group(1)) == ["", A, B]
    before = state()
    forged = client.post(url, {"approval": "approved", "target_scope_id": "milky:private:3"})
    assert forged.status_code == 200 and "Select a valid choice" in forged.text
    without = client.post(url, {"approval": "approved", "target_scope_id": ""})
    assert "Choose the target among the entry" in without.text
    assert state() == before
    client.post(url, {"approval": "approved", "target_scope_id": B})
    assert (entry(plan, "manual").approval, entry(plan, "manual").target_scope_id) == ("approved", B)


def test_a_migrate_entry_keeps_the_target_inspect_found(client, admin, plan):
    client.force_login(admin)
    migrate = entry(plan, "migrate")
    url = reverse("admin:memory_app_scopemigrationentry_change", args=[migrate.pk])
    before = state()
    response = client.post(url, {"approval": "approved", "target_scope_id": B})
    assert response.status_code == 200 and "Select a valid choice" in response.text
    assert state() == before


def test_staff_who_may_only_read_entries_cannot_approve_them(client, plan):
    staff_with(client, "memory_app.view_scopemigrationentry")
    before = state()
    client.post(ENTRIES, {"action": "approve", ACTION_CHECKBOX_NAME: list(plan.entries.values_list("pk", flat=True))})
    assert state() == before


def test_the_dry_run_report_names_each_skipped_entry_and_why(client, admin):
    ids = {}
    for name, kw in {
        "migrate": {"kind": "fact", "content": "I live in Lyon", "evidence": {"session_id": A}},
        "pending": {"kind": "fact", "content": "I like cats", "evidence": {"session_id": B}},
        "rejected": {"kind": "task", "content": "Renew passport", "evidence": {"session_id": B}},
        "manual": {
            "kind": "fact",
            "content": "Conflicted",
            "evidence": {"session_id": A},
            "metadata": {"chat_address": B},
        },
        "keep": {"kind": "decision", "content": "We use tabs", "evidence": {"session_id": A}},
    }.items():
        ids[name] = services.memory_create(actor=admin, tier="global", **kw).pk
    data = inspect_plan()
    approval = {ids["migrate"]: "approved", ids["rejected"]: "rejected", ids["manual"]: "approved"}
    for row in data["entries"]:
        row["approval"] = approval.get(row["item_id"], "pending")  # a file edited by hand
    plan = plan_import(data=data, name="edited", actor=admin)
    client.force_login(admin)
    before = state()
    response = client.post(
        reverse("admin:memory_app_scopemigrationplan_apply", args=[plan.pk]), {"confirm": "on", "dry_run": "on"}
    )
    assert response.status_code == 200
    assert Memory.objects.filter(scope_type="global").count() == 5
    report = response.text[response.text.index('id="dry-run-report"') :]
    assert "1 entry would move" in report and "4 entries would be skipped" in report
    rows = {
        item: re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", row))
        for row in re.findall(r'<tr class="skipped-entry">(.*?)</tr>', report, re.S)
        for item in ids.values()
        if item in row
    }
    assert set(rows) == {ids["pending"], ids["rejected"], ids["manual"], ids["keep"]}
    assert "not approved yet" in rows[ids["pending"]] and "I like cats" in rows[ids["pending"]]
    assert "rejected on review" in rows[ids["rejected"]]
    assert "needs a target chosen from its candidate chats" in rows[ids["manual"]]
    assert "stays global" in rows[ids["keep"]]
    assert (
        f'href="{reverse("admin:memory_app_scopemigrationentry_change", args=[plan.entries.get(item_id=ids["keep"]).pk])}"'
        in report
    )
    assert state()[0] == before[0]  # no item moved


def test_review_messages_and_the_report_speak_chinese_too(client, admin, plan):
    client.force_login(admin)
    candidate = MemoryCandidateFactory(memory=ChatMemoryFactory(scope_id=A, content="I like jazz"))
    zh = {"HTTP_ACCEPT_LANGUAGE": "zh-CN"}
    response = client.post(
        CANDIDATES,
        {"action": "reject_candidates", ACTION_CHECKBOX_NAME: [candidate.pk], "confirmed": "yes"},
        follow=True,
        **zh,
    )
    assert "已拒绝：“I like jazz”。它写下的条目已归档：智能体不再使用它。" in response.text
    response = client.post(
        ENTRIES, {"action": "approve", ACTION_CHECKBOX_NAME: [entry(plan, "manual").pk]}, follow=True, **zh
    )
    assert "尚无目标，因此未批准" in response.text
    report = client.post(
        reverse("admin:memory_app_scopemigrationplan_apply", args=[plan.pk]), {"confirm": "on", "dry_run": "on"}, **zh
    ).text
    assert "试运行报告" in report and "将被跳过" in report and "它尚未获批准" in report


# --- approving a share is a decision: the page says whose chat, what and who, then what happened ---


def test_approving_a_pending_share_first_says_whose_chat_what_and_who_and_changes_nothing(client, admin, svc, settings):
    settings.MEMORY_CHAT_TO_GLOBAL = "review"
    alice = UserFactory(username="alice")
    ChatBindingFactory(user=alice, chat_key=A, display_name="Travel")
    item, _created = scoped_item_create(actor=svc, session_id=A, kind="decision", content="We fly economy only.")
    candidate = MemoryCandidate.objects.get(memory=item, decision=CandidateDecision.PENDING)
    # The item was corrected while it waited: what is shared is the corrected text.
    corrected = services.memory_supersede(actor=svc, memory_id=item.pk, content="We fly economy, never business.")
    client.force_login(admin)
    before = state()
    for page in (
        client.get(review_url(candidate, "approve")),
        client.post(CANDIDATES, {"action": "approve_candidates", ACTION_CHECKBOX_NAME: [candidate.pk]}),
    ):
        text = page.text
        assert page.status_code == 200 and 'id="confirm-review"' in text
        assert "From the private chat milky:private:10001 of alice" in text and "“Travel”" in text
        assert "We fly economy, never business." in text and "We fly economy only." not in text
        assert "This exact text becomes global" in text and "active accounts on this service" in text
        assert "alice sees it under “Shared from your chats”" in text
    assert state() == before  # showing what it will do changes nothing
    response = client.post(review_url(candidate, "approve"), {"confirmed": "yes"}, follow=True)
    assert (
        "Shared with everyone: “We fly economy, never business.”, from alice&#x27;s chat “Travel” (milky:private:10001)"
        in response.text
    )
    shared = Memory.objects.get(pk=corrected.pk)
    assert (shared.scope_type, shared.source_chat_key) == ("global", A)


def test_rejecting_a_pending_share_says_it_stays_in_the_chat(client, admin, svc, settings):
    settings.MEMORY_CHAT_TO_GLOBAL = "review"
    item, _created = scoped_item_create(actor=svc, session_id=B, kind="warning", content="The lift is broken.")
    candidate = MemoryCandidate.objects.get(memory=item)
    client.force_login(admin)
    page = client.get(review_url(candidate, "reject")).text
    assert "From the chat milky:private:20002, bound to nobody" in page and "It is not shared." in page
    response = client.post(review_url(candidate, "reject"), {"confirmed": "yes"}, follow=True)
    assert "Not shared: “The lift is broken.” stays in the chat milky:private:20002, bound to nobody only." in (
        response.text
    )
    assert Memory.objects.get(pk=item.pk).scope_type == "chat"


def test_a_decision_that_cannot_be_made_says_why_and_offers_no_button(client, admin):
    client.force_login(admin)
    done = MemoryCandidateFactory(memory=ChatMemoryFactory(scope_id=A, content="I like jazz"))
    page = client.get(review_url(done, "approve")).text
    assert "This cannot be done: it is already decided: Created an item." in page and 'id="confirm-review"' not in page
    assert client.get(review_url(done, "maybe")).status_code == 404
    assert (
        client.get(reverse("admin:memory_app_memorycandidate_review", args=["cand_nothing", "approve"])).status_code
        == 404
    )


def test_the_candidate_list_says_whose_chat_each_came_from(client, admin):
    alice = UserFactory(username="alice")
    ChatBindingFactory(user=alice, chat_key=A)
    MemoryCandidateFactory(memory=ChatMemoryFactory(scope_id=A), session_id=f"{A}:cron:nightly")
    MemoryCandidateFactory(memory=ChatMemoryFactory(scope_id=B), session_id=B)
    client.force_login(admin)
    page = client.get(CANDIDATES).text
    cells = re.findall(r'<td class="field-chat_of[^"]*">(.*?)</td>', page)
    assert sorted(cells) == sorted(["alice", "nobody&#x27;s (not bound)"])


def test_the_plan_list_leads_to_apply(client, admin, plan):
    client.force_login(admin)
    page = client.get(reverse("admin:memory_app_scopemigrationplan_changelist")).text
    assert reverse("admin:memory_app_scopemigrationplan_apply", args=[plan.pk]) in page


def test_forgetting_an_item_blanks_its_preview_in_a_plan_under_review(client, admin, plan):
    forgotten = plan.ids["migrate"]
    assert entry(plan, "migrate").content_preview == "I live in Lyon"
    services.memory_forget(actor=admin, memory_id=forgotten, tier="global")
    assert entry(plan, "migrate").content_preview == ""
    assert entry(plan, "keep").content_preview == "We use tabs"  # the others keep theirs
    client.force_login(admin)
    found = client.get(reverse("admin:memory_app_scopemigrationentry_changelist"), {"q": "Lyon"})
    assert found.status_code == 200 and found.context["cl"].result_count == 0
