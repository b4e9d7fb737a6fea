"""Scope migration of existing global items (docs/scoped-memory.md, scope migration runbook).

``inspect`` reads every active global item and decides, from structured clues only:

- clues: the top-level ``evidence``/``metadata`` keys ``session_id``, ``source_session_id``,
  ``created_from_session_id``, ``requester_session_id`` (session keys), ``chat_address``,
  ``source_chat_address``, ``created_from_chat_address``, ``target_chat_address``,
  ``from_chat_address`` (a chat key string, or an object with platform/target type/id), and
  ``message_context`` (``channel``, ``chat_type``, ``chat_id``). Nothing else (never the text).
- decisions: a chat kind (preference/fact/task) with exactly one typed chat → ``migrate``
  to it; several different typed chats → ``manual_review``; only legacy or no clues →
  ``keep``; every other kind → ``keep`` (global knowledge stays global).

``apply`` moves only approved entries (or, with ``apply_all_safe``, every ``migrate``
entry not rejected), one item at a time under its row lock. The plan file is not trusted:
the decision is recomputed from the item itself, and an entry whose decision or target the
item's clues do not bear out (a ``keep`` edited into ``migrate``, another chat as target) is
refused as ``invalid``. An entry whose item changed or vanished since inspect (fingerprint
differs) is skipped as ``stale``; an item already in its target scope is
``already_applied`` (so applying twice is harmless). A read-only pass decides first whether
anything will move at all: only then is a backup taken (none for a dry run or a no-op).
Only the items (with their older versions) and their search index change; candidates are
audit history and keep their scope.
"""

import hashlib
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from config.errors import Conflict, InvalidInput
from config.metrics import SCOPE_MIGRATION_ENTRIES
from identity_app.session_keys import ChatAddress, InvalidSessionKey, SessionKey
from memory_app.memories import services
from memory_app.memories.models import Memory, Status
from memory_app.scoped.errors import ErrorCode
from memory_app.scoped.models import MigrationApproval, MigrationDecision, ScopeMigrationEntry, ScopeMigrationPlan
from memory_app.scoped.scope import (
    ADDRESS_CLUE_KEYS,
    CHAT_SCOPED_KINDS,
    GLOBAL_SCOPE,
    MESSAGE_CONTEXT_KEY,
    SCOPE_TYPE_CHAT,
    SCOPE_TYPE_GLOBAL,
    SESSION_CLUE_KEYS,
)

PLAN_FORMAT = "memory-scope-plan/1"
MAX_PLAN_ENTRIES = 200_000


@dataclass(frozen=True)
class Clue:
    source: str  # e.g. "evidence.session_id"
    value: str
    chat_key: str | None  # typed chat key, or None for a legacy key
    valid: bool = True
    legacy: tuple[str, str] | None = None  # (platform, target id) of a legacy key


def fingerprint(memory: Memory) -> str:
    """Changes whenever the item's scope, status, kind or text changes."""
    raw = "\x1f".join([memory.pk, memory.scope_type, memory.scope_id, memory.status, memory.kind, memory.content])
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _address_string(value) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        platform = value.get("platform") or value.get("channel")
        target_type = value.get("target_type") or value.get("chat_type")
        target_id = value.get("target_id") or value.get("chat_id")
        if all(isinstance(v, str | int) and not isinstance(v, bool) for v in (platform, target_type, target_id)):
            return f"{platform}:{target_type}:{target_id}"
    return None


def _clue(source: str, raw: str | None, original) -> Clue:
    if raw is None:
        return Clue(source, json.dumps(original, ensure_ascii=False)[:200], None, valid=False)
    try:
        key = SessionKey.parse(raw)
    except InvalidSessionKey:
        return Clue(source, raw[:200], None, valid=False)
    if key.address.is_typed:
        return Clue(source, raw, key.address.chat_key)
    return Clue(source, raw, None, legacy=(key.address.platform, key.address.target_id))


