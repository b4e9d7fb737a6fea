from datetime import timedelta

import pytest
from django.db import DatabaseError
from django.utils import timezone

from config.errors import Conflict
from memory_app.notes import services as notes_services
from memory_app.notes.models import UserSettings
from memory_app.notes.workspace import Workspace
from memory_app.runs import leases, tools
from memory_app.runs import services as run_services
from memory_app.runs.models import AgentRun
from tests.memory_app.runs.helpers import memory_path

pytestmark = pytest.mark.django_db

URL = "/api/runs/{}/tools/remember_memory"


def _remember(run_api, handle, body, headers=None):
    return run_api(handle.token).post(URL.format(handle.id), body, format="json", **(headers or {}))


def _seed(workspace_root, user, text="# Memory\n- likes tea\n"):
    notes_services.workspace_file_write(user=user, name="MEMORY.md", content=text)
    return memory_path(workspace_root, user).read_bytes()


def test_append_then_unchanged_then_replace(run_api, make_run, alice, workspace_root):
    handle = make_run(alice)
    response = _remember(run_api, handle, {"content": "Prefers 中文 replies 🙂"})
    assert response.status_code == 200, response.content
    assert response.json()["result"] == "appended"
    assert memory_path(workspace_root, alice).read_text("utf-8") == "Prefers 中文 replies 🙂\n"
    # Normalized duplicate: case, whitespace and a list bullet do not matter.
    again = _remember(run_api, handle, {"content": "-   prefers 中文   REPLIES 🙂 "})
    assert again.json()["result"] == "unchanged"
    replaced = _remember(run_api, handle, {"content": "Prefers English replies", "replaces": "Prefers 中文 replies 🙂"})
    assert replaced.json()["result"] == "replaced", replaced.content
    assert memory_path(workspace_root, alice).read_text("utf-8") == "Prefers English replies\n"


def test_append_keeps_existing_text_and_adds_newline(run_api, make_run, alice, workspace_root):
    notes_services.workspace_file_write(user=alice, name="MEMORY.md", content="# Memory\n- likes tea")
    _remember(run_api, make_run(alice), {"content": "- owns a cat"})
    assert memory_path(workspace_root, alice).read_text() == "# Memory\n- likes tea\n- owns a cat\n"


def test_missing_or_empty_file_is_recreated_by_append(run_api, make_run, alice, workspace_root):
    notes_services.workspace_file_write(user=alice, name="MEMORY.md", content="")
    handle = make_run(alice)
    assert _remember(run_api, handle, {"content": "first"}).json()["result"] == "appended"
    notes_services.workspace_file_delete(user=alice, name="MEMORY.md")
    assert _remember(run_api, handle, {"content": "second"}).json()["result"] == "appended"
    assert memory_path(workspace_root, alice).read_text() == "second\n"


@pytest.mark.parametrize("replaces,matches", [("coffee", "0"), ("tea", "many")])
def test_replace_with_zero_or_many_matches_is_a_conflict_and_file_untouched(
    run_api, make_run, alice, workspace_root, replaces, matches
):
    before = _seed(workspace_root, alice, "- likes tea\n- green tea daily\n")
    response = _remember(run_api, make_run(alice), {"content": "x", "replaces": replaces})
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "conflict"
    assert response.json()["error"]["details"]["matches"] == matches
    assert memory_path(workspace_root, alice).read_bytes() == before


def test_replace_counts_overlapping_occurrences(run_api, make_run, alice, workspace_root):
    before = _seed(workspace_root, alice, "aaa\n")
    assert _remember(run_api, make_run(alice), {"content": "b", "replaces": "aa"}).status_code == 409
    assert memory_path(workspace_root, alice).read_bytes() == before


