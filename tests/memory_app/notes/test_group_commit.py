"""Group commit of notes-file writes (docs/runs.md, "Group commit"): writes that queue behind a
batch in progress are applied together, in order, with one publish; each caller gets its own
outcome, and nobody is answered before the publish containing their write."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.db import connections, transaction
from django.utils import timezone
from prometheus_client import REGISTRY

from memory_app.notes import lines as lines_rules
from memory_app.notes import services, workspace
from memory_app.notes.groupcommit import GroupCommitter
from memory_app.notes.locks import user_lock_acquire
from memory_app.notes.models import WorkspaceChange
from memory_app.notes.services import LineEdit
from memory_app.runs import leases, tools
from memory_app.runs.models import AgentRun
from tests.memory_app.runs.helpers import memory_path


def _wait_for(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.005)


class _Gate:
    """An ``apply_batch`` that records its batches and holds the first one until released."""

    def __init__(self, fail_on=None):
        self.batches, self.release, self.entered = [], threading.Event(), threading.Event()
        self.fail_on = fail_on

    def __call__(self, key, payloads):
        self.batches.append((key, list(payloads)))
        if len(self.batches) == 1:
            self.entered.set()
            assert self.release.wait(timeout=10)
        if self.fail_on is not None and self.fail_on in payloads:
            raise RuntimeError("publish failed")
        return [ValueError(p) if str(p).startswith("bad") else f"done {p}" for p in payloads]


def _queued(committer, key):
    queue = committer._queues.get(key)
    return len(queue.pending) if queue is not None else 0


def _submit_in_order(pool, committer, key, payloads):
    """Submit one by one, each after the previous one is queued, so the queue order is known."""
    futures = []
    for payload in payloads:
        before = _queued(committer, key)
        futures.append(pool.submit(committer.submit, key, payload))
        _wait_for(lambda before=before: _queued(committer, key) == before + 1)
    return futures


def test_writes_queued_behind_a_batch_are_applied_together_in_order():
    gate = _Gate()
    committer = GroupCommitter(gate)
    with ThreadPoolExecutor(max_workers=8) as pool:
        first = pool.submit(committer.submit, "u1", "a")
        assert gate.entered.wait(timeout=10)
        rest = _submit_in_order(pool, committer, "u1", ["b", "bad c", "d", "e"])
        gate.release.set()
        assert first.result(timeout=10) == "done a"
        assert [f.result(timeout=10) if i != 1 else None for i, f in enumerate(rest)] == [
            "done b",
            None,
            "done d",
            "done e",
        ]
        with pytest.raises(ValueError, match="bad c"):
            rest[1].result(timeout=10)
    assert gate.batches == [("u1", ["a"]), ("u1", ["b", "bad c", "d", "e"])]
    assert committer._queues == {}


def test_other_keys_are_not_held_by_a_batch_in_progress():
    gate = _Gate()
    committer = GroupCommitter(gate)
    with ThreadPoolExecutor(max_workers=2) as pool:
        held = pool.submit(committer.submit, "u1", "a")
        assert gate.entered.wait(timeout=10)
        assert pool.submit(committer.submit, "u2", "x").result(timeout=10) == "done x"
        gate.release.set()
        assert held.result(timeout=10) == "done a"


def test_a_failed_batch_fails_every_write_of_it_with_its_own_error_object():
    gate = _Gate(fail_on="c")
    committer = GroupCommitter(gate)
    with ThreadPoolExecutor(max_workers=8) as pool:
        first = pool.submit(committer.submit, "u1", "a")
        assert gate.entered.wait(timeout=10)
        rest = _submit_in_order(pool, committer, "u1", ["b", "c", "d"])
        gate.release.set()
        assert first.result(timeout=10) == "done a"  # its batch was published before
        errors = []
        for future in rest:
            with pytest.raises(RuntimeError, match="publish failed"):
                future.result(timeout=10)
            errors.append(future.exception())
    assert len({id(error) for error in errors}) == 3
    # The next write after a failed batch starts a fresh one.
    assert committer.submit("u1", "f") == "done f"


def test_batches_are_bounded_and_every_write_is_answered():
    gate = _Gate()
    committer = GroupCommitter(gate, max_batch=2)
    with ThreadPoolExecutor(max_workers=8) as pool:
        first = pool.submit(committer.submit, "u1", 0)
        assert gate.entered.wait(timeout=10)
        rest = _submit_in_order(pool, committer, "u1", [1, 2, 3, 4, 5])
        gate.release.set()
        assert [f.result(timeout=10) for f in [first, *rest]] == [f"done {i}" for i in range(6)]
    assert [payloads for _, payloads in gate.batches] == [[0], [1, 2], [3, 4], [5]]


# --- remember_memory through the group commit (PostgreSQL: real parallel connections) -------


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_remember_calls_queued_behind_the_lock_share_one_publish(make_run, alice, workspace_root, monkeypatch):
    services.workspace_file_write(user=alice, name="MEMORY.md", content="# Memory\n")
    changes_before = WorkspaceChange.objects.filter(user=alice).count()
    one, two = make_run(alice, request_id="r1"), make_run(alice, request_id="r2")
    expired = make_run(alice, request_id="r3")
    AgentRun.objects.filter(pk=expired.id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))

    published = []
    real_publish = workspace.Workspace.replace_authorized_file

    def counting_publish(self, name, content):
        real_publish(self, name, content)  # written, fsynced, renamed, directory fsynced
        published.append(content.decode())

    monkeypatch.setattr(workspace.Workspace, "replace_authorized_file", counting_publish)
    holding, release = threading.Event(), threading.Event()

    def hold():
        try:
            with transaction.atomic():
                user_lock_acquire(user_id=alice.pk)
                holding.set()
                assert release.wait(timeout=30)
        finally:
            connections.close_all()

    def remember(credential, content, replaces=None):
        try:
            answer = tools.remember_memory(credential=credential, content=content, replaces=replaces)
        except tools.DomainError as exc:
            answer = {"result": exc.code}
        finally:
            connections.close_all()
        # Answered only after a publish that contains the write.
        answer["published"] = any(content in text for text in published)
        return answer

    committer = tools._notes_editor.committer
    batches_before = {
        name: REGISTRY.get_sample_value(f"memsvc_notes_write_batch_size_{name}", labels) or 0.0
        for name, labels in (("bucket", {"le": "1.0"}), ("count", {}), ("sum", {}))
    }
    with ThreadPoolExecutor(max_workers=8) as pool:
        holder = pool.submit(hold)
        assert holding.wait(timeout=10)
        leader = pool.submit(remember, one.credential, "first fact")
        _wait_for(lambda: alice.pk in committer._queues and committer._queues[alice.pk].busy)
        jobs = [
            (two.credential, "second fact", None),
            (two.credential, "first fact", None),  # already in the file once the first batch lands
            (expired.credential, "never written", None),
            (one.credential, "corrected", "not in the file"),
            (two.credential, "third fact", None),
        ]
        followers = []
        for job in jobs:
            before = _queued(committer, alice.pk)
            followers.append(pool.submit(remember, *job))
            _wait_for(lambda before=before: _queued(committer, alice.pk) == before + 1)
        release.set()
        holder.result(timeout=10)
        answers = [leader.result(timeout=20)] + [f.result(timeout=20) for f in followers]

    assert [a["result"] for a in answers] == [
        "appended",
        "appended",
        "unchanged",
        leases.LeaseLost.code,
        "conflict",
        "appended",
    ]
    assert all(a["published"] for a in answers if a["result"] in ("appended", "unchanged"))
    text = memory_path(workspace_root, alice).read_text("utf-8")
    assert text == "# Memory\nfirst fact\nsecond fact\nthird fact\n"
    assert len(published) == 2 and published[-1] == text  # the leader alone, then one batch of five
    # The batch-size histogram saw two group commits: the leader alone, then five calls.
    seen = {
        name: REGISTRY.get_sample_value(f"memsvc_notes_write_batch_size_{name}", labels) - batches_before[name]
        for name, labels in (("bucket", {"le": "1.0"}), ("count", {}), ("sum", {}))
    }
    assert seen == {"bucket": 1, "count": 2, "sum": 6}
    changes = list(WorkspaceChange.objects.filter(user=alice).order_by("seq"))[changes_before:]
    assert [(c.action, c.run_id, c.lines_added) for c in changes] == [
        ("append", one.id, 1),
        ("append", two.id, 1),
        ("append", two.id, 1),
    ]
    seqs = [c.seq for c in changes]
    assert seqs == list(range(seqs[0], seqs[0] + 3))
    assert changes[1].before_sha256 == changes[0].after_sha256 and changes[2].before_sha256 == changes[1].after_sha256
    assert [p.name for p in memory_path(workspace_root, alice).parent.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.django_db(transaction=True)
def test_a_failed_publish_refuses_the_whole_batch_and_records_nothing(make_run, alice, workspace_root, monkeypatch):
    services.workspace_file_write(user=alice, name="MEMORY.md", content="# Memory\n")
    before = memory_path(workspace_root, alice).read_bytes()
    changes_before = WorkspaceChange.objects.filter(user=alice).count()
    credential = make_run(alice).credential

    def failing_publish(self, name, content):
        raise workspace.WorkspaceWriteFailed("Publishing MEMORY.md failed: I/O error.")

    monkeypatch.setattr(workspace.Workspace, "replace_authorized_file", failing_publish)
    edits = [LineEdit(f"fact {i}", None, caller=(credential, None)) for i in range(3)]
    with pytest.raises(workspace.WorkspaceWriteFailed):
        tools._notes_editor.apply_batch(alice.pk, edits)
    assert memory_path(workspace_root, alice).read_bytes() == before
    assert WorkspaceChange.objects.filter(user=alice).count() == changes_before


def test_the_kept_normalized_lines_are_those_of_the_new_text():
    """An append extends the file's normalized lines instead of normalizing it again; the
    result must equal a full normalization, whatever the file ends with."""
    import random

    rng = random.Random(20261130)
    pieces = ["- Likes tea", "* likes TEA", "1. Walks", "  ", "咖啡 每天", "end\r", "x\u3000y", "", "- "]
    for _ in range(300):
        current = "\n".join(rng.choice(pieces) for _ in range(rng.randint(0, 6))) + rng.choice(["", "\n", "\r\n"])
        content = "\n".join(rng.choice(pieces[:7]) for _ in range(rng.randint(1, 3))).strip() or "note"
        lines = lines_rules.normalized_lines(current)
        result, updated, new_lines = lines_rules.line_edit_apply(
            current=current, lines=lines, content=content, replaces=None
        )
        expected_text = updated if updated is not None else current
        assert new_lines == lines_rules.normalized_lines(expected_text), (current, content)
        # "unchanged" exactly when the content's lines already appear consecutively.
        wanted = lines_rules.normalized_lines(content)
        size = len(wanted)
        present = any(lines[i : i + size] == wanted for i in range(len(lines) - size + 1))
        assert (result == "unchanged") is present
