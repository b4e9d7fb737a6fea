"""The change history of the workspace files (docs/runs.md, "Change history"): line diffs,
recording a change beside the publish it describes, and reversing one change on top of the
changes made after it.

Everything here runs inside the caller's transaction, under the per-user lock the caller took
(``services.workspace_file_write``/``_delete``/``workspace_change_undo``,
``runs.tools.remember_memory``), so the recorded chain is exactly the order of the publishes.
"""

import difflib
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Model

from config.budgets import truncate_utf8
from config.errors import Conflict
from identity_app.models import User
from memory_app.notes.errors import ErrorCode
from memory_app.notes.models import WorkspaceChange
from memory_app.notes.workspace import sha256_hex

# At most this many changes are kept per user and file; older ones are dropped as new ones
# are written (an undo only ever needs the changes after the one it reverses).
HISTORY_KEEP = 500
# Above this many differing lines on each side, the middle of a diff is one replacement rather
# than a minimal edit script: the matcher is quadratic and files may have 100k short lines.
_MATCHER_MAX_LINES = 2000
# What a listing shows of one change's diff.
VIEW_MAX_LINES = 80
VIEW_MAX_BYTES = 16 * 1024
VIEW_LINE_MAX_BYTES = 1024
# What the detail of one change shows.
DETAIL_MAX_LINES = 2000
DETAIL_MAX_BYTES = 256 * 1024


class UndoConflict(Conflict):
    code = ErrorCode.UNDO_CONFLICT