def test_content_limit_is_4_kib_of_utf8(run_api, make_run, alice, workspace_root):
    handle = make_run(alice)
    exact = "字" * (4096 // 3) + "a"  # 4096 bytes
    assert len(exact.encode()) == 4096
    assert _remember(run_api, handle, {"content": exact}).json()["result"] == "appended"
    before = memory_path(workspace_root, alice).read_bytes()
    over = "字" * (4096 // 3) + "ab"  # 4097 bytes
    for body in ({"content": over}, {"content": "ok", "replaces": over}):
        response = _remember(run_api, handle, body)
        assert (response.status_code, response.json()["error"]["code"]) == (400, "too_large")
    assert memory_path(workspace_root, alice).read_bytes() == before


def test_result_file_may_not_exceed_128_kib(run_api, make_run, alice, workspace_root):
    before = _seed(workspace_root, alice, "x" * (128 * 1024 - 10) + "\n")
    response = _remember(run_api, make_run(alice), {"content": "this does not fit"})
    assert (response.status_code, response.json()["error"]["code"]) == (400, "memory_file_too_large")
    assert memory_path(workspace_root, alice).read_bytes() == before


def test_oversize_source_file_is_refused(run_api, make_run, alice, workspace_root):
    path = memory_path(workspace_root, alice)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"y" * (128 * 1024 + 1))
    response = _remember(run_api, make_run(alice), {"content": "x"})
    assert response.json()["error"]["code"] == "memory_file_too_large"
    assert path.read_bytes() == b"y" * (128 * 1024 + 1)


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"content": ""},
        {"content": "   "},
        {"content": 5},
        {"content": "a\x00"},
        {"content": "x", "replaces": ""},
        {"content": "x", "path": "/etc/passwd"},
        {"content": "x", "uid": 1},
        {"content": "x", "user_id": 1},
        [],
    ],
)
def test_malformed_arguments_are_refused(run_api, make_run, alice, workspace_root, body):
    before = _seed(workspace_root, alice)
    response = _remember(run_api, make_run(alice), body)
    assert response.status_code == 400
    assert memory_path(workspace_root, alice).read_bytes() == before


# --- the fail-closed matrix: every refusal keeps the file byte-identical --------------------


def _assert_refused(response, status, code, workspace_root, user, before):
    assert response.status_code == status, response.content
    assert response.json()["error"]["code"] == code
    assert memory_path(workspace_root, user).read_bytes() == before


def test_missing_token_is_refused(run_api, make_run, alice, workspace_root):
    before, handle = _seed(workspace_root, alice), make_run(alice)
    response = run_api(None).post(URL.format(handle.id), {"content": "x"}, format="json")
    _assert_refused(response, 401, "not_authenticated", workspace_root, alice, before)


def test_forged_token_is_refused(run_api, make_run, alice, workspace_root):
    before, handle = _seed(workspace_root, alice), make_run(alice)
    forged = handle.token[:-4] + ("AAAA" if not handle.token.endswith("AAAA") else "BBBB")
    response = run_api(forged).post(URL.format(handle.id), {"content": "x"}, format="json")
    _assert_refused(response, 401, "authentication_failed", workspace_root, alice, before)


def test_other_users_run_is_refused(run_api, make_run, alice, mallory, workspace_root):
    before = _seed(workspace_root, alice)
    alice_run, mallory_run = make_run(alice), make_run(mallory)
    # Mallory's token aimed at Alice's run.
    response = run_api(mallory_run.token).post(URL.format(alice_run.id), {"content": "x"}, format="json")
    _assert_refused(response, 403, "run_not_authorized", workspace_root, alice, before)
    assert not memory_path(workspace_root, mallory).exists()


def test_subagent_run_is_refused(run_api, make_run, alice, workspace_root):
    before = _seed(workspace_root, alice)
    response = _remember(run_api, make_run(alice, kind="subagent"), {"content": "x"})
    _assert_refused(response, 403, "not_top_level_run", workspace_root, alice, before)


@pytest.mark.parametrize("kind", ["coordinator", "checkpoint"])
def test_other_non_top_level_runs_are_refused(run_api, make_run, alice, workspace_root, kind):
    before = _seed(workspace_root, alice)
    response = _remember(run_api, make_run(alice, kind=kind), {"content": "x"})
    _assert_refused(response, 403, "not_top_level_run", workspace_root, alice, before)


