"""Real parallel connections on PostgreSQL: the per-user lock, the run row lock and the
conditional claim must hold when many workers race."""

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone
from rest_framework.test import APIClient

from config.errors import Conflict
from memory_app.notes import selectors, workspace
from memory_app.notes import services as notes_services
from memory_app.notes.locks import LockFailed, user_lock_acquire, user_lock_key
from memory_app.runs import leases, tools
from memory_app.runs import services as run_services
from memory_app.runs.models import AgentRun
from tests.memory_app.runs.helpers import memory_path

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]


def _in_thread(fn):
    """Run ``fn`` on its own database connection, closed afterwards."""

    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        finally:
            connections.close_all()

    return wrapper


def _outcome(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)["result"]
    except Conflict:
        return "conflict"


def test_parallel_remember_calls_for_one_user_lose_nothing(make_run, alice, workspace_root):
    notes_services.workspace_file_write(
        user=alice, name="MEMORY.md", content="# Memory\n" + "".join(f"- old-{i}\n" for i in range(6))
    )
    handles = [make_run(alice, request_id=f"req-{i}") for i in range(3)]
    credentials = [h.credential for h in handles]
    jobs = [("append", f"distinct fact {i} 事实{i}", None) for i in range(20)]
    jobs += [("append", "shared fact 共同", None) for _ in range(8)]
    jobs += [("replace", f"- new-{i}", f"- old-{i}") for i in range(6)]
    barrier = threading.Barrier(len(jobs))

    @_in_thread
    def work(index, job):
        _, content, replaces = job
        barrier.wait(timeout=30)
        return _outcome(tools.remember_memory, credential=credentials[index % 3], content=content, replaces=replaces)

    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        results = list(pool.map(work, range(len(jobs)), jobs))

    text = memory_path(workspace_root, alice).read_text("utf-8")
    lines = Counter(text.splitlines())
    for i in range(20):
        assert lines[f"distinct fact {i} 事实{i}"] == 1
    assert lines["shared fact 共同"] == 1
    for i in range(6):
        assert lines[f"- new-{i}"] == 1 and lines[f"- old-{i}"] == 0
    assert lines["# Memory"] == 1
    assert sum(lines.values()) == 1 + 20 + 1 + 6  # nothing torn, nothing extra
    assert Counter(results) == Counter({"appended": 21, "unchanged": 7, "replaced": 6})
    assert [p.name for p in memory_path(workspace_root, alice).parent.iterdir() if p.name.endswith(".tmp")] == []


def test_parallel_http_tool_calls_for_one_user(make_run, alice, workspace_root):
    handle = make_run(alice)
    count = 16
    barrier = threading.Barrier(count)

    @_in_thread
    def work(i):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Run {handle.token}")
        barrier.wait(timeout=30)
        response = client.post(
            f"/api/runs/{handle.id}/tools/remember_memory", {"content": f"http fact {i % 8}"}, format="json"
        )
        return response.status_code, response.json()["result"]

    with ThreadPoolExecutor(max_workers=count) as pool:
        results = list(pool.map(work, range(count)))
    assert Counter(results) == Counter({(200, "appended"): 8, (200, "unchanged"): 8})
    lines = memory_path(workspace_root, alice).read_text().splitlines()
    assert sorted(lines) == sorted(f"http fact {i}" for i in range(8))


def _advisory_waiters(user_id: int) -> int:
    key = user_lock_key(user_id)
    classid, objid = (key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = %s AND objid = %s",
            [classid, objid],
        )
        return cursor.fetchone()[0]


def test_user_lock_serializes_one_user_but_not_different_users(make_run, alice, bob, workspace_root):
    alice_run, bob_run = make_run(alice), make_run(bob)
    alice_cred, bob_cred = alice_run.credential, bob_run.credential
    holding, release = threading.Event(), threading.Event()

    @_in_thread
    def hold_alice_lock():
        with transaction.atomic():
            user_lock_acquire(user_id=alice.pk)
            holding.set()
            assert release.wait(timeout=30)

    @_in_thread
    def write(credential, content):
        return tools.remember_memory(credential=credential, content=content)["result"]

    with ThreadPoolExecutor(max_workers=3) as pool:
        holder = pool.submit(hold_alice_lock)
        assert holding.wait(timeout=10)
        # Bob's write does not wait for Alice's lock.
        assert pool.submit(write, bob_cred, "bob fact").result(timeout=10) == "appended"
        # Alice's write queues behind the lock until it is released.
        alice_write = pool.submit(write, alice_cred, "alice fact")
        deadline = time.monotonic() + 10
        while _advisory_waiters(alice.pk) == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _advisory_waiters(alice.pk) == 1
        assert not alice_write.done()
        assert not memory_path(workspace_root, alice).exists()
        release.set()
        holder.result(timeout=10)
        assert alice_write.result(timeout=10) == "appended"
    assert memory_path(workspace_root, alice).read_text() == "alice fact\n"
    assert memory_path(workspace_root, bob).read_text() == "bob fact\n"


