"""A conversation in "don't remember this chat" mode (``Conversation.no_memory``): its runs get no
memory of any kind, the memory tools refuse, other chats' history tools never return it, and
auto-memory never reads it — set at creation or later, by its owner or a service principal."""

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from memory_app.automemory.models import AutoMemoryLogEntry
from memory_app.automemory.services import auto_memory_settings_update
from memory_app.automemory.worker import round_run
from memory_app.distill.extraction import DeterministicExtractor
from memory_app.notes import services as notes_services
from memory_app.runs import services as run_services
from memory_app.runs.models import AgentRun
from memory_app.scoped.services import scoped_item_create
from memory_app.threads import services as thread_services
from memory_app.threads.models import Conversation, MessageRole
from tests.factories import MessageFactory, ProjectMemoryFactory, UserMemoryFactory
from tests.memory_app.automemory.helpers import LONG_TALK, auto_memories, enable, finished_run
from tests.memory_app.runs.helpers import memory_path

pytestmark = pytest.mark.django_db

SESSION = "milky:private:10001"
SECRETS = ["MARK-NOTES", "alice chat fact", "GLOBAL-PROCEDURE", "USER-MEM", "PROJECT-MEM"]


def detail(conversation) -> str:
    return f"/api/conversations/{conversation.pk}"


def refreshed(conversation) -> bool:
    return Conversation.objects.get(pk=conversation.pk).no_memory


# --- setting the mode: API ---------------------------------------------------------------------
def test_created_with_the_mode_on_or_off_through_the_api(api, svc, alice):
    client = api(svc)
    plain = client.post("/api/conversations", {"user": "alice"}, format="json")
    assert plain.status_code == 201 and plain.json()["no_memory"] is False
    private = client.post("/api/conversations", {"user": "alice", "no_memory": True}, format="json")
    assert private.status_code == 201 and private.json()["no_memory"] is True
    assert Conversation.objects.get(pk=private.json()["id"]).no_memory is True


@pytest.mark.parametrize("value", ["yes", 1, None, "true", {}])
def test_malformed_mode_at_creation_is_400_and_creates_nothing(api, svc, alice, value):
    response = api(svc).post("/api/conversations", {"user": "alice", "no_memory": value}, format="json")
    assert response.status_code == 400, response.content
    assert not Conversation.objects.exists()


def test_the_owner_and_a_service_principal_toggle_it_later(api, svc, alice):
    conversation = thread_services.conversation_create(actor=svc, username="alice")
    response = api(alice).patch(detail(conversation), {"no_memory": True}, format="json")
    assert response.status_code == 200 and response.json()["no_memory"] is True and refreshed(conversation)
    assert api(alice).get(detail(conversation)).json()["no_memory"] is True
    response = api(svc).patch(detail(conversation), {"no_memory": False}, format="json")
    assert response.status_code == 200 and not refreshed(conversation)
    # Other fields keep their values.
    api(alice).patch(detail(conversation), {"title": "renamed"}, format="json")
    assert not refreshed(conversation)


def test_other_users_cannot_toggle_it(api, svc, alice, bob, mallory, project):
    # bob is a member of the conversation's project: still not his conversation.
    conversation = thread_services.conversation_create(actor=svc, username="alice", project_id=project.pk)
    for user in (bob, mallory):
        response = api(user).patch(detail(conversation), {"no_memory": True}, format="json")
        assert response.status_code == 404, response.content
    assert not refreshed(conversation)


def test_run_tokens_cannot_toggle_it(api, svc, alice, make_run, run_api):
    conversation = thread_services.conversation_create(actor=svc, username="alice")
    main = make_run(alice, conversation=conversation)
    sub = make_run(alice, kind="subagent", conversation=conversation, parent=main.run, request_id="req-2")
    for handle in (main, sub):
        response = run_api(handle.token).patch(detail(conversation), {"no_memory": True}, format="json")
        assert response.status_code == 401, response.content
    assert not refreshed(conversation)
    anonymous = api().patch(detail(conversation), {"no_memory": True}, format="json")
    assert anonymous.status_code == 401 and not refreshed(conversation)


@pytest.mark.parametrize("body", [{"no_memory": "on"}, {"no_memory": None}, {"no_memory": 0}, {"remember": False}])
def test_malformed_toggle_is_400_and_changes_nothing(api, svc, alice, body):
    conversation = thread_services.conversation_create(actor=svc, username="alice", title="kept")
    response = api(alice).patch(detail(conversation), body, format="json")
    assert response.status_code == 400, response.content
    row = Conversation.objects.get(pk=conversation.pk)
    assert (row.no_memory, row.title) == (False, "kept")


