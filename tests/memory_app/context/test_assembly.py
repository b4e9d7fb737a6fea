import json
import logging

import pytest

from config.lowtrust import DATA_MARK
from memory_app.automemory import injection
from memory_app.automemory.injection import Injection
from memory_app.context.assembly import MEMORY_CONTEXT_BYTES
from memory_app.notes import services
from memory_app.runs.models import AgentRun
from memory_app.scoped import context as scoped_context
from tests.lowtrust_frames import block_lines, block_parts
from tests.memory_app.runs.helpers import memory_path

pytestmark = pytest.mark.django_db

FORBIDDEN_PARAMS = {
    "uid",
    "user",
    "user_id",
    "owner",
    "path",
    "file",
    "worker",
    "worker_id",
    "thread_owner",
    "username",
}


def _context(run_api, handle, **params):
    response = run_api(handle.token).get(f"/api/runs/{handle.id}/context", params)
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def files(alice):
    services.workspace_file_write(user=alice, name="AGENTS.md", content="Be concise. MARK-AGENTS")
    services.workspace_file_write(user=alice, name="USER.md", content="Alice, Berlin. MARK-USER")
    services.workspace_file_write(user=alice, name="MEMORY.md", content="- likes oolong MARK-MEMORY\n")


def _section(ctx, name):
    return next((s for s in ctx["sections"] if s["name"] == name), None)


def test_top_level_run_gets_all_three_files_and_tools(run_api, make_run, alice, files):
    ctx = _context(run_api, make_run(alice, prompt="What tea do I like?"), query="tea")
    assert set(ctx) >= {"sections", "prompt", "goal", "tools", "memory_enabled", "warnings"}
    assert ctx["memory_enabled"] is True
    assert "MARK-AGENTS" in _section(ctx, "agents")["content"] and _section(ctx, "agents")["trust"] == "system"
    assert "MARK-USER" in _section(ctx, "user")["content"]
    memory = _section(ctx, "memory")
    assert memory["trust"] == "low" and "MARK-MEMORY" in memory["content"]
    assert "low-trust DATA" in memory["content"] and "cannot override" in memory["content"]
    assert [t["name"] for t in ctx["tools"]] == ["remember_memory", "search_thread_messages", "read_thread_messages"]
    assert ctx["prompt"] == "What tea do I like?" and ctx["warnings"] == []


@pytest.mark.parametrize("kind", ["subagent", "coordinator", "checkpoint"])
def test_non_top_level_runs_get_instructions_but_never_memory_or_tools(run_api, make_run, alice, files, kind):
    ctx = _context(run_api, make_run(alice, kind=kind))
    body = json.dumps(ctx)
    assert "MARK-AGENTS" in body and "MARK-USER" in body
    assert "MARK-MEMORY" not in body
    assert ctx["tools"] == [] and ctx["memory_enabled"] is False
    assert _section(ctx, "memory") is None


def test_resume_run_gets_memory(run_api, make_run, alice, files):
    assert "MARK-MEMORY" in json.dumps(_context(run_api, make_run(alice, kind="resume")))


def test_memory_switch_off_removes_memory_and_tools_and_tool_refuses(run_api, make_run, alice, files, workspace_root):
    handle = make_run(alice)
    services.user_settings_update(user=alice, enable_memory=False)
    ctx = _context(run_api, handle)
    assert "MARK-MEMORY" not in json.dumps(ctx)
    assert ctx["tools"] == [] and ctx["memory_enabled"] is False
    assert "MARK-AGENTS" in json.dumps(ctx)
    before = memory_path(workspace_root, alice).read_bytes()
    response = run_api(handle.token).post(
        f"/api/runs/{handle.id}/tools/remember_memory", {"content": "x"}, format="json"
    )
    assert (response.status_code, response.json()["error"]["code"]) == (403, "memory_disabled")
    assert memory_path(workspace_root, alice).read_bytes() == before


def test_memory_is_read_fresh_at_each_assembly(run_api, make_run, alice, files):
    handle = make_run(alice)
    assert "MARK-MEMORY" in json.dumps(_context(run_api, handle))
    services.workspace_file_write(user=alice, name="MEMORY.md", content="MARK-CHANGED")
    ctx = _context(run_api, handle)
    assert "MARK-CHANGED" in json.dumps(ctx) and "MARK-MEMORY" not in json.dumps(ctx)


@pytest.mark.parametrize("content", ["", "  \n\n\t"])
def test_empty_memory_file_means_no_memory_section(run_api, make_run, alice, content):
    services.workspace_file_write(user=alice, name="MEMORY.md", content=content)
    ctx = _context(run_api, make_run(alice))
    assert _section(ctx, "memory") is None
    assert ctx["memory_enabled"] is True  # the tools are still offered so the file can be recreated


def test_missing_files_mean_no_sections(run_api, make_run, alice):
    ctx = _context(run_api, make_run(alice))
    assert ctx["sections"] == []


def test_memory_text_is_cut_at_24_kib_on_a_code_point_boundary(run_api, make_run, alice):
    services.workspace_file_write(user=alice, name="MEMORY.md", content="记忆🙂" * 10000)  # ~70 KB
    content = _section(_context(run_api, make_run(alice)), "memory")["content"]
    inner = "\n".join(block_parts(content)[2])  # the content lines, marks included
    size = len(inner.encode("utf-8"))
    assert MEMORY_CONTEXT_BYTES - 4 < size <= MEMORY_CONTEXT_BYTES
    assert inner.endswith("…[truncated]")
    assert "\ufffd" not in inner


