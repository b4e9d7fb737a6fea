import json
import sqlite3

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command
from django.db import connection

from memory_app.memories import services
from memory_app.memories.models import Memory, Status
from memory_app.scoped import search
from memory_app.scoped.consolidation import SYSTEM_USERNAME
from memory_app.scoped.migration import inspect_plan
from tests.factories import MemoryCandidateFactory

# Transactional: the SQLite backup API cannot copy a database inside an open write transaction.
pytestmark = pytest.mark.django_db(transaction=True)

A = "milky:private:10001"
B = "milky:private:20002"


def glob(admin, content, kind="preference", metadata=None, evidence=None):
    return services.memory_create(
        actor=admin, tier="global", kind=kind, content=content, metadata=metadata, evidence=evidence
    )


def entry_for(plan, memory):
    return next(e for e in plan["entries"] if e["item_id"] == memory.pk)


def run_inspect(tmp_path):
    path = tmp_path / "plan.json"
    call_command("migrate_memory_scope", "inspect", "--output", str(path))
    return path, json.loads(path.read_text())


def run_apply(path, *flags, tmp_path):
    call_command("migrate_memory_scope", "apply", "--plan", str(path), *flags, "--backup-dir", str(tmp_path / "bk"))


def approve(path, plan, *memories, target=None):
    for memory in memories:
        entry = entry_for(plan, memory)
        entry["approval"] = "approved"
        if target:
            entry["target_scope_id"] = target
    path.write_text(json.dumps(plan))


@pytest.fixture
def items(admin):
    return {
        "pref": glob(admin, "I like window seats", evidence={"session_id": f"{A}:cron:x"}),
        "fact_addr": glob(
            admin,
            "My dog is Bruno",
            kind="fact",
            metadata={"chat_address": {"platform": "milky", "target_type": "private", "target_id": "20002"}},
        ),
        "task_ctx": glob(
            admin,
            "Renew passport",
            kind="task",
            evidence={"message_context": {"channel": "milky", "chat_type": "private", "chat_id": "10001"}},
        ),
        "decision": glob(admin, "We deploy on Mondays", kind="decision", evidence={"session_id": A}),
        "no_clue": glob(admin, "I like jazz"),
        "legacy": glob(admin, "I like blues", evidence={"source_session_id": "milky:10001"}),
        "conflict": glob(admin, "I like opera", evidence={"session_id": A}, metadata={"from_chat_address": B}),
        "malformed": glob(admin, "I like rock", evidence={"session_id": "milky:private"}),
    }


def test_inspect_decisions_follow_the_rules(items, tmp_path):
    before = list(Memory.objects.order_by("pk").values_list("pk", "scope_type", "scope_id", "status", "updated_at"))
    _, plan = run_inspect(tmp_path)
    decided = {name: entry_for(plan, m)["decision"] for name, m in items.items()}
    assert decided == {
        "pref": "migrate",
        "fact_addr": "migrate",
        "task_ctx": "migrate",
        "decision": "keep",
        "no_clue": "keep",
        "legacy": "keep",
        "conflict": "manual_review",
        "malformed": "keep",
    }
    assert entry_for(plan, items["pref"])["target_scope_id"] == A
    assert entry_for(plan, items["fact_addr"])["target_scope_id"] == B
    assert entry_for(plan, items["task_ctx"])["target_scope_id"] == A
    assert entry_for(plan, items["conflict"])["candidate_scope_ids"] == [A, B]
    assert "no scope clue" in entry_for(plan, items["no_clue"])["reasons"][0]
    assert "legacy" in entry_for(plan, items["legacy"])["reasons"][0]
    assert all(e["approval"] == "pending" for e in plan["entries"])
    assert plan["summary"] == {"migrate": 3, "keep": 4, "manual_review": 1}
    # inspect is read-only
    after = list(Memory.objects.order_by("pk").values_list("pk", "scope_type", "scope_id", "status", "updated_at"))
    assert before == after


def test_content_is_never_a_clue(admin):
    glob(admin, "session_id milky:private:10001 chat_address milky:private:5")
    assert inspect_plan()["entries"][0]["decision"] == "keep"