def test_the_service_refuses_a_non_boolean(svc, alice):
    from config.errors import InvalidInput

    with pytest.raises(InvalidInput):
        thread_services.conversation_create(actor=svc, username="alice", no_memory="yes")
    conversation = thread_services.conversation_create(actor=svc, username="alice")
    with pytest.raises(InvalidInput):
        thread_services.conversation_update(actor=alice, conversation_id=conversation.pk, no_memory=1)
    assert not refreshed(conversation)


# --- setting the mode: the chat page ------------------------------------------------------------
def _web(user) -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(user)
    return client


def test_the_chat_page_turns_the_mode_on_and_off(svc, alice):
    conversation = thread_services.conversation_create(actor=svc, username="alice")
    client = _web(alice)
    url = reverse("web:conversation_memory", args=[conversation.pk])
    page = client.get(reverse("web:conversation_detail", args=[conversation.pk])).content.decode()
    assert f'action="{url}"' in page and 'value="on"' in page
    response = client.post(url, {"no_memory": "on"}, follow=True)
    assert response.status_code == 200 and refreshed(conversation)
    assert "This chat is not remembered." in response.content.decode()
    assert "not remembered</span>" in client.get(reverse("web:conversations")).content.decode()
    client.post(url, {"no_memory": "off"})
    assert "not remembered</span>" not in client.get(reverse("web:conversations")).content.decode()
    assert not refreshed(conversation)


@pytest.mark.parametrize("value", ["", "yes", "true", "ON"])
def test_the_chat_page_refuses_a_malformed_choice(svc, alice, value):
    conversation = thread_services.conversation_create(actor=svc, username="alice")
    response = _web(alice).post(reverse("web:conversation_memory", args=[conversation.pk]), {"no_memory": value})
    assert response.status_code == 400
    assert not refreshed(conversation)


def test_the_chat_page_is_the_owners_only(svc, alice, bob, project):
    conversation = thread_services.conversation_create(actor=svc, username="alice", project_id=project.pk)
    url = reverse("web:conversation_memory", args=[conversation.pk])
    assert _web(bob).post(url, {"no_memory": "on"}).status_code == 404
    assert _web(bob).post(url, {"no_memory": "bogus"}).status_code == 404  # 404 before 400
    anonymous = Client().post(url, {"no_memory": "on"})
    assert anonymous.status_code == 302 and "login" in anonymous["Location"]
    assert _web(alice).get(url).status_code == 405
    assert not refreshed(conversation)


# --- context and tools ----------------------------------------------------------------------------
@pytest.fixture
def remembered(svc, alice, project):
    """Every kind of memory alice's main agent could be shown, each mentioning peanuts, and
    every switch on."""
    notes_services.workspace_file_write(user=alice, name="MEMORY.md", content="- MARK-NOTES allergic to peanuts\n")
    UserMemoryFactory(owner=alice, content="USER-MEM allergic to peanuts")
    ProjectMemoryFactory(project=project, content="PROJECT-MEM peanuts are banned in the office")
    scoped_item_create(actor=svc, session_id=SESSION, kind="fact", content="alice chat fact: allergic to peanuts")
    scoped_item_create(actor=svc, session_id=SESSION, kind="procedure", content="GLOBAL-PROCEDURE peanuts policy")
    auto_memory_settings_update(user=alice, changes={"use": True, "generate": True})


def context(run_api, handle) -> dict:
    response = run_api(handle.token).get(f"/api/runs/{handle.id}/context", {"query": "peanuts"})
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def private_run(make_run, alice, project, remembered):
    return make_run(alice, project_id=project.pk, session_key=SESSION, no_memory=True, prompt="peanuts?")


def test_a_run_in_a_chat_that_is_not_remembered_gets_no_memory_text(run_api, private_run):
    ctx = context(run_api, private_run)
    text = json.dumps(ctx, ensure_ascii=False)
    for secret in SECRETS:
        assert secret not in text, secret
    assert {s["name"] for s in ctx["sections"]} <= {"agents", "user"}
    assert ctx["tools"] == [] and ctx["memory_enabled"] is False and ctx["identity_injected"] is False
    assert ctx["prompt"] == "peanuts?" and ctx["memory_off_reason"] == "conversation_no_memory"


def test_the_same_chat_remembered_gets_every_source(run_api, make_run, alice, project, remembered):
    # The control: without the mode the same setup shows every secret, so the test above can fail.
    handle = make_run(alice, project_id=project.pk, session_key=SESSION, prompt="peanuts?")
    text = json.dumps(context(run_api, handle), ensure_ascii=False)
    for secret in SECRETS:
        assert secret in text, secret


