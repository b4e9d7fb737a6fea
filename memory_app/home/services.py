"""Writes of the memory home (docs/home.md): correct and forget an item of any source, forget
a selection, forget everything of a source (or all of them) after a typed confirmation, and
import memories from an export.

Every deletion goes through ``memory_app.memories.services`` (the write rule, older versions
along, search documents, postings and vectors with them); the notes file through the
workspace service (its lock and publish path).
"""

import json
import logging
from dataclasses import dataclass, field
from typing import cast

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _

from config.errors import DomainError, InvalidInput, NotFound
from config.validation import (
    DuplicateKey,
    clean_text,
    json_nesting_depth,
    json_text_problem,
    unique_keys,
    validate_json_container,
)
from identity_app import services as identity_services
from identity_app.models import Profile, User
from identity_app.permissions import CREATE_TASK, project_ids_with_permission, project_require_permission
from memory_app.automemory import services as automemory_services
from memory_app.automemory.selectors import auto_memory_settings_get
from memory_app.distill.redaction import redact, redact_strings
from memory_app.home.export import EXPORT_FORMAT, EXPORT_ITEM_KEYS, EXPORT_READABLE_VERSIONS
from memory_app.home.sources import (
    SOURCE_ALL,
    SOURCE_AUTO,
    SOURCE_CHAT,
    SOURCE_NOTES,
    SOURCE_PROJECT,
    SOURCE_SHARED,
    SOURCE_USER,
    home_item_get,
    home_memories,
    source_parse,
)
from memory_app.memories import services as memory_services
from memory_app.memories.models import (
    GLOBAL_SCOPE_ID,
    IDENTITY_KINDS,
    KIND_VALUES,
    Memory,
    Origin,
    Status,
    Tier,
    live_q,
)
from memory_app.memories.selectors import chat_is_bound_to
from memory_app.notes import services as notes_services
from memory_app.notes.history import Author
from memory_app.notes.locks import user_lock_acquire
from memory_app.notes.models import WorkspaceChangeSource
from memory_app.notes.selectors import user_settings_get
from memory_app.notes.workspace import MEMORY_FILE, WORKSPACE_FILES, validate_workspace_content
from memory_app.scoped import services as scoped_services
from memory_app.scoped.models import ChatForgetUndo
from memory_app.scoped.scope import GLOBAL_SCOPE, SCOPE_CLUE_KEYS
from memory_app.scoped.selectors import bound_chats

logger = logging.getLogger(__name__)

CONFIRM_WORD = "FORGET"
MAX_SELECTED = memory_services.MAX_FORGET_MANY
FORGET_ALL_LIMIT = 10_000  # memory rows per call; what is left is reported and forgotten by calling again


# --- one item --------------------------------------------------------------------------------
def home_item_correct(
    *,
    actor: User,
    memory_id: str,
    content: str,
    kind: str | None = None,
    origin: str = Origin.API,
    expires_at=memory_services.KEEP_EXPIRY,
) -> Memory:
    """Correct (supersede) an item of the home: the tier's write rule decides (a project
    viewer gets 403; a chat item may be corrected by the user the chat is bound to).
    ``expires_at``: the new version's expiry (default: the old one's)."""
    memory = home_item_get(user=actor, memory_id=memory_id)
    return memory_services.memory_supersede(
        actor=actor,
        memory_id=memory.pk,
        tier=memory.scope_type,
        content=content,
        kind=kind,
        origin=origin,
        expires_at=expires_at,
    )


def home_item_change(*, actor: User, memory_id: str, **changes) -> Memory:
    """Change an item of the home in place (``expires_at``, ``paused``: ``memory_change``); the
    tier's write rule decides, as for correcting it (an item shared with everyone from the
    user's chat is theirs to forget, not to pause: 403)."""
    memory = home_item_get(user=actor, memory_id=memory_id)
    return memory_services.memory_change(actor=actor, memory_id=memory.pk, tier=memory.scope_type, **changes)