def item_clues(memory: Memory) -> list[Clue]:
    clues = []
    for field_name in ("evidence", "metadata"):
        data = getattr(memory, field_name) or {}
        if not isinstance(data, dict):
            continue
        for key in SESSION_CLUE_KEYS:
            if key in data:
                value = data[key]
                clues.append(_clue(f"{field_name}.{key}", value if isinstance(value, str) else None, value))
        for key in ADDRESS_CLUE_KEYS:
            if key in data:
                clues.append(_clue(f"{field_name}.{key}", _address_string(data[key]), data[key]))
        context = data.get(MESSAGE_CONTEXT_KEY)
        if isinstance(context, dict):
            raw = _address_string(
                {
                    "channel": context.get("channel"),
                    "chat_type": context.get("chat_type"),
                    "chat_id": context.get("chat_id"),
                }
            )
            clues.append(_clue(f"{field_name}.{MESSAGE_CONTEXT_KEY}", raw, context))
    return clues


def decide(kind: str, clues: list[Clue]) -> dict:
    typed = sorted({c.chat_key for c in clues if c.valid and c.chat_key})
    legacy = [c for c in clues if c.valid and not c.chat_key]
    invalid = [c for c in clues if not c.valid]
    reasons = [f"ignored malformed clue {c.source}" for c in invalid]
    out = {"decision": MigrationDecision.KEEP.value, "target_scope_id": "", "candidate_scope_ids": typed}
    if kind not in CHAT_SCOPED_KINDS:
        reasons.insert(0, f"kind {kind} stays global")
    elif len(typed) == 1:
        address = ChatAddress.parse(typed[0])
        # A legacy key naming another platform or id points at another chat: a conflict.
        others = [c for c in legacy if c.legacy != (address.platform, address.target_id)]
        if others:
            out["decision"] = MigrationDecision.MANUAL_REVIEW.value
            names = ", ".join(f"{c.source}={c.value}" for c in others)
            reasons.insert(0, f"conflicting chats: {typed[0]} and legacy {names}")
        else:
            out.update(decision=MigrationDecision.MIGRATE.value, target_scope_id=typed[0])
            sources = ", ".join(c.source for c in clues if c.chat_key == typed[0])
            reasons.insert(0, f"chat kind {kind} with one typed chat ({sources})")
    elif len(typed) > 1:
        out["decision"] = MigrationDecision.MANUAL_REVIEW.value
        reasons.insert(0, f"conflicting chats: {', '.join(typed)}")
    elif legacy:
        reasons.insert(0, "only legacy (untyped) session clues")
    else:
        reasons.insert(0, "no scope clue")
    out["reasons"] = reasons
    return out


def inspect_plan() -> dict:
    """Read-only: a plan entry for every active global item."""
    entries = []
    summary = {d.value: 0 for d in MigrationDecision}
    qs = Memory.objects.filter(scope_type=SCOPE_TYPE_GLOBAL, status=Status.ACTIVE).order_by("pk")
    for memory in qs.iterator(chunk_size=1000):
        clues = item_clues(memory)
        verdict = decide(memory.kind, clues)
        summary[verdict["decision"]] += 1
        entries.append(
            {
                "item_id": memory.pk,
                "kind": memory.kind,
                "content_preview": memory.content[:200],
                "decision": verdict["decision"],
                "target_scope_type": SCOPE_TYPE_CHAT if verdict["target_scope_id"] else "",
                "target_scope_id": verdict["target_scope_id"],
                "candidate_scope_ids": verdict["candidate_scope_ids"],
                "reasons": verdict["reasons"],
                "clues": [{"source": c.source, "value": c.value, "chat_key": c.chat_key} for c in clues],
                "fingerprint": fingerprint(memory),
                "approval": MigrationApproval.PENDING.value,
            }
        )
    return {
        "format": PLAN_FORMAT,
        "generated_at": timezone.now().isoformat(),
        "database": connection.vendor,
        "summary": summary,
        "entries": entries,
    }


