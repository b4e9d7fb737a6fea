import pytest
from django.test import Client

from memory_app.notes import services as notes_services
from memory_app.notes.models import UserSettings
from memory_app.threads import services as thread_services
from tests.memory_app.runs.helpers import memory_path

pytestmark = pytest.mark.django_db


def _login(user):
    client = Client()
    client.force_login(user)
    return client


def test_workspace_editor_saves_and_deletes(alice, workspace_root):
    client = _login(alice)
    page = client.get("/workspace/?name=USER.md")
    assert page.status_code == 200 and b"USER.md" in page.content
    response = client.post(
        "/workspace/", {"name": "MEMORY.md", "content": "- 喜欢茶\r\n- likes tea\r\n", "action": "save"}
    )
    assert response.status_code == 302
    assert memory_path(workspace_root, alice).read_text("utf-8") == "- 喜欢茶\n- likes tea\n"
    assert "喜欢茶" in client.get("/workspace/?name=MEMORY.md").content.decode()
    client.post("/workspace/", {"name": "MEMORY.md", "action": "delete"})
    assert not memory_path(workspace_root, alice).exists()


def test_workspace_editor_ignores_unknown_names_and_reports_errors(alice, workspace_root):
    client = _login(alice)
    for name in ("../../etc/passwd", "NOTES.md", ""):
        response = client.post("/workspace/", {"name": name, "content": "attack", "action": "save"}, follow=True)
        assert "Unknown workspace file." in response.content.decode()
    assert [p for p in workspace_root.rglob("*") if p.is_file()] == []
    assert client.get("/workspace/?name=../../etc/passwd").status_code == 200  # shows MEMORY.md instead
    client.post("/workspace/", {"name": "MEMORY.md", "content": "x", "action": "save"})
    response = client.post("/workspace/", {"name": "MEMORY.md", "content": "字" * 50000, "action": "save"}, follow=True)
    assert "larger than" in response.content.decode()
    assert memory_path(workspace_root, alice).read_text() == "x"


def test_settings_page_toggles_memory(alice):
    client = _login(alice)
    assert b"checked" in client.get("/settings/").content
    client.post("/settings/", {})
    assert UserSettings.objects.get(user=alice).enable_memory is False
    client.post("/settings/", {"enable_memory": "on"})
    assert UserSettings.objects.get(user=alice).enable_memory is True


def test_conversations_and_runs_pages_show_only_own(alice, mallory, svc, make_run):
    handle = make_run(alice)
    thread_services.message_create(
        actor=svc, conversation_id=handle.run.conversation_id, role="user", content="MARK-ALICE-MSG"
    )
    own = _login(alice)
    assert handle.run.conversation_id in own.get("/conversations/").content.decode()
    detail = own.get(f"/conversations/{handle.run.conversation_id}/").content.decode()
    assert "MARK-ALICE-MSG" in detail and handle.id in detail
    run_page = own.get(f"/runs/{handle.id}/").content.decode()
    assert "held" in run_page and handle.token not in run_page
    other = _login(mallory)
    assert handle.run.conversation_id not in other.get("/conversations/").content.decode()
    assert other.get(f"/conversations/{handle.run.conversation_id}/").status_code == 404
    assert other.get(f"/runs/{handle.id}/").status_code == 404


def test_pages_need_login():
    for path in ("/workspace/", "/settings/", "/conversations/"):
        assert Client().get(path).status_code == 302


def test_admin_lists_runs_and_read_only_conversations(admin, alice, make_run, svc):
    handle = make_run(alice)
    thread_services.message_create(
        actor=svc,
        conversation_id=handle.run.conversation_id,
        role="user",
        content="hi",
        tool_calls=[{"name": "t", "input": {}, "output": "o"}],
    )
    client = _login(admin)
    runs_page = client.get("/admin/memory_app/agentrun/?lease=held")
    assert runs_page.status_code == 200 and handle.id in runs_page.content.decode()
    assert client.get(f"/admin/memory_app/agentrun/{handle.id}/change/").status_code == 200
    assert handle.token not in client.get(f"/admin/memory_app/agentrun/{handle.id}/change/").content.decode()
    assert client.get("/admin/memory_app/conversation/").status_code == 200
    assert client.get("/admin/memory_app/message/").status_code == 200
    assert client.get("/admin/memory_app/conversation/add/").status_code == 403
    assert (
        client.post(f"/admin/memory_app/conversation/{handle.run.conversation_id}/delete/", {"post": "yes"}).status_code
        == 403
    )


def test_notes_editor_and_agent_share_one_file(alice, make_run, run_api, workspace_root):
    notes_services.workspace_file_write(user=alice, name="MEMORY.md", content="- from the user\n")
    handle = make_run(alice)
    run_api(handle.token).post(
        f"/api/runs/{handle.id}/tools/remember_memory", {"content": "- from the agent"}, format="json"
    )
    page = _login(alice).get("/workspace/?name=MEMORY.md").content.decode()
    assert "from the user" in page and "from the agent" in page