def home_item_forget(*, actor: User, memory_id: str) -> list[str]:
    memory = home_item_get(user=actor, memory_id=memory_id)
    return memory_services.memory_forget(actor=actor, memory_id=memory.pk, tier=memory.scope_type)


# --- a selection -----------------------------------------------------------------------------
def home_forget_selected(*, actor: User, memory_ids) -> list[str]:
    """Forget the selected items, all or nothing: an id that is not in the caller's home (or
    that they may not change) refuses the whole selection and nothing is forgotten."""
    if not isinstance(memory_ids, list | tuple) or not all(isinstance(i, str) for i in memory_ids):
        raise InvalidInput("ids must be a list of memory ids.", code="invalid_ids")
    ids = list(dict.fromkeys(i[:40] for i in memory_ids))
    if not ids:
        raise InvalidInput("Select at least one memory.", code="invalid_ids")
    if len(ids) > MAX_SELECTED:
        raise InvalidInput(f"Select at most {MAX_SELECTED} memories at once.", code="too_many")
    with transaction.atomic():
        found = set(home_memories(user=actor).filter(pk__in=ids).values_list("pk", flat=True))
        if len(found) != len(ids):
            raise NotFound("Memory not found.")
        return memory_services.memory_forget_many(actor=actor, memory_ids=ids)


# --- everything of a source ----------------------------------------------------------------
@dataclass
class ForgetReport:
    source: str
    forgotten: list[str] = field(default_factory=list)
    candidates: int = 0
    notes_deleted: bool = False
    remaining: int = 0
    # Auto-extracted memories in projects where the caller may no longer write (they stay).
    kept_read_only: int = 0
    # Forgetting one chat can be undone for a while (``scoped_services.chat_forget_undo``).
    undo: ChatForgetUndo | None = None


def _forget_rows(actor, qs, report: ForgetReport, budget: int) -> int:
    """Forget the rows of ``qs`` (newest first, older versions along), at most ``budget``."""
    ids = list(qs.order_by("-created_at", "-id").values_list("pk", flat=True)[: budget + 1])
    if len(ids) > budget:
        report.remaining += qs.count() - budget
        ids = ids[:budget]
    for start in range(0, len(ids), MAX_SELECTED):
        # Rows forgotten as an older version of an earlier batch are gone already.
        batch = list(Memory.objects.filter(pk__in=ids[start : start + MAX_SELECTED]).values_list("pk", flat=True))
        report.forgotten.extend(memory_services.memory_forget_many(actor=actor, memory_ids=batch))
    return budget - len(ids)