def test_user_edit_and_tool_write_do_not_overwrite_each_other(make_run, alice, workspace_root):
    """The user's editor (read, edit, save with the version it read) races the agent's tool:
    a save based on a stale version is refused and retried, so neither side loses a line."""
    handle = make_run(alice)
    credential = handle.credential
    barrier = threading.Barrier(2)

    @_in_thread
    def tool_writes():
        barrier.wait(timeout=30)
        return [tools.remember_memory(credential=credential, content=f"tool fact {i}")["result"] for i in range(10)]

    @_in_thread
    def user_edits():
        barrier.wait(timeout=30)
        conflicts = 0
        for i in range(10):
            while True:
                opened = selectors.workspace_file_get(user=alice, name="MEMORY.md")
                try:
                    notes_services.workspace_file_write(
                        user=alice,
                        name="MEMORY.md",
                        content=opened.content + f"user line {i}\n",
                        base_sha256=opened.sha256,
                    )
                    break
                except workspace.WorkspaceEditConflict:
                    conflicts += 1
        return conflicts

    with ThreadPoolExecutor(max_workers=2) as pool:
        a, b = pool.submit(tool_writes), pool.submit(user_edits)
        assert a.result(timeout=60) == ["appended"] * 10
        b.result(timeout=60)
    lines = Counter(memory_path(workspace_root, alice).read_text().splitlines())
    assert all(lines[f"tool fact {i}"] == 1 and lines[f"user line {i}"] == 1 for i in range(10))


def test_switch_off_races_with_writes_and_no_write_lands_after_it(make_run, alice, workspace_root):
    handle = make_run(alice)
    credential = handle.credential
    count = 12
    barrier = threading.Barrier(count + 1)

    @_in_thread
    def write(i):
        barrier.wait(timeout=30)
        try:
            return tools.remember_memory(credential=credential, content=f"fact {i}")["result"]
        except tools.MemoryDisabled:
            return "disabled"

    @_in_thread
    def switch_off():
        barrier.wait(timeout=30)
        notes_services.user_settings_update(user=alice, enable_memory=False)
        return memory_path(workspace_root, alice).read_text() if memory_path(workspace_root, alice).exists() else ""

    with ThreadPoolExecutor(max_workers=count + 1) as pool:
        writes = [pool.submit(write, i) for i in range(count)]
        off = pool.submit(switch_off)
        results = [w.result(timeout=60) for w in writes]
        at_switch = off.result(timeout=60)
    final = memory_path(workspace_root, alice).read_text() if memory_path(workspace_root, alice).exists() else ""
    # Writes serialized after the switch were refused, so the file did not change after it.
    assert final == at_switch
    assert results.count("appended") == len(final.splitlines())
    assert set(results) <= {"appended", "disabled"}


def test_racing_claims_have_exactly_one_winner(make_run, alice, svc):
    handle = make_run(alice)
    AgentRun.objects.filter(pk=handle.id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    count = 10
    barrier = threading.Barrier(count)

    @_in_thread
    def claim(i):
        barrier.wait(timeout=30)
        try:
            return run_services.run_claim(actor=svc, run_id=handle.id, worker_id=f"worker-{i}").run_token
        except Conflict:
            return None

    with ThreadPoolExecutor(max_workers=count) as pool:
        tokens = list(pool.map(claim, range(count)))
    winners = [t for t in tokens if t]
    assert len(winners) == 1
    run = AgentRun.objects.get(pk=handle.id)
    assert run.lease_generation == 2 and leases.run_credential_from_token(winners[0]) is not None
    assert leases.run_credential_from_token(handle.token) is None


def test_lock_timeout_refuses_and_keeps_the_file(make_run, alice, workspace_root, monkeypatch):
    """A real lock failure (the lock stays held past the timeout) is a refusal, not a lock-free write."""
    from memory_app.notes import locks

    notes_services.workspace_file_write(user=alice, name="MEMORY.md", content="- keep me\n")
    before = memory_path(workspace_root, alice).read_bytes()
    credential = make_run(alice).credential
    monkeypatch.setattr(locks, "LOCK_TIMEOUT_MS", 200)
    holding, release = threading.Event(), threading.Event()

    @_in_thread
    def hold():
        with transaction.atomic():
            user_lock_acquire(user_id=alice.pk)
            holding.set()
            assert release.wait(timeout=30)

    with ThreadPoolExecutor(max_workers=1) as pool:
        holder = pool.submit(hold)
        assert holding.wait(timeout=10)
        try:
            with pytest.raises(LockFailed) as info:
                tools.remember_memory(credential=credential, content="must not land")
        finally:
            release.set()
            holder.result(timeout=10)
    assert info.value.code == "memory_lock_failed"
    assert memory_path(workspace_root, alice).read_bytes() == before


def test_parallel_context_calls_count_exactly_one_first_round(make_run, alice):
    """Runtimes that never send ``round`` and ask for context from several threads at once:
    the server's count gives round 1 to exactly one call, and no round is lost."""
    from memory_app.context.assembly import run_context_build

    handle = make_run(alice)
    calls = 12
    barrier = threading.Barrier(calls)

    @_in_thread
    def work(_):
        barrier.wait(timeout=30)
        return run_context_build(credential=handle.credential)["round"]

    with ThreadPoolExecutor(max_workers=calls) as pool:
        rounds = sorted(pool.map(work, range(calls)))
    assert rounds == list(range(1, calls + 1))
    assert AgentRun.objects.get(pk=handle.id).context_rounds == calls