def validate_plan(data) -> list[dict]:
    """The plan's entries, checked for shape; raises InvalidInput for a malformed plan."""
    if not isinstance(data, dict) or data.get("format") != PLAN_FORMAT or not isinstance(data.get("entries"), list):
        raise InvalidInput(f"Not a scope migration plan (format {PLAN_FORMAT}).", code=ErrorCode.INVALID_PLAN)
    if len(data["entries"]) > MAX_PLAN_ENTRIES:
        raise InvalidInput("Plan has too many entries.", code=ErrorCode.INVALID_PLAN)
    seen = set()
    for index, entry in enumerate(data["entries"]):
        if not isinstance(entry, dict):
            raise InvalidInput(f"Entry {index} is not an object.", code=ErrorCode.INVALID_PLAN)
        for name in ("item_id", "decision", "fingerprint", "approval"):
            if not isinstance(entry.get(name), str):
                raise InvalidInput(f"Entry {index} lacks {name}.", code=ErrorCode.INVALID_PLAN)
        if entry["decision"] not in MigrationDecision.values or entry["approval"] not in MigrationApproval.values:
            raise InvalidInput(f"Entry {index} has an unknown decision or approval.", code=ErrorCode.INVALID_PLAN)
        if entry["item_id"] in seen:
            raise InvalidInput(f"Entry {index} repeats item {entry['item_id']}.", code=ErrorCode.INVALID_PLAN)
        seen.add(entry["item_id"])
    return data["entries"]


def _selected(entry: dict, apply_all_safe: bool) -> tuple[bool, str]:
    """(selected, reason when not)."""
    if entry["approval"] == MigrationApproval.REJECTED:
        return False, "rejected"
    if entry["decision"] == MigrationDecision.KEEP:
        return False, "keep"
    if entry["approval"] == MigrationApproval.APPROVED:
        return True, ""
    if apply_all_safe and entry["decision"] == MigrationDecision.MIGRATE:
        return True, ""
    return False, "not approved"


def entry_needs_target(*, decision: str, target_scope_id: str, candidate_scope_ids) -> bool:
    """A ``manual_review`` entry moves only to a target chosen among its candidate chats."""
    return decision == MigrationDecision.MANUAL_REVIEW and (target_scope_id or "") not in (candidate_scope_ids or [])


def _target(entry: dict) -> str:
    target = entry.get("target_scope_id") or ""
    if entry_needs_target(
        decision=entry["decision"], target_scope_id=target, candidate_scope_ids=entry.get("candidate_scope_ids")
    ):
        raise InvalidInput(
            "a manual_review entry needs a target chosen from its candidate chats", code=ErrorCode.NEEDS_TARGET
        )
    try:
        return ChatAddress.parse(target).chat_key
    except InvalidSessionKey:
        raise InvalidInput(f"invalid target chat {target!r}", code=ErrorCode.INVALID_TARGET) from None


def backup_before_apply(*, backup_dir: Path | None = None) -> str:
    """Back up what apply may change; returns the backup's name (a file or a table)."""
    stamp = timezone.now().strftime("%Y%m%d%H%M%S%f")
    if connection.vendor == "postgresql":
        table = f"memory_scope_backup_{stamp}"
        with transaction.atomic(), connection.cursor() as cursor:
            # Apply only ever moves global rows (and their older versions) to chats.
            cursor.execute(f"CREATE TABLE {table} AS SELECT * FROM memory_app_memory WHERE scope_type = 'global'")
        return table
    if connection.in_atomic_block:
        # SQLite's backup API cannot copy a database its own connection is writing to.
        raise Conflict("The SQLite backup must run outside a transaction.", code=ErrorCode.BACKUP_IN_TRANSACTION)
    backup_dir = Path(backup_dir or settings.BASE_DIR / "var" / "backups")
    backup_dir.mkdir(parents=True, exist_ok=True)
    target = backup_dir / f"memory-scope-backup-{stamp}.sqlite3"
    connection.ensure_connection()
    destination = sqlite3.connect(str(target))
    try:
        connection.connection.backup(destination)
    finally:
        destination.close()
    return str(target)


def _check(*, memory: Memory | None, entry: dict, target: str) -> tuple[str, str] | None:
    """Why ``entry`` may not move ``memory`` to ``target`` as (result, detail); None if it may.

    The decision is recomputed from the item itself: the plan is a file a person edits, so
    its ``decision``/``target_scope_id`` are only trusted where the item's own clues agree.
    """
    if memory is None:
        return "stale", "item no longer exists"
    if (memory.scope_type, memory.scope_id) == (SCOPE_TYPE_CHAT, target) and memory.status == Status.ACTIVE:
        return "already_applied", f"already in chat {target}"
    if fingerprint(memory) != entry["fingerprint"]:
        return "stale", "item changed since inspect"
    verdict = decide(memory.kind, item_clues(memory))
    if verdict["decision"] != entry["decision"]:
        return "invalid", f"the item's clues say {verdict['decision']}, the plan says {entry['decision']}"
    if verdict["decision"] == MigrationDecision.MIGRATE and verdict["target_scope_id"] == target:
        return None
    if verdict["decision"] == MigrationDecision.MANUAL_REVIEW and target in verdict["candidate_scope_ids"]:
        return None
    return "invalid", f"chat {target} is not what the item's clues name"