def test_apply_refuses_without_confirm(items, tmp_path):
    path, plan = run_inspect(tmp_path)
    approve(path, plan, items["pref"])
    for flags in ((), ("--apply-all-safe",), ("--dry-run",)):
        with pytest.raises(CommandError, match="--confirm"):
            run_apply(path, *flags, tmp_path=tmp_path)
    assert Memory.objects.get(pk=items["pref"].pk).scope_type == "global"
    assert not (tmp_path / "bk").exists()


def database_state():
    users = get_user_model().objects
    return (
        list(Memory.objects.order_by("pk").values_list("pk", "scope_type", "scope_id", "status", "updated_at")),
        list(users.order_by("pk").values_list("pk", "username", "password", "is_active", "is_staff", "is_superuser")),
        list(users.model.user_permissions.through.objects.order_by("pk").values_list("pk", "user_id", "permission_id")),
        list(users.model.groups.through.objects.order_by("pk").values_list("pk", "user_id", "group_id")),
        list(Permission.objects.order_by("pk").values_list("pk", "codename")),
    )


def test_dry_run_changes_nothing(items, tmp_path, capsys):
    path, _plan = run_inspect(tmp_path)
    before = database_state()
    run_apply(path, "--confirm", "--apply-all-safe", "--dry-run", tmp_path=tmp_path)
    out = capsys.readouterr().out
    assert "would_apply=3" in out and "dry run" in out
    assert database_state() == before
    assert not get_user_model().objects.filter(username=SYSTEM_USERNAME).exists()
    assert not (tmp_path / "bk").exists()
    assert not list(search.cascade_search(scopes=[("chat", A)], query="window seats", limit=5, mode="fts"))


def test_apply_only_approved_then_round_trip_and_isolation(items, tmp_path, capsys, is_postgres):
    path, plan = run_inspect(tmp_path)
    approve(path, plan, items["pref"])
    run_apply(path, "--confirm", tmp_path=tmp_path)
    out = capsys.readouterr().out
    assert "applied=1" in out
    pref = Memory.objects.get(pk=items["pref"].pk)
    assert (pref.scope_type, pref.scope_id, pref.status) == ("chat", A, Status.ACTIVE)
    # Not approved: unchanged even though its decision is migrate.
    assert Memory.objects.get(pk=items["fact_addr"].pk).scope_type == "global"
    # Backup named in the output and really written.
    backup = next(line for line in out.splitlines() if line.startswith("backup: ")).split(": ", 1)[1]
    if is_postgres:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT scope_type FROM {backup} WHERE id = %s", [pref.pk])
            assert cursor.fetchone() == ("global",)
    else:
        copy = sqlite3.connect(backup)
        assert copy.execute("SELECT scope_type FROM memory_app_memory WHERE id = ?", [pref.pk]).fetchone() == (
            "global",
        )
        copy.close()
    # Search: now in chat A only; neither chat B nor a legacy session sees it.
    for mode in ("fts", "vector", "hybrid"):
        hits = search.session_search(session_id=A, query="window seats", limit=5, mode=mode)
        assert [h.id for h in hits] == [pref.pk], (mode, [h.content for h in hits])
        assert search.session_search(session_id=B, query="window seats", limit=5, mode=mode) == []
        assert search.session_search(session_id="milky:1", query="window seats", limit=5, mode=mode) == []
    # Idempotent: the same plan again changes nothing and says so.
    run_apply(path, "--confirm", tmp_path=tmp_path)
    assert "already_applied=1" in capsys.readouterr().out
    assert Memory.objects.filter(scope_type="chat").count() == 1


def test_apply_all_safe_moves_every_safe_entry_but_not_rejected_or_keep(items, tmp_path, capsys):
    path, plan = run_inspect(tmp_path)
    entry_for(plan, items["task_ctx"])["approval"] = "rejected"
    entry_for(plan, items["decision"])["approval"] = "approved"  # a keep entry never moves
    path.write_text(json.dumps(plan))
    run_apply(path, "--confirm", "--apply-all-safe", tmp_path=tmp_path)
    assert "applied=2" in capsys.readouterr().out
    moved = dict(Memory.objects.filter(scope_type="chat").values_list("pk", "scope_id"))
    assert moved == {items["pref"].pk: A, items["fact_addr"].pk: B}