def test_the_mode_applies_from_the_next_assembly_either_way(api, run_api, alice, private_run):
    conversation = private_run.run.conversation
    api(alice).patch(detail(conversation), {"no_memory": False}, format="json")
    ctx = context(run_api, private_run)
    assert ctx["memory_enabled"] is True and "MARK-NOTES" in json.dumps(ctx)
    api(alice).patch(detail(conversation), {"no_memory": True}, format="json")
    assert "MARK-NOTES" not in json.dumps(context(run_api, private_run))


@pytest.mark.parametrize(
    "name, body",
    [
        ("remember_memory", {"content": "- MARK-NEW never saved"}),
        ("search_thread_messages", {"query": "peanuts"}),
        ("read_thread_messages", {"thread_id": "thr_x"}),
    ],
)
def test_the_memory_tools_refuse_in_a_chat_that_is_not_remembered(
    run_api, private_run, alice, workspace_root, name, body
):
    before = memory_path(workspace_root, alice).read_bytes()
    response = run_api(private_run.token).post(f"/api/runs/{private_run.id}/tools/{name}", body, format="json")
    assert response.status_code == 403, response.content
    assert response.json()["error"]["code"] == "memory_disabled"
    assert "peanuts" not in response.content.decode().replace("peanuts?", "")
    assert memory_path(workspace_root, alice).read_bytes() == before


def test_turning_the_mode_on_mid_run_stops_the_next_note(api, run_api, make_run, alice, workspace_root, remembered):
    handle = make_run(alice)
    url = f"/api/runs/{handle.id}/tools/remember_memory"
    assert run_api(handle.token).post(url, {"content": "- first note"}, format="json").status_code == 200
    api(alice).patch(detail(handle.run.conversation), {"no_memory": True}, format="json")
    before = memory_path(workspace_root, alice).read_bytes()
    response = run_api(handle.token).post(url, {"content": "- second note"}, format="json")
    assert response.status_code == 403 and response.json()["error"]["code"] == "memory_disabled"
    assert memory_path(workspace_root, alice).read_bytes() == before


def test_other_chats_cannot_find_or_read_a_chat_that_is_not_remembered(api, svc, run_api, make_run, alice):
    private = thread_services.conversation_create(actor=svc, username="alice", title="private", no_memory=True)
    thread_services.message_create(actor=svc, conversation_id=private.pk, role="user", content="walnut MARK-PRIVATE")
    public = thread_services.conversation_create(actor=svc, username="alice", title="public")
    thread_services.message_create(actor=svc, conversation_id=public.pk, role="user", content="walnut MARK-PUBLIC")
    elsewhere = make_run(alice)
    search = f"/api/runs/{elsewhere.id}/tools/search_thread_messages"
    read = f"/api/runs/{elsewhere.id}/tools/read_thread_messages"
    found = run_api(elsewhere.token).post(search, {"query": "walnut"}, format="json")
    assert found.status_code == 200, found.content
    assert "MARK-PUBLIC" in found.content.decode() and "MARK-PRIVATE" not in found.content.decode()
    response = run_api(elsewhere.token).post(read, {"thread_id": private.pk}, format="json")
    assert response.status_code == 404 and "MARK-PRIVATE" not in response.content.decode()
    # The messages stay indexed: when the owner turns the mode off, the chat can be found again.
    api(alice).patch(detail(private), {"no_memory": False}, format="json")
    found = run_api(elsewhere.token).post(search, {"query": "walnut"}, format="json")
    assert "MARK-PRIVATE" in found.content.decode()


# --- auto-memory extraction -------------------------------------------------------------------------
def private_finished_run(*, user, project):
    run = finished_run(user=user, project=project)
    Conversation.objects.filter(pk=run.conversation_id).update(no_memory=True)
    return run


def test_extraction_skips_a_chat_that_is_not_remembered_and_logs_why(alice, project):
    enable(alice)
    run = private_finished_run(user=alice, project=project)
    [result] = round_run(worker_id="t")
    assert result.outcome == "skipped" and result.gate == "no_memory"
    assert not auto_memories().exists()
    entry = AutoMemoryLogEntry.objects.get(run_ref=run.pk)
    assert entry.gate == "no_memory" and "don't remember this chat" in entry.reason
    assert entry.content == "" and "PostgreSQL" not in json.dumps(entry.details)
    run.refresh_from_db()
    assert run.auto_memory_processed_at is not None