def test_resume_run_may_write(run_api, make_run, alice, workspace_root):
    assert _remember(run_api, make_run(alice, kind="resume"), {"content": "x"}).json()["result"] == "appended"


@pytest.mark.parametrize(
    "header,value",
    [
        ("HTTP_X_RUN_THREAD_ID", "thr_other"),
        ("HTTP_X_RUN_REQUEST_ID", "req-other"),
        ("HTTP_X_RUN_WORKER_ID", "w-other"),
    ],
)
def test_different_thread_request_or_worker_is_refused(run_api, make_run, alice, workspace_root, header, value):
    before, handle = _seed(workspace_root, alice), make_run(alice)
    response = _remember(run_api, handle, {"content": "x"}, {header: value})
    _assert_refused(response, 403, "run_context_mismatch", workspace_root, alice, before)


def test_matching_context_headers_are_accepted(run_api, make_run, alice, workspace_root):
    handle = make_run(alice)
    headers = {
        "HTTP_X_RUN_THREAD_ID": handle.run.conversation_id,
        "HTTP_X_RUN_REQUEST_ID": "req-1",
        "HTTP_X_RUN_WORKER_ID": "w1",
    }
    assert _remember(run_api, handle, {"content": "x"}, headers).json()["result"] == "appended"


@pytest.mark.parametrize("status", ["completed", "failed", "cancelled"])
def test_finished_run_is_refused(run_api, make_run, alice, workspace_root, status):
    before, handle = _seed(workspace_root, alice), make_run(alice)
    run_services.run_finish(credential=handle.credential, status=status)
    response = _remember(run_api, handle, {"content": "x"})
    _assert_refused(response, 403, "run_not_running", workspace_root, alice, before)


