"""The one switch model: ``enable_memory``, auto-memory ``use`` and ``generate`` read and changed
together (``/api/users/me/memory-switches`` and the settings panel), and what each switch does
to the context of a main-agent run and of a sub-agent run."""

import json

import pytest
from django.test import Client
from django.urls import reverse

from memory_app.automemory.models import AutoMemorySettings
from memory_app.automemory.switches import memory_switches_get
from memory_app.automemory.worker import round_run
from memory_app.home.overview import switches_get
from memory_app.notes import services as notes_services
from memory_app.notes.models import UserSettings
from memory_app.threads import services as thread_services
from tests.factories import ProjectMemoryFactory, UserMemoryFactory
from tests.memory_app.automemory.helpers import auto_memories, finished_run

pytestmark = pytest.mark.django_db

URL = "/api/users/me/memory-switches"
DEFAULTS = {"enable_memory": True, "use": False, "generate": False}


def state(user) -> dict:
    return memory_switches_get(user=user).as_dict()


# --- API ----------------------------------------------------------------------------------
def test_api_reads_and_changes_the_three_switches_together(api, alice):
    client = api(alice)
    assert client.get(URL).json() == DEFAULTS
    response = client.put(URL, {"use": True, "generate": True}, format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {"enable_memory": True, "use": True, "generate": True}
    response = client.put(URL, {"enable_memory": False}, format="json")
    assert response.json() == {"enable_memory": False, "use": True, "generate": True}
    # The same rows the older endpoints read: one truth, three ways in.
    assert UserSettings.objects.get(user=alice).enable_memory is False
    auto = AutoMemorySettings.objects.get(user=alice)
    assert (auto.use, auto.generate) == (True, True)
    assert client.get("/api/users/me/settings").json() == {"enable_memory": False}
    old = client.get("/api/users/me/auto-memory-settings").json()
    assert (old["use"], old["generate"]) == (True, True)
    # And a change through an older endpoint shows here.
    client.put("/api/users/me/auto-memory-settings", {"use": False}, format="json")
    assert client.get(URL).json() == {"enable_memory": False, "use": False, "generate": True}


@pytest.mark.parametrize(
    "body",
    [
        {"use": "yes"},
        {"use": 1},
        {"generate": "true"},
        {"enable_memory": None},
        {"bogus": True},
        {"use": True, "generate": "on"},  # one bad value refuses the whole request
        {"enable_memory": False, "extract_model": "m"},  # not a switch
        [True, False],
        "use",
    ],
    ids=repr,
)
def test_api_refuses_malformed_input_and_changes_nothing(api, alice, body):
    response = api(alice).put(URL, body, format="json")
    assert response.status_code == 400, response.content
    assert state(alice) == DEFAULTS
    assert not AutoMemorySettings.objects.exists() and not UserSettings.objects.exists()


def test_api_changes_only_the_callers_switches(api, alice, bob):
    api(bob).put(URL, {"enable_memory": False, "use": True, "generate": True}, format="json")
    assert state(alice) == DEFAULTS
    assert api(alice).get(URL).json() == DEFAULTS


def test_a_run_token_cannot_read_or_change_switches(run_api, make_run, alice):
    handle = make_run(alice)
    client = run_api(handle.token)
    assert client.get(URL).status_code == 401
    assert client.put(URL, {"use": True}, format="json").status_code == 401
    assert state(alice) == DEFAULTS


def test_anonymous_and_forged_callers_are_refused(api, alice):
    assert api().put(URL, {"use": True}, format="json").status_code == 401
    forged = api()
    forged.credentials(HTTP_AUTHORIZATION="Token forged-key")
    assert forged.put(URL, {"use": True}, format="json").status_code == 401
    assert state(alice) == DEFAULTS


def test_the_schema_documents_the_endpoint():
    schema = json.loads(Client().get("/api/schema/?format=json").content)
    path = schema["paths"].get("/api/users/me/memory-switches/")
    assert path is not None and {"get", "put"} <= set(path)
    body = path["put"]["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert set(schema["components"]["schemas"][body]["properties"]) == {"enable_memory", "use", "generate"}


# --- the settings panel ---------------------------------------------------------------------
def _web(user) -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(user)
    return client


def test_the_panel_shows_every_switch_with_what_it_does(alice):
    page = _web(alice).get(reverse("web:settings")).content.decode()
    for name in ("enable_memory", "use", "generate"):
        assert f'name="{name}"' in page
    assert 'id="switch-enable_memory" checked' in page
    assert 'id="switch-use" checked' not in page and 'id="switch-generate" checked' not in page
    assert "helper agents it starts never do" in page
    assert "at the start of each new conversation" in page
    assert "Don&#x27;t remember this chat" in page or "Don't remember this chat" in page
    assert reverse("web:auto_memory_settings") in page  # thresholds and models stay there


def test_the_panel_saves_all_three_at_once(alice):
    client = _web(alice)
    response = client.post(reverse("web:settings"), {"use": "on", "generate": "on"})
    assert response.status_code == 302
    # An unchecked box is off: the notes-file switch went off with the same form.
    assert state(alice) == {"enable_memory": False, "use": True, "generate": True}
    client.post(reverse("web:settings"), {"enable_memory": "on"})
    assert state(alice) == {"enable_memory": True, "use": False, "generate": False}
    page = client.get(reverse("web:settings")).content.decode()
    assert 'id="switch-enable_memory" checked' in page and 'id="switch-use" checked' not in page


def test_each_switch_saves_alone_and_says_so(alice):
    """A form per switch (sent when toggled): ``switch`` names the one that changes; the others
    keep their value whatever else the form carries, and the page confirms what was saved."""
    client = _web(alice)
    assert state(alice) == {"enable_memory": True, "use": False, "generate": False}
    response = client.post(reverse("web:settings"), {"switch": "use", "use": "on"}, follow=True)
    assert state(alice) == {"enable_memory": True, "use": True, "generate": False}
    assert "Saved: “Use my memories in new agent tasks” is on." in response.content.decode()
    client.post(reverse("web:settings"), {"switch": "enable_memory"})  # box unchecked: off
    assert state(alice) == {"enable_memory": False, "use": True, "generate": False}
    assert client.post(reverse("web:settings"), {"switch": "bogus", "use": ""}).status_code == 400
    assert state(alice) == {"enable_memory": False, "use": True, "generate": False}
    page = client.get(reverse("web:settings")).content.decode()
    assert page.count('class="autosave switch-form"') == 3


def test_the_panel_needs_a_login_and_changes_only_the_signed_in_user(alice, bob):
    response = Client().post(reverse("web:settings"), {"use": "on"})
    assert response.status_code == 302 and "login" in response["Location"]
    assert state(alice) == DEFAULTS
    _web(bob).post(reverse("web:settings"), {"use": "on"})
    assert state(alice) == DEFAULTS and state(bob)["use"] is True


def test_the_panel_counts_chats_that_are_not_remembered(alice, bob, svc):
    for user, no_memory in ((alice, True), (alice, False), (bob, True)):
        thread_services.conversation_create(actor=svc, username=user.username, no_memory=no_memory)
    page = _web(alice).get(reverse("web:settings")).content.decode()
    assert "1 of your chats is in this mode." in page


def test_the_auto_memory_page_points_to_the_panel(alice):
    page = _web(alice).get(reverse("web:auto_memory_settings")).content.decode()
    assert f'href="{reverse("web:settings")}"' in page


def test_the_memory_home_links_every_switch_to_the_panel(alice):
    switches = switches_get(user=alice)
    assert {s.url_name for s in switches.values()} == {"web:settings"}
    assert {s.api_path for s in switches.values()} == {URL}


# --- what each switch does to a run's context ----------------------------------------------
@pytest.fixture
def remembered(alice, project):
    notes_services.workspace_file_write(user=alice, name="MEMORY.md", content="- MARK-NOTES likes tea\n")
    UserMemoryFactory(owner=alice, content="USER-MEM prefers short answers")
    ProjectMemoryFactory(project=project, content="PROJECT-MEM ships on Fridays")


@pytest.fixture
def runs(make_run, alice, project, remembered):
    """Alice's main chat run and a sub-agent run under it, in a project chat."""
    main = make_run(alice, project_id=project.pk)
    sub = make_run(alice, kind="subagent", conversation=main.run.conversation, parent=main.run, request_id="req-2")
    return main, sub


def context(run_api, handle) -> dict:
    response = run_api(handle.token).get(f"/api/runs/{handle.id}/context")
    assert response.status_code == 200, response.content
    return response.json()


def set_switches(api, user, **values):
    assert api(user).put(URL, values, format="json").status_code == 200


@pytest.mark.parametrize("on", [True, False])
def test_enable_memory_gives_the_main_agent_the_notes_file_and_tools_never_a_sub_agent(api, run_api, alice, runs, on):
    main, sub = runs
    set_switches(api, alice, enable_memory=on, use=False)
    ctx = context(run_api, main)
    names = {s["name"] for s in ctx["sections"]}
    assert ("memory" in names) is on and bool(ctx["tools"]) is on and ctx["memory_enabled"] is on
    assert ctx["memory_off_reason"] == ("" if on else "memory_disabled")
    assert ("MARK-NOTES" in json.dumps(ctx)) is on
    sub_ctx = context(run_api, sub)
    assert "MARK-NOTES" not in json.dumps(sub_ctx) and sub_ctx["tools"] == []
    assert sub_ctx["memory_off_reason"] == "not_top_level"


@pytest.mark.parametrize("on", [True, False])
def test_use_injects_identity_memories_into_the_main_agents_first_round_only(api, run_api, alice, runs, on):
    main, sub = runs
    set_switches(api, alice, use=on, enable_memory=False)
    ctx = context(run_api, main)
    assert ctx["identity_injected"] is on
    assert ("USER-MEM" in ctx["prompt"]) is on and ("PROJECT-MEM" in ctx["prompt"]) is on
    later = run_api(main.token).get(f"/api/runs/{main.id}/context", {"round": 2}).json()
    assert later["identity_injected"] is False and "USER-MEM" not in later["prompt"]
    sub_ctx = context(run_api, sub)
    assert sub_ctx["identity_injected"] is False and "USER-MEM" not in json.dumps(sub_ctx)


@pytest.mark.parametrize("on", [True, False])
def test_generate_extracts_from_finished_main_runs_never_from_sub_agent_runs(api, alice, project, on):
    set_switches(api, alice, generate=on)
    main = finished_run(user=alice, project=project)
    sub = finished_run(user=alice, project=project, kind="subagent", parent_run=main, conversation=main.conversation)
    results = round_run(worker_id="t")
    assert [r.run_id for r in results] == ([main.pk] if on else [])
    assert auto_memories(project).exists() is on
    assert sub.pk not in {r.run_id for r in results}
    sub.refresh_from_db()
    assert sub.auto_memory_processed_at is None