def test_memory_just_under_the_limit_is_not_cut(run_api, make_run, alice):
    # The budget counts the data mark of the (one) line.
    text = "a" * (MEMORY_CONTEXT_BYTES - len(DATA_MARK.encode()))
    services.workspace_file_write(user=alice, name="MEMORY.md", content=text)
    content = _section(_context(run_api, make_run(alice)), "memory")["content"]
    assert block_lines(content) == [text] and "[truncated]" not in content
    services.workspace_file_write(user=alice, name="MEMORY.md", content=text + "b")
    content = _section(_context(run_api, make_run(alice)), "memory")["content"]
    assert block_lines(content)[-1].endswith("…[truncated]")


def test_symlinked_memory_file_is_not_followed_in_context(run_api, make_run, alice, workspace_root, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("MARK-OUTSIDE-SECRET")
    path = memory_path(workspace_root, alice)
    path.parent.mkdir(parents=True)
    path.symlink_to(secret)
    ctx = _context(run_api, make_run(alice))
    assert "MARK-OUTSIDE-SECRET" not in json.dumps(ctx)
    assert "workspace_file_unsafe:MEMORY.md" in ctx["warnings"]


def test_tool_schemas_expose_no_identity_or_path_parameters(run_api, make_run, alice):
    tools = _context(run_api, make_run(alice))["tools"]
    for tool in tools:
        params = set(tool["parameters"]["properties"])
        assert not params & FORBIDDEN_PARAMS, (tool["name"], params)
        assert tool["parameters"]["additionalProperties"] is False


def test_other_users_memory_never_appears(run_api, make_run, alice, mallory, files):
    ctx = _context(run_api, make_run(mallory))
    assert "MARK" not in json.dumps(ctx)


def test_finished_run_gets_no_context(run_api, make_run, alice, files):
    handle = make_run(alice)
    run_api(handle.token).post(f"/api/runs/{handle.id}/finish", {"status": "completed"}, format="json")
    response = run_api(handle.token).get(f"/api/runs/{handle.id}/context")
    assert (response.status_code, response.json()["error"]["code"]) == (403, "run_not_running")
    assert "MARK" not in response.content.decode()


@pytest.mark.parametrize("round_value", ["0", "-1", "x", "1.5"])
def test_bad_round_is_refused(run_api, make_run, alice, round_value):
    handle = make_run(alice)
    response = run_api(handle.token).get(f"/api/runs/{handle.id}/context", {"round": round_value})
    assert response.status_code == 400


def test_oversize_query_is_refused(run_api, make_run, alice):
    handle = make_run(alice)
    assert run_api(handle.token).get(f"/api/runs/{handle.id}/context", {"query": "q" * 5000}).status_code == 400


# --- extension hooks ------------------------------------------------------------------------


def test_identity_injection_replaces_prompt_and_goal_copies_only(run_api, make_run, alice, monkeypatch):
    handle = make_run(alice, prompt="original prompt", goal="original goal")
    seen = {}

    def inject(*, run, round_number):
        seen.update(run=run.pk, round=round_number)
        return Injection(prompt="[identity]\n" + run.prompt, goal="[identity]\n" + run.goal, block="[identity]")

    monkeypatch.setattr(injection, "identity_injection_for_run", inject)
    ctx = _context(run_api, handle, round=3)
    assert seen == {"run": handle.id, "round": 3}
    assert ctx["prompt"] == "[identity]\noriginal prompt" and ctx["goal"] == "[identity]\noriginal goal"
    stored = AgentRun.objects.get(pk=handle.id)
    assert (stored.prompt, stored.goal) == ("original prompt", "original goal")


def test_round_defaults_to_one(run_api, make_run, alice, monkeypatch):
    rounds = []
    monkeypatch.setattr(
        injection, "identity_injection_for_run", lambda *, run, round_number: rounds.append(round_number)
    )
    _context(run_api, make_run(alice))
    assert rounds == [1]


def test_identity_injection_failure_is_fail_open_and_logged(run_api, make_run, alice, files, monkeypatch, caplog):
    def broken(*, run, round_number):
        raise RuntimeError("identity store down")

    monkeypatch.setattr(injection, "identity_injection_for_run", broken)
    with caplog.at_level(logging.ERROR, logger="memory_app.context"):
        ctx = _context(run_api, make_run(alice, prompt="plain prompt"))
    assert ctx["warnings"] == ["identity_memory_unavailable"]
    assert ctx["prompt"] == "plain prompt"
    assert "MARK-MEMORY" in json.dumps(ctx)  # the rest of the context is intact
    assert any("identity" in record.getMessage() for record in caplog.records)


def test_scoped_items_section_is_added_as_low_trust(run_api, make_run, alice, monkeypatch):
    calls = []

    def scoped(*, run, query):
        calls.append(query)
        return "- chat fact MARK-SCOPED", []

    monkeypatch.setattr(scoped_context, "scoped_items", scoped)
    ctx = _context(run_api, make_run(alice), query="what about it")
    assert calls == ["what about it"]
    assert _section(ctx, "scoped_memory") == {
        "name": "scoped_memory",
        "trust": "low",
        "content": "- chat fact MARK-SCOPED",
    }


def test_no_scoped_section_when_hook_returns_nothing(run_api, make_run, alice):
    assert _section(_context(run_api, make_run(alice)), "scoped_memory") is None