def test_expired_lease_is_refused(run_api, make_run, alice, workspace_root):
    before, handle = _seed(workspace_root, alice), make_run(alice)
    AgentRun.objects.filter(pk=handle.id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    response = _remember(run_api, handle, {"content": "x"})
    _assert_refused(response, 403, "lease_lost", workspace_root, alice, before)


def test_taken_over_lease_is_refused(run_api, make_run, alice, svc, workspace_root):
    before, handle = _seed(workspace_root, alice), make_run(alice)
    AgentRun.objects.filter(pk=handle.id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    run_services.run_claim(actor=svc, run_id=handle.id, worker_id="w2")
    response = _remember(run_api, handle, {"content": "x"})
    _assert_refused(response, 401, "authentication_failed", workspace_root, alice, before)


def test_take_over_between_authentication_and_lock_is_refused(make_run, alice, svc, workspace_root):
    """The credential was valid when the request arrived; the claim lands before the lock."""
    before, handle = _seed(workspace_root, alice), make_run(alice)
    credential = handle.credential
    AgentRun.objects.filter(pk=handle.id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    run_services.run_claim(actor=svc, run_id=handle.id, worker_id="w2")
    with pytest.raises(leases.LeaseLost):
        tools.remember_memory(credential=credential, content="x")
    assert memory_path(workspace_root, alice).read_bytes() == before


def test_switch_turned_off_mid_run_is_refused(run_api, make_run, alice, workspace_root):
    before, handle = _seed(workspace_root, alice), make_run(alice)
    notes_services.user_settings_update(user=alice, enable_memory=False)
    response = _remember(run_api, handle, {"content": "x"})
    _assert_refused(response, 403, "memory_disabled", workspace_root, alice, before)
    assert UserSettings.objects.get(user=alice).enable_memory is False


def test_lock_failure_is_refused(run_api, make_run, alice, workspace_root, monkeypatch):
    before, handle = _seed(workspace_root, alice), make_run(alice)

    def broken(**kwargs):
        raise notes_services.LockFailed("lock service down")

    monkeypatch.setattr(notes_services, "user_lock_acquire", broken)  # the notes editor's lock
    response = _remember(run_api, handle, {"content": "x"})
    _assert_refused(response, 503, "memory_lock_failed", workspace_root, alice, before)


def test_database_failure_under_the_lock_is_refused(run_api, make_run, alice, workspace_root, monkeypatch):
    before, handle = _seed(workspace_root, alice), make_run(alice)

    def broken(**kwargs):
        raise DatabaseError("connection lost")

    monkeypatch.setattr(notes_services.history, "changes_record", broken)  # the write under the lock
    response = _remember(run_api, handle, {"content": "x"})
    _assert_refused(response, 503, "memory_lock_failed", workspace_root, alice, before)


def test_publish_failure_is_refused_and_old_file_kept(run_api, make_run, alice, workspace_root, monkeypatch):
    import os

    before, handle = _seed(workspace_root, alice), make_run(alice)
    real = os.rename
    monkeypatch.setattr(os, "rename", lambda *a, **k: (_ for _ in ()).throw(OSError(5, "I/O error")))
    response = _remember(run_api, handle, {"content": "x"})
    monkeypatch.setattr(os, "rename", real)
    _assert_refused(response, 503, "workspace_write_failed", workspace_root, alice, before)
    assert [p.name for p in memory_path(workspace_root, alice).parent.iterdir()] == ["MEMORY.md"]


def test_symlinked_memory_file_is_refused(run_api, make_run, alice, workspace_root, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    path = memory_path(workspace_root, alice)
    path.parent.mkdir(parents=True)
    path.symlink_to(victim)
    response = _remember(run_api, make_run(alice), {"content": "x"})
    assert (response.status_code, response.json()["error"]["code"]) == (409, "workspace_unsafe")
    assert victim.read_text() == "precious" and path.is_symlink()


def test_retry_after_crash_between_rename_and_response_converges(make_run, alice, workspace_root, monkeypatch):
    """The publish succeeded but the caller never saw the answer; the retry must not duplicate."""
    handle = make_run(alice)
    _seed(workspace_root, alice, "- old fact\n")
    real_publish = Workspace.replace_authorized_file

    def publish_then_crash(self, name, data):
        real_publish(self, name, data)
        raise KeyboardInterrupt("process died after rename")

    monkeypatch.setattr(Workspace, "replace_authorized_file", publish_then_crash)
    with pytest.raises(KeyboardInterrupt):
        tools.remember_memory(credential=handle.credential, content="new fact")
    with pytest.raises(KeyboardInterrupt):
        tools.remember_memory(credential=handle.credential, content="newer fact", replaces="old fact")
    monkeypatch.setattr(Workspace, "replace_authorized_file", real_publish)
    after_crash = memory_path(workspace_root, alice).read_text()
    assert after_crash == "- newer fact\nnew fact\n"
    assert tools.remember_memory(credential=handle.credential, content="new fact")["result"] == "unchanged"
    with pytest.raises(Conflict):
        tools.remember_memory(credential=handle.credential, content="newer fact", replaces="old fact")
    assert memory_path(workspace_root, alice).read_text() == after_crash


def test_unknown_tool_is_404(run_api, make_run, alice):
    handle = make_run(alice)
    response = run_api(handle.token).post(
        f"/api/runs/{handle.id}/tools/edit_file", {"path": "/etc/passwd"}, format="json"
    )
    assert (response.status_code, response.json()["error"]["code"]) == (404, "unknown_tool")


@pytest.mark.django_db(transaction=True)
def test_user_lock_needs_a_transaction(alice):
    from memory_app.notes.locks import LockFailed, user_lock_acquire, user_lock_key

    with pytest.raises(LockFailed):
        user_lock_acquire(user_id=alice.pk)
    keys = {user_lock_key(uid) for uid in range(1, 2000)}
    assert len(keys) == 1999 and all(-(2**63) <= k < 2**63 for k in keys)