def test_manual_review_needs_a_chosen_target(items, tmp_path, capsys):
    path, plan = run_inspect(tmp_path)
    approve(path, plan, items["conflict"])
    run_apply(path, "--confirm", tmp_path=tmp_path)
    assert "needs a target" in capsys.readouterr().out
    assert Memory.objects.get(pk=items["conflict"].pk).scope_type == "global"
    approve(path, plan, items["conflict"], target="milky:private:99999")  # not one of its chats
    run_apply(path, "--confirm", tmp_path=tmp_path)
    assert Memory.objects.get(pk=items["conflict"].pk).scope_type == "global"
    approve(path, plan, items["conflict"], target=B)
    run_apply(path, "--confirm", tmp_path=tmp_path)
    assert Memory.objects.get(pk=items["conflict"].pk).scope_id == B


def test_stale_entries_are_skipped_and_reported(items, admin, tmp_path, capsys):
    path, plan = run_inspect(tmp_path)
    approve(path, plan, items["pref"], items["fact_addr"], items["task_ctx"])
    services.memory_supersede(actor=admin, memory_id=items["pref"].pk, content="I like aisle seats")
    services.memory_forget(actor=admin, memory_id=items["fact_addr"].pk)
    run_apply(path, "--confirm", tmp_path=tmp_path)
    out = capsys.readouterr().out
    assert f"{items['pref'].pk}: stale (item changed since inspect)" in out
    assert f"{items['fact_addr'].pk}: stale (item no longer exists)" in out
    assert "applied=1" in out
    assert Memory.objects.get(pk=items["pref"].pk).scope_type == "global"
    assert Memory.objects.get(pk=items["task_ctx"].pk).scope_id == A


def test_migration_moves_older_versions_and_leaves_candidates(admin, svc, tmp_path):
    old = glob(admin, "I like tea", evidence={"session_id": A})
    new = services.memory_supersede(actor=admin, memory_id=old.pk, content="I like tea with milk")
    candidate = MemoryCandidateFactory(
        session_id="milky:1",
        source="dream",
        scope_type="global",
        scope_id="__global__",
        content="I like tea",
        memory=new,
    )
    path, plan = run_inspect(tmp_path)
    approve(path, plan, new)
    run_apply(path, "--confirm", tmp_path=tmp_path)
    assert set(Memory.objects.values_list("scope_type", "scope_id")) == {("chat", A)}
    candidate.refresh_from_db()
    assert candidate.scope_type == "global"
    services.memory_forget(actor=svc, memory_id=new.pk)
    assert not Memory.objects.exists()  # forgetting still takes the whole chain


def test_malformed_plan_is_refused(tmp_path):
    path = tmp_path / "plan.json"
    for content in (
        "not json",
        json.dumps({"format": "other", "entries": []}),
        json.dumps({"format": "memory-scope-plan/1", "entries": [{"item_id": "x"}]}),
    ):
        path.write_text(content)
        with pytest.raises(CommandError):
            run_apply(path, "--confirm", tmp_path=tmp_path)


def test_tampered_plan_never_moves_an_item_its_clues_do_not_name(items, admin, tmp_path, capsys):
    relabelled = glob(admin, "I like tango", evidence={"session_id": A}, metadata={"from_chat_address": B})
    path, plan = run_inspect(tmp_path)
    # A global decision edited into an approved migration to chat B.
    entry_for(plan, items["decision"]).update(
        decision="migrate", approval="approved", target_scope_type="chat", target_scope_id=B
    )
    # A migrate entry (clues: chat A) redirected to chat B.
    entry_for(plan, items["pref"]).update(approval="approved", target_scope_id=B)
    # A manual_review entry with an invented candidate chosen as target.
    entry_for(plan, items["conflict"]).update(
        approval="approved", target_scope_id="milky:private:99999", candidate_scope_ids=[A, B, "milky:private:99999"]
    )
    # A keep entry (no clue at all) turned into an approved migration.
    entry_for(plan, items["no_clue"]).update(decision="migrate", approval="approved", target_scope_id=A)
    # A manual_review entry relabelled migrate, so --apply-all-safe would pick it unapproved.
    entry_for(plan, relabelled).update(decision="migrate", target_scope_id=A)
    path.write_text(json.dumps(plan))
    tampered = [items["decision"], items["pref"], items["conflict"], items["no_clue"]]

    before = database_state()
    run_apply(path, "--confirm", tmp_path=tmp_path)
    out = capsys.readouterr().out
    assert all(f"{m.pk}: invalid" in out for m in tampered), out
    assert "invalid=4" in out and "nothing to apply, no backup" in out
    assert database_state() == before and not (tmp_path / "bk").exists()

    run_apply(path, "--confirm", "--apply-all-safe", "--dry-run", tmp_path=tmp_path)
    out = capsys.readouterr().out
    assert all(f"{m.pk}: invalid" in out for m in [*tampered, relabelled]), out
    assert "invalid=5" in out and "would_apply=2" in out
    assert database_state() == before

    run_apply(path, "--confirm", "--apply-all-safe", tmp_path=tmp_path)
    out = capsys.readouterr().out
    assert "invalid=5" in out and "applied=2" in out
    # Only the untouched safe entries moved, each to the chat its clues name.
    moved = dict(Memory.objects.filter(scope_type="chat").values_list("pk", "scope_id"))
    assert moved == {items["fact_addr"].pk: B, items["task_ctx"].pk: A}
    for memory in [*tampered, relabelled]:
        assert Memory.objects.get(pk=memory.pk).scope_type == "global"