def home_forget_source(*, actor: User, source: str, confirm) -> ForgetReport:
    """Forget everything of one source, or of all of them (``all``), after the typed
    confirmation ``FORGET``. Physical deletes through the memory services, in one transaction
    (all or nothing); the notes file afterwards through its own service.

    - ``user``: every version of every memory of mine;
    - ``project:<id>``: the memories I wrote in that project (other members' stay); needs
      ``create_task`` there;
    - ``chat:<key>``: every item of a chat bound to me, and consolidation's records of it;
    - ``auto``: memories auto-memory extracted from my runs, in projects where I may write;
    - ``shared``: every global item shared from a chat bound to me (for everyone: forgetting
      is physical);
    - ``notes``: my ``MEMORY.md`` and its change history;
    - ``all``: my memories, the auto-extracted ones, every bound chat and what was shared from
      it, and the notes file (not the project memories I wrote by hand: they are the team's).
    """
    if confirm != CONFIRM_WORD:
        raise InvalidInput(f"Type {CONFIRM_WORD} to confirm; nothing was forgotten.", code="confirmation_required")
    ref = source_parse(source, allow_all=True)
    report = ForgetReport(source=ref.key)
    everything = (SOURCE_USER, SOURCE_AUTO, SOURCE_CHAT, SOURCE_SHARED, SOURCE_NOTES)
    kinds = everything if ref.kind == SOURCE_ALL else (ref.kind,)
    budget = FORGET_ALL_LIMIT
    memories = home_memories(user=actor)
    with transaction.atomic():
        if SOURCE_USER in kinds:
            budget = _forget_rows(actor, memories.filter(scope_type=Tier.USER), report, budget)
        if SOURCE_PROJECT in kinds:
            project = project_require_permission(user=actor, project_id=ref.ident, permission=CREATE_TASK)
            mine = memories.filter(scope_type=Tier.PROJECT, project=project, created_by=actor)
            budget = _forget_rows(actor, mine, report, budget)
        if SOURCE_AUTO in kinds:
            auto = memories.filter(scope_type=Tier.PROJECT, origin=Origin.AUTO, created_by=actor)
            writable = project_ids_with_permission(user=actor, permission=CREATE_TASK)
            report.kept_read_only = auto.exclude(project_id__in=writable).filter(status=Status.ACTIVE).count()
            budget = _forget_rows(actor, auto.filter(project_id__in=writable), report, budget)
        if SOURCE_CHAT in kinds:
            if ref.kind == SOURCE_CHAT:
                if not chat_is_bound_to(user=actor, chat_key=ref.ident):
                    raise NotFound("Chat not found.")
                keys = [ref.ident]
            else:
                keys = list(bound_chats(user=actor).values_list("chat_key", flat=True))
            if ref.kind == SOURCE_CHAT:
                report.undo = scoped_services.chat_forget_undo_keep(actor=actor, chat_key=ref.ident)
            for key in keys:
                budget = _forget_rows(actor, memories.filter(scope_type=Tier.CHAT, scope_id=key), report, budget)
                report.candidates += scoped_services.chat_candidates_forget(actor=actor, chat_key=key)
        if SOURCE_SHARED in kinds:
            budget = _forget_rows(actor, memories.filter(scope_type=Tier.GLOBAL), report, budget)
    if SOURCE_NOTES in kinds:
        # Outside the transaction above: the workspace services own their (durable) transactions
        # and the per-user lock, as every notes-file write does. The file's change history holds
        # its old text, so it is forgotten too.
        report.notes_deleted = notes_services.workspace_file_delete(user=actor, name=MEMORY_FILE)
        notes_services.workspace_history_clear(user=actor, name=MEMORY_FILE)
    logger.info(
        "home source forgotten",
        extra={"actor": actor.pk, "source": ref.key, "memories": len(report.forgotten), "notes": report.notes_deleted},
    )
    return report


# --- import ----------------------------------------------------------------------------------
MAX_IMPORT_ITEMS = 1000
MAX_IMPORT_BYTES = 1024 * 1024
IMPORT_DEDUPE_SCAN = 20_000
IMPORTED_KEYS = ("id", "origin", "created_at")
GLOBAL_SECTION = "global"  # memories.global: pre-isolation global items, read only by the operator's --legacy import
PROFILE_FIELDS = ("display_name", "timezone", "language", "preferences")
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


def _import_error(section: str, index: int, message: str, code: str = "invalid_import") -> InvalidInput:
    return InvalidInput(f"memories.{section}[{index}]: {message}", code=code, details={"index": index})


def _check_version(data) -> None:
    if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
        raise InvalidInput(
            _("Not an export of this service (format must be %(format)r).") % {"format": EXPORT_FORMAT},
            code="invalid_import",
        )
    version = data.get("version")
    if isinstance(version, bool) or version not in EXPORT_READABLE_VERSIONS:
        readable = " or ".join(str(v) for v in EXPORT_READABLE_VERSIONS)
        raise InvalidInput(
            _("Only version %(versions)s exports can be imported.") % {"versions": readable}, code="invalid_import"
        )


