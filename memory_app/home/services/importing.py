"""Import an export: memories (deduplicated, redacted), the notes files (never overwritten),
the profile and the settings, all or nothing."""

import logging
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from config.errors import DomainError, InvalidInput
from config.validation import (
    validate_json_container,
)
from identity_app import services as identity_services
from identity_app.models import Profile, User
from memory_app.automemory import services as automemory_services
from memory_app.automemory.selectors import auto_memory_settings_get
from memory_app.distill.redaction import redact, redact_strings
from memory_app.home.errors import ErrorCode
from memory_app.home.services.import_file import (
    GLOBAL_SECTION,
    IMPORTED_KEYS,
    check_version,
    import_error,
    import_items,
    notes_to_restore,
    profile_to_restore,
    settings_to_restore,
)
from memory_app.home.sources import (
    home_memories,
)
from memory_app.memories import services as memory_services
from memory_app.memories.models import (
    GLOBAL_SCOPE_ID,
    KIND_VALUES,
    Memory,
    Origin,
    Status,
    Tier,
    live_q,
)
from memory_app.notes import services as notes_services
from memory_app.notes.history import Author
from memory_app.notes.locks import user_lock_acquire
from memory_app.notes.models import WorkspaceChangeSource
from memory_app.notes.selectors import user_settings_get
from memory_app.scoped import services as scoped_services
from memory_app.scoped.scope import GLOBAL_SCOPE, SCOPE_CLUE_KEYS

logger = logging.getLogger(__name__)


IMPORT_DEDUPE_SCAN = 20_000
# A notes file's result: the workspace service's own (notes_services.workspace_files_fill).
NOTES_WRITTEN, NOTES_IDENTICAL, NOTES_CONFLICT = (
    notes_services.FILL_WRITTEN,
    notes_services.FILL_IDENTICAL,
    notes_services.FILL_CONFLICT,
)
APPLIED, UNCHANGED = "applied", "unchanged"


@dataclass
class ImportReport:
    created: list[str] = field(default_factory=list)
    duplicates: int = 0
    not_active: int = 0
    # Items whose text held a secret (or, for global items, contact details) that was removed.
    redacted: int = 0
    results: list[dict] = field(default_factory=list)
    # Pre-isolation global items brought in by the operator's --legacy import (ids; also in ``created``).
    created_global: list[str] = field(default_factory=list)
    # {"name", "result": written|identical|conflict, "message"?} per notes file in the file.
    notes_files: list[dict] = field(default_factory=list)
    # {"field": "settings.enable_memory" | "user.timezone" | …, "result": applied|unchanged}
    settings: list[dict] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)  # one sentence each; nothing was overwritten
    dry_run: bool = False

    @property
    def settings_applied(self) -> int:
        return sum(1 for row in self.settings if row["result"] == APPLIED)

    @property
    def skipped(self) -> int:
        unchanged = sum(1 for row in self.settings if row["result"] == UNCHANGED)
        identical = sum(1 for row in self.notes_files if row["result"] == NOTES_IDENTICAL)
        return self.duplicates + self.not_active + unchanged + identical


def _evidence(item: dict, *, legacy: bool) -> dict:
    imported = {k: item[k] for k in IMPORTED_KEYS if isinstance(item.get(k), str)}
    kept = {}
    if legacy:  # the clues scope migration reads, as the old system recorded them
        kept = {k: v for k, v in (item.get("evidence") or {}).items() if str(k).strip().lower() in SCOPE_CLUE_KEYS}
    return {**kept, "imported": imported}


def _metadata(item: dict, *, legacy: bool) -> dict:
    metadata = item.get("metadata") or {}
    return metadata if legacy else scoped_services.strip_scope_clues(metadata)