def test_turning_the_mode_off_later_does_not_extract_earlier_runs(alice, project):
    enable(alice)
    run = private_finished_run(user=alice, project=project)
    round_run(worker_id="t")
    Conversation.objects.filter(pk=run.conversation_id).update(no_memory=False)
    assert round_run(worker_id="t") == []
    assert not auto_memories().exists()
    # A new run of the chat, finished after the mode went off, is extracted as usual.
    later = finished_run(user=alice, project=project, conversation=run.conversation)
    [result] = round_run(worker_id="t")
    assert result.run_id == later.pk and result.outcome == "extracted" and auto_memories().exists()


def test_a_waiting_run_is_skipped_when_the_mode_is_turned_on_before_it_is_read(alice, project):
    enable(alice, min_idle_minutes=30)
    run = finished_run(user=alice, project=project, finished_at=timezone.now() - timedelta(minutes=1))
    run.started_at = run.finished_at - timedelta(minutes=10)
    run.save(update_fields=["started_at"])
    [waiting] = round_run(worker_id="t")
    assert waiting.outcome == "deferred" and waiting.gate == "idle"
    Conversation.objects.filter(pk=run.conversation_id).update(no_memory=True)
    [result] = round_run(worker_id="t", now=timezone.now() + timedelta(hours=1))
    assert result.outcome == "skipped" and result.gate == "no_memory"
    assert not auto_memories().exists()


class TogglingExtractor(DeterministicExtractor):
    """The owner turns the mode on while the extractor runs (after the messages were read)."""

    def __init__(self, conversation_id):
        self.conversation_id = conversation_id

    def extract(self, text, *, max_items=20):
        Conversation.objects.filter(pk=self.conversation_id).update(no_memory=True)
        return super().extract(text, max_items=max_items)


def test_the_mode_turned_on_during_extraction_still_stops_the_write(alice, project):
    enable(alice)
    run = finished_run(user=alice, project=project)
    [result] = round_run(worker_id="t", extractor=TogglingExtractor(run.conversation_id))
    assert result.outcome == "skipped" and result.gate == "no_memory"
    assert not auto_memories().exists()
    assert AutoMemoryLogEntry.objects.filter(run_ref=run.pk, gate="no_memory").count() == 1


def _finished_in(make_run, alice, conversation):
    """A run started and finished through the services, with a long user message."""
    handle = make_run(alice, conversation=conversation)
    MessageFactory(run=handle.run, role=MessageRole.USER, content=LONG_TALK)
    run_services.run_finish(credential=handle.credential, status="completed")
    AgentRun.objects.filter(pk=handle.id).update(finished_at=timezone.now() - timedelta(hours=2))
    return handle.run


def test_a_run_of_a_private_stretch_is_never_extracted_once_generate_is_on_and_the_mode_off(
    svc, make_run, alice, project
):
    """generate off while the chat was not remembered: the sweep leaves the run alone; turning
    the mode off and generate on later must not extract it."""
    conversation = thread_services.conversation_create(
        actor=svc, username="alice", title="t", project_id=project.pk, no_memory=True
    )
    run = _finished_in(make_run, alice, conversation)
    assert AgentRun.objects.get(pk=run.pk).not_remembered is True
    assert round_run(worker_id="t") == []  # generate is off: nothing swept
    thread_services.conversation_update(actor=alice, conversation_id=conversation.pk, no_memory=False)
    enable(alice, min_idle_minutes=0, min_duration_seconds=0)
    [result] = round_run(worker_id="t")
    assert result.run_id == run.pk and result.outcome == "skipped" and result.gate == "no_memory"
    assert not auto_memories().exists()


def test_runs_not_yet_extracted_when_the_mode_is_turned_on_stay_unextracted(svc, make_run, alice, project):
    """Turned on, then off again before the worker came: the runs of that stretch stay private;
    a run started after the mode went off is extracted as usual."""
    conversation = thread_services.conversation_create(actor=svc, username="alice", title="t", project_id=project.pk)
    before = _finished_in(make_run, alice, conversation)
    assert AgentRun.objects.get(pk=before.pk).not_remembered is False
    thread_services.conversation_update(actor=alice, conversation_id=conversation.pk, no_memory=True)
    thread_services.conversation_update(actor=alice, conversation_id=conversation.pk, no_memory=False)
    enable(alice, min_idle_minutes=0, min_duration_seconds=0)
    [result] = round_run(worker_id="t")
    assert result.run_id == before.pk and result.outcome == "skipped" and not auto_memories().exists()
    after = _finished_in(make_run, alice, conversation)
    [result] = round_run(worker_id="t")
    assert result.run_id == after.pk and (result.outcome, result.gate, result.reason) == ("extracted", "", ""), result
    assert auto_memories().exists()