def _preview(chosen: list[tuple[dict, str]]) -> dict[str, tuple[str, str] | None]:
    """Read-only: for each chosen entry, ``_check`` against the item as it is now."""
    out: dict[str, tuple[str, str] | None] = {}
    for start in range(0, len(chosen), 1000):
        chunk = chosen[start : start + 1000]
        rows = Memory.objects.in_bulk([entry["item_id"] for entry, _ in chunk])
        for entry, target in chunk:
            out[entry["item_id"]] = _check(memory=rows.get(entry["item_id"]), entry=entry, target=target)
    return out


def apply_plan(
    *, entries: list[dict], actor, apply_all_safe: bool = False, dry_run: bool = False, backup_dir: Path | None = None
) -> dict:
    """Apply a validated plan; returns {"dry_run", "backup", "note", "results": [{item_id, result, detail}], "counts"}.

    First a read-only pass decides which entries would really move an item; only if at least
    one would (and this is no dry run) is ``actor`` resolved — it may be a function returning
    the acting user, so a dry run or a no-op run creates nothing — and a backup taken. Each
    move then re-checks its entry under the item's row lock.
    """
    chosen, results = [], []
    for entry in entries:
        selected, why = _selected(entry, apply_all_safe)
        if not selected:
            results.append({"item_id": entry["item_id"], "result": "skipped", "detail": why})
            continue
        try:
            chosen.append((entry, _target(entry)))
        except InvalidInput as exc:
            results.append({"item_id": entry["item_id"], "result": "skipped", "detail": exc.message})
    preview = _preview(chosen)
    movable = [(entry, target) for entry, target in chosen if preview[entry["item_id"]] is None]
    for entry, _target_id in chosen:
        if (verdict := preview[entry["item_id"]]) is not None:
            results.append({"item_id": entry["item_id"], "result": verdict[0], "detail": verdict[1]})
    backup, note = "", ""
    if not movable:
        note = "nothing to apply, no backup"
    elif dry_run:
        for entry, target in movable:
            results.append({"item_id": entry["item_id"], "result": "would_apply", "detail": f"global → chat {target}"})
    else:
        actor = actor() if callable(actor) else actor
        backup = backup_before_apply(backup_dir=backup_dir)
        for entry, target in movable:
            result, detail = _apply_one(entry=entry, target=target, actor=actor)
            results.append({"item_id": entry["item_id"], "result": result, "detail": detail})
    counts: dict[str, int] = {}
    for row in results:
        counts[row["result"]] = counts.get(row["result"], 0) + 1
        if not dry_run:
            SCOPE_MIGRATION_ENTRIES.labels(result=row["result"]).inc()
    return {"dry_run": dry_run, "backup": backup, "note": note, "results": results, "counts": counts}


def _apply_one(*, entry: dict, target: str, actor) -> tuple[str, str]:
    with transaction.atomic():
        memory = Memory.objects.select_for_update().filter(pk=entry["item_id"]).first()
        if (refused := _check(memory=memory, entry=entry, target=target)) is not None:
            return refused
        assert memory is not None  # _check refuses an item that no longer exists
        try:
            services.memory_rescope(
                actor=actor, memory_id=memory.pk, from_scope=GLOBAL_SCOPE, to_scope=(SCOPE_TYPE_CHAT, target)
            )
        except Conflict as exc:
            return "stale", exc.message
    return "applied", f"global → chat {target}"