def split_lines(text: str) -> list[str]:
    """Lines with their ``\\n`` (only ``\\n`` ends a line; the last may have none)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def line_hunks(before: list[str], after: list[str]) -> list[dict[str, Any]]:
    """The changed regions, ``{"old_start", "old", "new_start", "new"}`` with 0-based starts, in
    file order. Applying them to ``before`` gives ``after`` exactly."""
    head = 0
    while head < len(before) and head < len(after) and before[head] == after[head]:
        head += 1
    tail = 0
    while tail < len(before) - head and tail < len(after) - head and before[-1 - tail] == after[-1 - tail]:
        tail += 1
    old_mid, new_mid = before[head : len(before) - tail], after[head : len(after) - tail]
    if not old_mid and not new_mid:
        return []
    if len(old_mid) > _MATCHER_MAX_LINES and len(new_mid) > _MATCHER_MAX_LINES:
        return [{"old_start": head, "old": old_mid, "new_start": head, "new": new_mid}]
    matcher = difflib.SequenceMatcher(None, old_mid, new_mid, autojunk=False)
    return [
        {"old_start": head + i1, "old": old_mid[i1:i2], "new_start": head + j1, "new": new_mid[j1:j2]}
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def text_hunks(old_text: str, new_text: str) -> list[dict[str, Any]]:
    """``line_hunks`` of two texts. An append after the last full line (what ``remember_memory``
    does) is found without splitting either text: one insertion after the old lines."""
    if (not old_text or old_text.endswith("\n")) and new_text.startswith(old_text):
        added = split_lines(new_text[len(old_text) :])
        if not added:
            return []
        at = old_text.count("\n")
        return [{"old_start": at, "old": [], "new_start": at, "new": added}]
    return line_hunks(split_lines(old_text), split_lines(new_text))


@dataclass(frozen=True)
class Author:
    """Who makes a change: ``source`` (web, api, agent), the signed-in user or token holder, the
    agent run, and a label of the client (an API token's name)."""

    source: str
    actor: User | None = None
    run: Model | None = None  # an AgentRun (the runs package builds on this one)
    client: str = ""


def _decode(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def change_record(
    *,
    user_id: int,
    name: str,
    action: str,
    author: Author,
    before: bytes | None,
    before_exists: bool,
    after: bytes | None,
    reverts: WorkspaceChange | None = None,
) -> WorkspaceChange | None:
    """Record one publish. ``before`` is ``None`` when the earlier version could not be read
    whole; ``after`` is ``None`` when the file was removed. Nothing is recorded when the bytes
    did not change."""
    change = ChangeStep(action, author, before, before_exists, after, reverts)
    recorded = changes_record(user_id=user_id, name=name, steps=[change])
    return recorded[0] if recorded else None


@dataclass(frozen=True)
class ChangeStep:
    """One change of a file, as ``change_record`` takes it."""

    action: str
    author: Author
    before: bytes | None
    before_exists: bool
    after: bytes | None
    reverts: WorkspaceChange | None = None


def changes_record(*, user_id: int, name: str, steps: list[ChangeStep]) -> list[WorkspaceChange]:
    """Record several changes of one file made one after the other (a group commit publishes
    them at once), with one query for the sequence number and one insert. Steps that did not
    change the bytes are left out."""
    changes = []
    for step in steps:
        after_exists = step.after is not None
        after_bytes = step.after or b""
        if step.before is not None and step.before == after_bytes and step.before_exists == after_exists:
            continue
        old_text = _decode(step.before) if step.before is not None else None
        new_text = _decode(after_bytes)
        complete = old_text is not None and new_text is not None
        hunks = text_hunks(old_text, new_text) if old_text is not None and new_text is not None else []
        author = step.author
        changes.append(
            WorkspaceChange(
                user_id=user_id,
                name=name,
                action=step.action,
                source=author.source,
                actor=author.actor,
                run_id=author.run.pk if author.run is not None else None,
                run_ref=author.run.pk if author.run is not None else "",
                client=author.client[:160],
                reverts=step.reverts,
                before_exists=step.before_exists,
                after_exists=after_exists,
                before_sha256=sha256_hex(step.before) if step.before is not None else "",
                after_sha256=sha256_hex(after_bytes),
                hunks=hunks,
                diff_complete=complete,
                lines_added=sum(len(h["new"]) for h in hunks),
                lines_removed=sum(len(h["old"]) for h in hunks),
            )
        )
    if not changes:
        return []
    last = WorkspaceChange.objects.filter(user_id=user_id, name=name).order_by("-seq").values_list("seq", flat=True)
    seq = last.first() or 0
    for change in changes:
        seq += 1
        change.seq = seq
    if len(changes) == 1:
        changes[0].save(force_insert=True)
    else:
        WorkspaceChange.objects.bulk_create(changes)
    if seq > HISTORY_KEEP:
        _history_trim(user_id=user_id, name=name, upto_seq=seq - HISTORY_KEEP)
    return changes


def _history_trim(*, user_id: int, name: str, upto_seq: int) -> None:
    """Drop the changes of one file up to ``upto_seq``: a kept undo that reverses a dropped
    change loses the link (``reverts`` is SET_NULL), then the rows go. Two plain statements:
    ``QuerySet.delete()`` would also read the rows first to collect that reference, on every
    write once a file has a full history."""
    table = connection.ops.quote_name(WorkspaceChange._meta.db_table)
    stale = f"SELECT id FROM {table} WHERE user_id = %s AND name = %s AND seq <= %s"
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET reverts_id = NULL WHERE reverts_id IN ({stale})", [user_id, name, upto_seq])
        cursor.execute(f"DELETE FROM {table} WHERE user_id = %s AND name = %s AND seq <= %s", [user_id, name, upto_seq])


# --- undo ------------------------------------------------------------------------------------


def _touches(a0: int, a1: int, b0: int, b1: int) -> bool:
    """Whether two line ranges ``[a0, a1)`` and ``[b0, b1)`` of one version overlap, counting
    two insertions at the same place and an insertion strictly inside the other range."""
    if a0 < a1 and b0 < b1:
        return a0 < b1 and b0 < a1
    if a0 == a1 and b0 == b1:
        return a0 == b0
    if a0 == a1:
        return b0 < a0 < b1
    return a0 < b0 < a1


@dataclass
class _Region:
    start: int  # in the current version's lines
    end: int
    expected: list[str]  # the lines the change wrote there
    restore: list[str]  # the lines it replaced


def change_reversed(*, change: WorkspaceChange, later: list[WorkspaceChange], current: bytes, exists: bool) -> str:
    """The current text with ``change`` reversed and every later change kept.

    Each region the change wrote is followed through the ``later`` changes (oldest first): one
    that touched it is a conflict, one above it moves it. The chain must be unbroken (each
    change starts from the previous one's result, and the file on disk is the last result),
    so a file changed outside the service is a conflict too, never a guess."""
    if not change.diff_complete:
        raise UndoConflict(
            f"This change of {change.name} cannot be undone: the version before it was not recorded whole."
        )
    regions = [
        _Region(h["new_start"], h["new_start"] + len(h["new"]), list(h["new"]), list(h["old"])) for h in change.hunks
    ]
    previous = change
    for step in later:
        if step.before_sha256 != previous.after_sha256 or not step.diff_complete:
            raise UndoConflict(
                f"{change.name} was changed outside this service after this change, so it cannot be undone "
                "safely. Edit the file instead.",
                details={"reason": "changed_outside"},
            )
        for region in regions:
            shift = 0
            for hunk in step.hunks:
                start, end = hunk["old_start"], hunk["old_start"] + len(hunk["old"])
                if _touches(start, end, region.start, region.end):
                    raise _touched(change, step)
                if end <= region.start:
                    shift += len(hunk["new"]) - len(hunk["old"])
            region.start += shift
            region.end += shift
        previous = step
    text = _decode(current)
    if sha256_hex(current) != previous.after_sha256 or exists != previous.after_exists or text is None:
        raise UndoConflict(
            f"{change.name} on disk is not the version this history ends with (it was changed outside this "
            "service), so the change cannot be undone safely. Edit the file instead.",
            details={"reason": "changed_outside"},
        )
    lines = split_lines(text)
    for region in regions:
        if lines[region.start : region.end] != region.expected:
            raise _touched(change, None)
    for region in sorted(regions, key=lambda r: r.start, reverse=True):
        lines[region.start : region.end] = region.restore
    # A restored last line without its newline may now stand before other lines.
    lines = [line if line.endswith("\n") or i == len(lines) - 1 else line + "\n" for i, line in enumerate(lines)]
    return "".join(lines)


def _touched(change: WorkspaceChange, later: WorkspaceChange | None) -> UndoConflict:
    if later is not None and later.reverts_id == change.pk:
        return UndoConflict(
            f"This change of {change.name} was already undone (change #{later.seq}); nothing was changed.",
            details={"change_id": later.pk, "reason": "already_undone"},
        )
    where = f"change #{later.seq}" if later is not None else "a later change"
    return UndoConflict(
        f"The lines this change wrote in {change.name} were changed again afterwards ({where}), so undoing it "
        "would lose that later edit. Nothing was changed; edit the file to combine them yourself.",
        details={"change_id": later.pk if later is not None else None, "reason": "touched_later"},
    )


# --- what a listing shows ----------------------------------------------------------------------


@dataclass(frozen=True)
class DiffLine:
    op: str  # "-" removed, "+" added, "@" the start of a region
    number: int  # 1-based line number in the version before ("-") or after ("+", "@")
    text: str


@dataclass(frozen=True)
class DiffView:
    lines: list[DiffLine]
    truncated: bool  # lines or bytes were left out


def diff_view(
    change: WorkspaceChange,
    *,
    max_lines: int = VIEW_MAX_LINES,
    max_bytes: int = VIEW_MAX_BYTES,
) -> DiffView:
    """The removed and added lines of a change, bounded in lines and bytes (each line cut at
    ``VIEW_LINE_MAX_BYTES``, marked)."""
    shown: list[DiffLine] = []
    used = 0
    total = sum(1 + len(h["old"]) + len(h["new"]) for h in change.hunks)
    for hunk in change.hunks:
        rows = [DiffLine("@", hunk["new_start"] + 1, "")]
        rows += [DiffLine("-", hunk["old_start"] + i + 1, line) for i, line in enumerate(hunk["old"])]
        rows += [DiffLine("+", hunk["new_start"] + i + 1, line) for i, line in enumerate(hunk["new"])]
        for row in rows:
            text, _ = truncate_utf8(row.text.removesuffix("\n"), VIEW_LINE_MAX_BYTES)
            size = len(text.encode("utf-8")) + 8
            if len(shown) >= max_lines or used + size > max_bytes:
                return DiffView(shown, True)
            shown.append(DiffLine(row.op, row.number, text))
            used += size
    return DiffView(shown, len(shown) < total)