def _import_items(data, *, section: str = "user", kinds=IDENTITY_KINDS, required: bool = True) -> list[dict]:
    """The items of ``memories.<section>`` in an export, checked before anything is written:
    at most ``MAX_IMPORT_ITEMS`` items, known keys only, a kind of the tier, a content the memory
    service takes (``validate_content``); metadata and evidence are checked by the memory service."""
    memories = data.get("memories")
    items = memories.get(section) if isinstance(memories, dict) else None
    if items is None and not required:
        return []
    if not isinstance(items, list):
        raise InvalidInput(_("memories.%(section)s must be a list.") % {"section": section}, code="invalid_import")
    if len(items) > MAX_IMPORT_ITEMS:
        raise InvalidInput(
            _("At most %(n)s memories can be imported at once.") % {"n": MAX_IMPORT_ITEMS}, code="too_many"
        )
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise _import_error(section, index, _("must be an object."))
        unknown = sorted(set(item) - set(EXPORT_ITEM_KEYS))
        if unknown:
            raise _import_error(section, index, _("unknown keys %(keys)s.") % {"keys": ", ".join(map(str, unknown))})
        if item.get("kind") not in kinds:
            raise _import_error(
                section,
                index,
                _("kind must be one of %(kinds)s.") % {"kinds": ", ".join(sorted(kinds))},
                "invalid_kind",
            )
        try:
            memory_services.validate_content(item.get("content"))  # the memory service's own check
        except DomainError as exc:
            raise _import_error(section, index, exc.message, exc.code) from None
        if item.get("status", Status.ACTIVE) not in Status.values:
            raise _import_error(section, index, _("unknown status."))
        for key in ("metadata", "evidence"):
            if item.get(key) is not None and not isinstance(item[key], dict):
                raise _import_error(section, index, _("%(key)s must be an object.") % {"key": key})
        for key in IMPORTED_KEYS:
            if key in item and item[key] is not None and not isinstance(item[key], str):
                raise _import_error(section, index, _("%(key)s must be a string.") % {"key": key})
        item["expires_at"] = _import_expiry(item.get("expires_at"), section=section, index=index)
        if not isinstance(item.get("paused", False), bool):
            raise _import_error(section, index, _("paused must be true or false."), "invalid_paused")
    return items


def _import_expiry(value, *, section: str, index: int):
    """``expires_at`` of an exported item: null, or an ISO 8601 date-time with a time zone. One
    that has passed is not an error: the item is skipped (``expired``) when the file is written."""
    if value is None:
        return None
    parsed = None
    if isinstance(value, str) and len(value) <= 64:
        try:
            parsed = parse_datetime(value.strip())
        except ValueError:
            parsed = None
    if parsed is None:
        raise _import_error(
            section, index, _("expires_at must be an ISO 8601 date-time or null."), "invalid_expires_at"
        )
    if timezone.is_naive(parsed):
        raise _import_error(section, index, _("expires_at needs a time zone."), "invalid_expires_at")
    return parsed


def import_parse(raw: bytes) -> dict:
    """An uploaded export file: at most ``MAX_IMPORT_BYTES`` of UTF-8 JSON, nested no deeper
    than the API allows, with no NUL characters or lone surrogates (the API body rules)."""
    if len(raw) > MAX_IMPORT_BYTES:
        raise InvalidInput(_("The file is larger than %(n)s bytes.") % {"n": MAX_IMPORT_BYTES}, code="too_large")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInput(_("The file is not UTF-8 text."), code="invalid_import") from None
    max_depth = settings.API_MAX_JSON_DEPTH
    if text.count("[") + text.count("{") > max_depth and json_nesting_depth(text) > max_depth:
        raise InvalidInput(_("The file nests deeper than %(n)s levels.") % {"n": max_depth}, code="too_deep")
    try:
        data = json.loads(text, object_pairs_hook=unique_keys)
    except DuplicateKey as exc:
        raise InvalidInput(_("The file is not valid: %(error)s") % {"error": exc}, code="duplicate_key") from None
    except (ValueError, RecursionError):
        raise InvalidInput(_("The file is not JSON."), code="invalid_import") from None
    problem = json_text_problem(data)
    if problem:
        raise InvalidInput(_("The file has a string that %(problem)s.") % {"problem": problem}, code="invalid_import")
    return data


def _section(data: dict, name: str) -> dict:
    value = data.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput(_("%(name)s must be an object.") % {"name": name}, code="invalid_import")
    return value