# --- Plans under review in the admin --------------------------------------------------------
def migration_previews_forget(memory_ids: list[str]) -> None:
    """Memories are being forgotten: a plan under review keeps that an item was in it, not its
    text. Registered with ``memory_app.memories.derived`` (apps.py), so every way of forgetting
    does it."""
    ids = list(memory_ids)
    for start in range(0, len(ids), 500):
        ScopeMigrationEntry.objects.filter(item_id__in=ids[start : start + 500]).exclude(content_preview="").update(
            content_preview=""
        )


def plan_import(*, data, name: str, actor=None) -> ScopeMigrationPlan:
    entries = validate_plan(data)
    with transaction.atomic():
        plan = ScopeMigrationPlan.objects.create(
            name=name[:200], created_by=actor, generated_at=str(data.get("generated_at", ""))[:64]
        )
        ScopeMigrationEntry.objects.bulk_create(
            [
                ScopeMigrationEntry(
                    plan=plan,
                    item_id=e["item_id"][:40],
                    kind=str(e.get("kind", ""))[:16],
                    content_preview=str(e.get("content_preview", ""))[:300],
                    decision=e["decision"],
                    target_scope_id=str(e.get("target_scope_id") or "")[:200],
                    candidate_scope_ids=[str(c)[:200] for c in (e.get("candidate_scope_ids") or [])][:50],
                    reasons=[str(r)[:300] for r in (e.get("reasons") or [])][:20],
                    fingerprint=e["fingerprint"][:64],
                    approval=e["approval"],
                )
                for e in entries
            ],
            batch_size=1000,
        )
    return plan


def plan_entries_as_dicts(plan: ScopeMigrationPlan) -> list[dict]:
    return [
        {
            "item_id": e.item_id,
            "decision": e.decision,
            "target_scope_id": e.target_scope_id,
            "candidate_scope_ids": e.candidate_scope_ids,
            "fingerprint": e.fingerprint,
            "approval": e.approval,
        }
        for e in plan.entries.order_by("id")
    ]


def entries_needing_target(entries) -> list[ScopeMigrationEntry]:
    """The ``manual_review`` entries of a queryset that have no target among their candidates."""
    rows = entries.filter(decision=MigrationDecision.MANUAL_REVIEW).only(
        "id", "item_id", "decision", "target_scope_id", "candidate_scope_ids"
    )
    return [
        e
        for e in rows.order_by("id")
        if entry_needs_target(
            decision=e.decision, target_scope_id=e.target_scope_id, candidate_scope_ids=e.candidate_scope_ids
        )
    ]


def plan_set_approval(*, plan: ScopeMigrationPlan, entry_ids, approval: str) -> tuple[int, list[ScopeMigrationEntry]]:
    """Set ``approval`` on the plan's entries among ``entry_ids``; returns (how many changed,
    the entries refused). Approval is refused for a ``manual_review`` entry without a target
    chosen among its candidates: apply would only skip it."""
    if approval not in MigrationApproval.values:
        raise InvalidInput("Unknown approval.", code=ErrorCode.INVALID_APPROVAL)
    with transaction.atomic():
        entries = ScopeMigrationEntry.objects.select_for_update().filter(plan=plan, pk__in=list(entry_ids))
        refused = entries_needing_target(entries) if approval == MigrationApproval.APPROVED else []
        changed = entries.exclude(pk__in=[e.pk for e in refused]).update(approval=approval)
    return changed, refused


def plan_apply(*, plan: ScopeMigrationPlan, actor, apply_all_safe: bool = False, dry_run: bool = False) -> dict:
    report = apply_plan(
        entries=plan_entries_as_dicts(plan), actor=actor, apply_all_safe=apply_all_safe, dry_run=dry_run
    )
    by_item = {row["item_id"]: row for row in report["results"]}
    with transaction.atomic():
        for entry in plan.entries.select_for_update().order_by("id"):
            row = by_item.get(entry.item_id)
            if row:
                entry.result, entry.result_detail = row["result"], row["detail"][:300]
                entry.save(update_fields=["result", "result_detail"])
        plan.last_report = {
            "dry_run": dry_run,
            "backup": report["backup"],
            "note": report["note"],
            "counts": report["counts"],
        }
        fields = ["last_report"]
        if not dry_run and report["counts"].get("applied"):
            plan.applied_at, plan.backup_name = timezone.now(), report["backup"]
            fields += ["applied_at", "backup_name"]
        plan.save(update_fields=fields)
    return report