def _import_memories(
    *, items: list[dict], section: str, scope: tuple[str, str], active, writer, report: ImportReport, **create
) -> None:
    """Create the active items of one section that are not duplicates in ``scope`` (``active``:
    its active rows as the caller may read them). Runs inside the caller's transaction."""
    scoped_services.lock_scope(scope)  # two imports of one file at once: the second finds every duplicate
    texts = list(active.order_by("-created_at", "-id").values_list("content", flat=True)[: IMPORT_DEDUPE_SCAN + 1])
    scanned_all = len(texts) <= IMPORT_DEDUPE_SCAN
    seen = {scoped_services.duplicate_key(text) for text in texts}
    author = None
    for index, item in enumerate(items):
        row: dict[str, object] = {"index": index} if section == "user" else {"section": section, "index": index}
        if item.get("status", Status.ACTIVE) != Status.ACTIVE:
            report.not_active += 1
            report.results.append({**row, "result": "not_active"})
            continue
        if item.get("expires_at") is not None and item["expires_at"] <= timezone.now():
            report.not_active += 1  # no longer true: like a replaced version, nothing to bring back
            report.results.append({**row, "result": "expired"})
            continue
        # Secrets never enter a memory from a file either (docs/auto-memory.md, Redaction); what
        # goes to the shared global scope also loses contact details.
        contact_info = section == GLOBAL_SECTION
        found = redact(item["content"], contact_info=contact_info)
        content = found.text
        key = scoped_services.duplicate_key(content)
        if key in seen or (not scanned_all and active.filter(content__iexact=content.strip()).exists()):
            report.duplicates += 1
            report.results.append({**row, "result": "duplicate"})
            continue
        seen.add(key)
        metadata, evidence = _metadata(item, legacy=create["legacy"]), _evidence(item, legacy=create["legacy"])
        metadata = redact_strings(metadata, contact_info=contact_info)
        evidence = redact_strings(evidence, contact_info=contact_info)
        if found.counts:
            report.redacted += 1
            row["redacted"] = sorted(found.counts)
        try:
            for name, value, code in (
                ("metadata", metadata, ErrorCode.INVALID_METADATA),
                ("evidence", evidence, ErrorCode.INVALID_EVIDENCE),
            ):
                validate_json_container(value, field=name, code=code, max_bytes=memory_services.MAX_JSON_BYTES)
            if report.dry_run:
                report.results.append({**row, "result": "would_create"})
                continue
            author = author or writer()
            memory = memory_services.memory_create(
                actor=author,
                kind=item["kind"],
                content=content,
                metadata=metadata,
                evidence=evidence,
                tier=create["tier"],
                origin=create["origin"],
                expires_at=item.get("expires_at"),
                paused=item.get("paused", False),
            )
        except DomainError as exc:
            raise import_error(section, index, exc.message, exc.code) from None
        report.created.append(memory.pk)
        if section == GLOBAL_SECTION:
            report.created_global.append(memory.pk)
        report.results.append({**row, "result": "created", "id": memory.pk})


def _changed(report: ImportReport, prefix: str, current, wanted: dict) -> dict:
    changes = {}
    for name, value in wanted.items():
        same = getattr(current, name) == value
        report.settings.append({"field": f"{prefix}{name}", "result": UNCHANGED if same else APPLIED})
        if not same:
            changes[name] = value
    return changes


def _restore_notes(*, actor, notes: dict[str, str], report: ImportReport, origin: str) -> list:
    """Each notes file through the workspace service (the per-user lock and the publish path
    every notes-file write takes), in the import's transaction: written when it is missing or
    empty, skipped when it already holds the same text, reported as a conflict (and left alone)
    when it holds other text. Returns what was published (to take back if the import fails)."""
    source = WorkspaceChangeSource.WEB if origin == Origin.MANUAL else WorkspaceChangeSource.API
    results, published = notes_services.workspace_files_fill(
        user=actor, files=notes, author=Author(source, actor=actor), dry_run=report.dry_run
    )
    for name, result in results.items():
        if result == NOTES_CONFLICT:
            message = f"{name} already holds other text; it was not overwritten."
            report.notes_files.append({"name": name, "result": NOTES_CONFLICT, "message": message})
            report.conflicts.append(message)
        else:
            report.notes_files.append({"name": name, "result": result})
    return published