def test_tampered_decision_alone_is_refused_and_takes_no_backup(admin, tmp_path, capsys):
    decision = glob(admin, "We deploy on Mondays", kind="decision")
    path, plan = run_inspect(tmp_path)
    assert entry_for(plan, decision)["decision"] == "keep"
    entry_for(plan, decision).update(decision="migrate", approval="approved", target_scope_id=B)
    path.write_text(json.dumps(plan))
    before = database_state()
    run_apply(path, "--confirm", tmp_path=tmp_path)
    out = capsys.readouterr().out
    assert f"{decision.pk}: invalid" in out and "nothing to apply, no backup" in out
    assert database_state() == before  # not even the system user was created
    assert not (tmp_path / "bk").exists()
    decision.refresh_from_db()
    assert (decision.scope_type, decision.scope_id) == ("global", "__global__")


def test_no_backup_when_nothing_will_move(items, tmp_path, capsys, is_postgres):
    def backups():
        if is_postgres:
            with connection.cursor() as cursor:
                cursor.execute("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'memory_scope_backup_%%'")
                return cursor.fetchone()[0]
        return len(list((tmp_path / "bk").glob("*"))) if (tmp_path / "bk").exists() else 0

    path, plan = run_inspect(tmp_path)
    approve(path, plan, items["pref"])
    start = backups()
    run_apply(path, "--confirm", tmp_path=tmp_path)
    first = capsys.readouterr().out
    assert "applied=1" in first and "backup: " in first
    assert backups() == start + 1
    for _ in range(2):  # the same plan again: nothing to move, so no new backup
        run_apply(path, "--confirm", tmp_path=tmp_path)
        out = capsys.readouterr().out
        assert "already_applied=1" in out and "nothing to apply, no backup" in out and "backup: " not in out
    assert backups() == start + 1
    # Nothing approved at all: no backup either.
    path.write_text(json.dumps({**plan, "entries": [{**e, "approval": "pending"} for e in plan["entries"]]}))
    run_apply(path, "--confirm", tmp_path=tmp_path)
    assert "nothing to apply, no backup" in capsys.readouterr().out
    assert backups() == start + 1
    if is_postgres:
        with connection.cursor() as cursor:
            cursor.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'memory_scope_backup_%%'")
            for (table,) in cursor.fetchall():
                cursor.execute(f"DROP TABLE {table}")


def test_legacy_clue_naming_another_chat_is_a_conflict(admin):
    other = glob(admin, "I like opera", evidence={"session_id": A}, metadata={"source_session_id": "milky:20002"})
    same = glob(admin, "I like ballet", evidence={"session_id": A}, metadata={"source_session_id": "milky:10001"})
    other_platform = glob(admin, "I like chess", evidence={"session_id": A, "source_session_id": "telegram:10001"})
    entries = {e["item_id"]: e for e in inspect_plan()["entries"]}
    assert entries[other.pk]["decision"] == "manual_review"
    assert entries[other.pk]["target_scope_id"] == "" and entries[other.pk]["candidate_scope_ids"] == [A]
    assert "milky:20002" in entries[other.pk]["reasons"][0]
    assert entries[other_platform.pk]["decision"] == "manual_review"
    # A legacy key of the same chat (same platform and id) agrees with the typed one.
    assert (entries[same.pk]["decision"], entries[same.pk]["target_scope_id"]) == ("migrate", A)