def _notes_to_restore(data: dict) -> dict[str, str]:
    """``notes_files`` of an export: a known file name → its text (``null``: the file did not
    exist, and an entry the export could not read are left alone); every text within the
    workspace limits."""
    notes = {}
    for name, content in _section(data, "notes_files").items():
        if name not in WORKSPACE_FILES:
            raise InvalidInput(
                _("notes_files.%(name)s: only %(files)s can be imported.")
                % {"name": name, "files": ", ".join(WORKSPACE_FILES)},
                code="invalid_import",
            )
        if content is None or isinstance(content, dict):
            continue
        try:
            notes[name] = validate_workspace_content(content)
        except DomainError as exc:
            raise InvalidInput(f"notes_files.{name}: {exc.message}", code=exc.code) from None
    return notes


def _settings_to_restore(data: dict) -> tuple[dict, dict]:
    """(``enable_memory`` if present, auto-memory fields present), checked by the rules the
    settings pages use."""
    settings_data = _section(data, "settings")
    unknown = sorted(set(settings_data) - {"enable_memory", "auto_memory"})
    if unknown:
        raise InvalidInput(
            _("settings: unknown keys %(keys)s.") % {"keys": ", ".join(map(str, unknown))}, code="invalid_import"
        )
    switch = {}
    if "enable_memory" in settings_data:
        if not isinstance(settings_data["enable_memory"], bool):
            raise InvalidInput(_("settings.enable_memory must be true or false."), code="invalid_settings")
        switch["enable_memory"] = settings_data["enable_memory"]
    auto = settings_data.get("auto_memory")
    if auto is None:
        auto = {}
    if not isinstance(auto, dict):
        raise InvalidInput(_("settings.auto_memory must be an object."), code="invalid_import")
    try:
        auto = automemory_services.auto_memory_settings_validate(dict(auto))
    except DomainError as exc:
        raise InvalidInput(f"settings.auto_memory: {exc.message}", code=exc.code) from None
    return switch, auto


def _profile_to_restore(data: dict) -> dict:
    """The profile fields present in ``user`` (never the username), each checked by the model's
    own validators (time zone, language, no credentials in the preferences)."""
    changes = {}
    for name, value in _section(data, "user").items():
        if name not in PROFILE_FIELDS:
            continue  # the username and anything else are context, never imported
        model_field = cast(models.Field, Profile._meta.get_field(name))  # PROFILE_FIELDS are concrete fields
        try:
            if name == "preferences" and not isinstance(value, dict):
                # An empty list would pass the model's validators, which skip empty values.
                raise ValidationError(_("must be an object."))
            if name != "preferences":
                if not isinstance(value, str):
                    raise ValidationError(_("must be a string."))
                clean_text(value, field=name)
            changes[name] = model_field.clean(value, None)
        except ValidationError as exc:
            raise InvalidInput(f"user.{name}: {' '.join(exc.messages)}", code="invalid_profile") from None
        except DomainError as exc:
            raise InvalidInput(f"user.{name}: {exc.message}", code=exc.code) from None
    return changes


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
            for name, value in (("metadata", metadata), ("evidence", evidence)):
                validate_json_container(value, field=name, max_bytes=memory_services.MAX_JSON_BYTES)
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
            raise _import_error(section, index, exc.message, exc.code) from None
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
    _check_version(data)
    items = _import_items(data)
    memories = data.get("memories")
    if not legacy and isinstance(memories, dict) and memories.get(GLOBAL_SECTION) not in (None, []):
        raise InvalidInput(
            "memories.global holds pre-isolation global items, which only an operator can import "
            "(manage.py import_memories --legacy); nothing was imported.",
            code="global_not_allowed",
        )
    global_items = _import_items(data, section=GLOBAL_SECTION, kinds=KIND_VALUES, required=False)
    notes = _notes_to_restore(data)
    switch, auto = _settings_to_restore(data)
    profile = _profile_to_restore(data)
    if global_items and global_writer is None:
        raise InvalidInput("memories.global needs the operator's writer; nothing was imported.", code="invalid_import")
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