def home_import(
    *,
    actor: User,
    data,
    origin: str = Origin.API,
    legacy: bool = False,
    global_writer=None,
    dry_run: bool = False,
) -> ImportReport:
    """Import an export (version 1 or 2) for ``actor`` (docs/home.md):

    - ``memories.user`` as memories of ``actor``; idempotent: an item whose text (normalized as
      for duplicate items) is already an active memory of mine, or came earlier in the file, is
      skipped, and so are versions that were not active (the chain's active end holds the fact);
    - the notes files (``_restore_notes``: never overwritten, conflicts reported);
    - the profile fields and settings present in the file (the username never).

    Everything in the file is checked before anything is written: an invalid part refuses the
    whole file (400, naming it) and nothing changes. The scope-migration clue keys are dropped
    from metadata; project and chat memories are context only. ``legacy`` (the operator's
    ``import_memories --legacy``, never the API) keeps those clue keys (also the ones of
    ``evidence``) and brings ``memories.global`` in as pre-isolation global items, written
    by ``global_writer()`` so that ``migrate_memory_scope inspect`` can judge them. ``dry_run``
    reports what would happen and writes nothing."""
    check_version(data)
    items = import_items(data)
    memories = data.get("memories")
    if not legacy and isinstance(memories, dict) and memories.get(GLOBAL_SECTION) not in (None, []):
        raise InvalidInput(
            "memories.global holds pre-isolation global items, which only an operator can import "
            "(manage.py import_memories --legacy); nothing was imported.",
            code=ErrorCode.GLOBAL_NOT_ALLOWED,
        )
    global_items = import_items(data, section=GLOBAL_SECTION, kinds=KIND_VALUES, required=False)
    notes = notes_to_restore(data)
    switch, auto = settings_to_restore(data)
    profile = profile_to_restore(data)
    if global_items and global_writer is None:
        raise InvalidInput(
            "memories.global needs the operator's writer; nothing was imported.", code=ErrorCode.INVALID_IMPORT
        )
    report = ImportReport(dry_run=dry_run)
    tiered = {"legacy": legacy, "origin": origin}
    published = []
    try:
        # All or nothing: the memories, profile, settings, switch and notes files commit together
        # (the notes files are published last and taken back if the transaction fails).
        with transaction.atomic(durable=not dry_run):
            if not dry_run:
                user_lock_acquire(user_id=actor.pk)  # first: the order every memory write takes
            _import_memories(
                items=items,
                section="user",
                scope=(Tier.USER.value, str(actor.pk)),
                active=home_memories(user=actor).filter(live_q(), scope_type=Tier.USER),
                writer=lambda: actor,
                report=report,
                tier=Tier.USER,
                **tiered,
            )
            if global_items:
                _import_memories(
                    items=global_items,
                    section=GLOBAL_SECTION,
                    scope=GLOBAL_SCOPE,
                    active=Memory.objects.filter(live_q(), scope_type=Tier.GLOBAL, scope_id=GLOBAL_SCOPE_ID),
                    writer=global_writer,
                    report=report,
                    tier=Tier.GLOBAL,
                    **tiered,
                )
            # A dry run creates no profile row.
            current_profile = Profile.objects.filter(user=actor).first() or Profile(user=actor)
            profile_changes = _changed(report, "user.", current_profile, profile)
            auto_changes = _changed(report, "settings.auto_memory.", auto_memory_settings_get(user=actor), auto)
            switch_changes = _changed(report, "settings.", user_settings_get(user=actor), switch)
            if not dry_run:
                if profile_changes:
                    identity_services.profile_update(user=actor, **profile_changes)
                if auto_changes:
                    automemory_services.auto_memory_settings_update(user=actor, changes=auto_changes)
                if switch_changes:
                    notes_services.user_settings_update(user=actor, **switch_changes)
            published = _restore_notes(actor=actor, notes=notes, report=report, origin=origin)
    except BaseException:
        notes_services.workspace_files_unpublish(user=actor, published=published)
        raise
    logger.info(
        "home import",
        extra={
            "actor": actor.pk,
            "memories_created": len(report.created),
            "global_created": len(report.created_global),
            "conflicts": len(report.conflicts),
            "dry_run": dry_run,
        },
    )
    return report
