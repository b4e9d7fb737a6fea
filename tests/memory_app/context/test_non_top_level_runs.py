"""No memory text of any kind reaches a run that is not top-level: not the notes file, not the
memory tools, not identity injection, not scoped chat/global items. One predicate decides
(``run_is_top_level``); these go through the real runs API and context endpoint."""

import json

import pytest

from memory_app.automemory.services import auto_memory_settings_update
from memory_app.notes import services
from memory_app.runs.models import AgentRun
from memory_app.scoped.services import scoped_item_create
from tests.factories import ProjectMemoryFactory, UserMemoryFactory
from tests.memory_app.runs.helpers import memory_path

pytestmark = pytest.mark.django_db

SESSION = "milky:private:10001"
PROMPT = "What should I cook tonight? peanuts"
SECRETS = ["MARK-NOTES", "alice chat fact", "GLOBAL-PROCEDURE", "USER-MEM", "PROJECT-MEM"]
TOOLS = {
    "remember_memory": {"content": "x"},
    "search_thread_messages": {"query": "peanuts"},
}


@pytest.fixture
def memories(svc, alice, project):
    """Every kind of memory alice's agents could be shown, each mentioning peanuts."""
    services.workspace_file_write(user=alice, name="MEMORY.md", content="- MARK-NOTES allergic to peanuts\n")
    UserMemoryFactory(owner=alice, content="USER-MEM allergic to peanuts")
    ProjectMemoryFactory(project=project, content="PROJECT-MEM peanuts are banned in the office")
    scoped_item_create(actor=svc, session_id=SESSION, kind="fact", content="alice chat fact: allergic to peanuts")
    scoped_item_create(actor=svc, session_id=SESSION, kind="procedure", content="GLOBAL-PROCEDURE peanuts policy")
    auto_memory_settings_update(user=alice, changes={"use": True})


def create_run(api, svc, conversation_id, **extra):
    body = {
        "user": "alice",
        "conversation_id": conversation_id,
        "request_id": "r1",
        "worker_id": "w1",
        "prompt": PROMPT,
        **extra,
    }
    response = api(svc).post("/api/runs", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


@pytest.fixture
def main(api, svc, project, memories):
    """Alice's main chat run in a private chat, with its conversation."""
    conversation = api(svc).post(
        "/api/conversations",
        {"user": "alice", "title": "dinner", "session_key": SESSION, "project_id": project.pk},
        format="json",
    )
    assert conversation.status_code == 201, conversation.content
    return create_run(api, svc, conversation.json()["id"], kind="chat", project_id=project.pk)


def subagent_on_the_same_thread(api, svc, main):
    return create_run(api, svc, main["conversation_id"], kind="subagent", parent_run_id=main["id"])


def subagent_on_a_child_thread(api, svc, main):
    child = api(svc).post(
        "/api/conversations",
        {"user": "alice", "title": "child", "session_key": SESSION, "parent_id": main["conversation_id"]},
        format="json",
    )
    assert child.status_code == 201, child.content
    return create_run(api, svc, child.json()["id"], kind="subagent", parent_run_id=main["id"])


def chat_kind_with_a_parent(api, svc, main):
    # The API refuses a chat run with a parent; a row that got one anyway (admin, old data) is
    # still not top-level.
    run = create_run(api, svc, main["conversation_id"], kind="chat", request_id="r2")
    AgentRun.objects.filter(pk=run["id"]).update(parent_run_id=main["id"])
    return run


def resume_kind_with_a_parent(api, svc, main):
    run = create_run(api, svc, main["conversation_id"], kind="resume", request_id="r2")
    AgentRun.objects.filter(pk=run["id"]).update(parent_run_id=main["id"])
    return run


def coordinator(api, svc, main):
    return create_run(api, svc, main["conversation_id"], kind="coordinator", request_id="r2")


def checkpoint(api, svc, main):
    return create_run(api, svc, main["conversation_id"], kind="checkpoint", request_id="r2")


NON_TOP_LEVEL = [
    subagent_on_the_same_thread,
    subagent_on_a_child_thread,
    chat_kind_with_a_parent,
    resume_kind_with_a_parent,
    coordinator,
    checkpoint,
]


def run_client(run_api, run):
    return run_api(run["run_token"])


def context(run_api, run, **params):
    response = run_client(run_api, run).get(f"/api/runs/{run['id']}/context", {"query": "peanuts", **params})
    assert response.status_code == 200, response.content
    return response.json()


@pytest.mark.parametrize("make", NON_TOP_LEVEL, ids=lambda make: make.__name__)
def test_a_run_that_is_not_top_level_gets_no_memory_text_of_any_kind(api, svc, run_api, main, make):
    run = make(api, svc, main)
    ctx = context(run_api, run)
    text = json.dumps(ctx, ensure_ascii=False)
    for secret in SECRETS:
        assert secret not in text, secret
    assert {s["name"] for s in ctx["sections"]} <= {"agents", "user"}
    assert ctx["prompt"] == PROMPT and ctx["identity_injected"] is False
    assert ctx["tools"] == [] and ctx["memory_enabled"] is False


@pytest.mark.parametrize("make", NON_TOP_LEVEL, ids=lambda make: make.__name__)
@pytest.mark.parametrize("name", TOOLS)
def test_a_run_that_is_not_top_level_cannot_use_the_memory_tools(
    api, svc, run_api, main, make, name, alice, workspace_root
):
    run = make(api, svc, main)
    before = memory_path(workspace_root, alice).read_bytes()
    response = run_client(run_api, run).post(f"/api/runs/{run['id']}/tools/{name}", TOOLS[name], format="json")
    assert response.status_code == 403, response.content
    assert response.json()["error"]["code"] == "not_top_level_run"
    assert "peanuts" not in response.content.decode()
    assert memory_path(workspace_root, alice).read_bytes() == before


def test_the_top_level_run_still_gets_every_source(run_api, main):
    ctx = context(run_api, main)
    sections = {s["name"]: s["content"] for s in ctx["sections"]}
    assert "MARK-NOTES" in sections["memory"]
    assert "alice chat fact" in sections["scoped_memory"] and "GLOBAL-PROCEDURE" in sections["scoped_memory"]
    assert ctx["identity_injected"] is True
    assert "USER-MEM" in ctx["prompt"] and "PROJECT-MEM" in ctx["prompt"] and ctx["prompt"].endswith(PROMPT)
    assert [t["name"] for t in ctx["tools"]] == ["remember_memory", "search_thread_messages", "read_thread_messages"]
    response = run_client(run_api, main).post(
        f"/api/runs/{main['id']}/tools/search_thread_messages", {"query": "peanuts"}, format="json"
    )
    assert response.status_code == 200, response.content


def test_a_resume_run_gets_memory_but_no_second_identity_block(api, svc, run_api, main):
    resumed = create_run(api, svc, main["conversation_id"], kind="resume", request_id="r2")
    ctx = context(run_api, resumed)
    names = {s["name"] for s in ctx["sections"]}
    assert {"memory", "scoped_memory"} <= names
    assert ctx["identity_injected"] is False and ctx["prompt"] == PROMPT
