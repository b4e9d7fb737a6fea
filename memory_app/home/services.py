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

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from config.errors import DomainError, InvalidInput, NotFound
from config.validation import clean_text, json_nesting_depth, json_text_problem
from identity_app.permissions import CREATE_TASK, project_ids_with_permission, project_require_permission
from memory_app.agent import services as agent_services
from memory_app.agent.workspace import MEMORY_FILE
from memory_app.home.selectors import (
    EXPORT_FORMAT,
    EXPORT_ITEM_KEYS,
    EXPORT_VERSION,
    SOURCE_ALL,
    SOURCE_AUTO,
    SOURCE_CHAT,
    SOURCE_NOTES,
    SOURCE_PROJECT,
    SOURCE_USER,
    home_item_get,
    home_memories,
    source_parse,
)
from memory_app.memories import services as memory_services
from memory_app.memories.models import IDENTITY_KINDS, MAX_CONTENT_CHARS, Memory, Origin, Status, Tier
from memory_app.memories.selectors import chat_is_bound_to
from memory_app.scoped import services as scoped_services
from memory_app.scoped.selectors import bound_chats

logger = logging.getLogger(__name__)

CONFIRM_WORD = "FORGET"
MAX_SELECTED = memory_services.MAX_FORGET_MANY
FORGET_ALL_LIMIT = 10_000  # memory rows per call; what is left is reported and forgotten by calling again


# --- one item --------------------------------------------------------------------------------
def home_item_correct(
    *, actor: AbstractBaseUser, memory_id: str, content: str, kind: str | None = None, origin: str = Origin.API
) -> Memory:
    """Correct (supersede) an item of the home: the tier's write rule decides (a project
    viewer gets 403; a chat item may be corrected by the user the chat is bound to)."""
    memory = home_item_get(user=actor, memory_id=memory_id)
    return memory_services.memory_supersede(
        actor=actor, memory_id=memory.pk, tier=memory.scope_type, content=content, kind=kind, origin=origin
    )


def home_item_forget(*, actor: AbstractBaseUser, memory_id: str) -> list[str]:
    memory = home_item_get(user=actor, memory_id=memory_id)
    return memory_services.memory_forget(actor=actor, memory_id=memory.pk, tier=memory.scope_type)


# --- a selection -----------------------------------------------------------------------------
def home_forget_selected(*, actor: AbstractBaseUser, memory_ids) -> list[str]:
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


def home_forget_source(*, actor: AbstractBaseUser, source: str, confirm) -> ForgetReport:
    """Forget everything of one source, or of all of them (``all``), after the typed
    confirmation ``FORGET``. Physical deletes through the memory services, in one transaction
    (all or nothing); the notes file afterwards through its own service.

    - ``user``: every version of every memory of mine;
    - ``project:<id>``: the memories I wrote in that project (other members' stay); needs
      ``create_task`` there;
    - ``chat:<key>``: every item of a chat bound to me, and consolidation's records of it;
    - ``auto``: memories auto-memory extracted from my runs, in projects where I may write;
    - ``notes``: my ``MEMORY.md`` and its change history;
    - ``all``: my memories, the auto-extracted ones, every bound chat and the notes file (not
      the project memories I wrote by hand: they are the team's).
    """
    if confirm != CONFIRM_WORD:
        raise InvalidInput(f"Type {CONFIRM_WORD} to confirm; nothing was forgotten.", code="confirmation_required")
    ref = source_parse(source, allow_all=True)
    report = ForgetReport(source=ref.key)
    kinds = (SOURCE_USER, SOURCE_AUTO, SOURCE_CHAT, SOURCE_NOTES) if ref.kind == SOURCE_ALL else (ref.kind,)
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
            for key in keys:
                budget = _forget_rows(actor, memories.filter(scope_type=Tier.CHAT, scope_id=key), report, budget)
                report.candidates += scoped_services.chat_candidates_forget(actor=actor, chat_key=key)
    if SOURCE_NOTES in kinds:
        # Outside the transaction above: the workspace services own their (durable) transactions
        # and the per-user lock, as every notes-file write does. The file's change history holds
        # its old text, so it is forgotten too.
        report.notes_deleted = agent_services.workspace_file_delete(user=actor, name=MEMORY_FILE)
        agent_services.workspace_history_clear(user=actor, name=MEMORY_FILE)
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


@dataclass
class ImportReport:
    created: list[str] = field(default_factory=list)
    duplicates: int = 0
    not_active: int = 0
    results: list[dict] = field(default_factory=list)


def _import_error(index: int, message: str, code: str = "invalid_import") -> InvalidInput:
    return InvalidInput(f"memories.user[{index}]: {message}", code=code, details={"index": index})


def _import_items(data) -> list[dict]:
    """The items of ``memories.user`` in an export, checked before anything is written:
    the export's format and version, at most ``MAX_IMPORT_ITEMS`` items, known keys only, a
    kind of the user tier, a content the API would take; metadata is checked by the service."""
    if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
        raise InvalidInput(f"Not an export of this service (format must be {EXPORT_FORMAT!r}).", code="invalid_import")
    if data.get("version") != EXPORT_VERSION or isinstance(data.get("version"), bool):
        raise InvalidInput(f"Only version {EXPORT_VERSION} exports can be imported.", code="invalid_import")
    memories = data.get("memories")
    items = memories.get("user") if isinstance(memories, dict) else None
    if not isinstance(items, list):
        raise InvalidInput("memories.user must be a list.", code="invalid_import")
    if len(items) > MAX_IMPORT_ITEMS:
        raise InvalidInput(f"At most {MAX_IMPORT_ITEMS} memories can be imported at once.", code="too_many")
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise _import_error(index, "must be an object.")
        unknown = sorted(set(item) - set(EXPORT_ITEM_KEYS))
        if unknown:
            raise _import_error(index, f"unknown keys {', '.join(map(str, unknown))}.")
        if item.get("kind") not in IDENTITY_KINDS:
            raise _import_error(index, f"kind must be one of {', '.join(sorted(IDENTITY_KINDS))}.", "invalid_kind")
        content = item.get("content")
        if not isinstance(content, str) or not content.strip():
            raise _import_error(index, "content must be a non-empty string.", "invalid_content")
        if len(content.strip()) > MAX_CONTENT_CHARS:
            raise _import_error(index, f"content is longer than {MAX_CONTENT_CHARS} characters.", "too_large")
        try:
            clean_text(content, field="content")
        except DomainError as exc:
            raise _import_error(index, exc.message, exc.code) from None
        if item.get("status", Status.ACTIVE) not in Status.values:
            raise _import_error(index, "unknown status.")
        if not isinstance(item.get("metadata", {}), dict):
            raise _import_error(index, "metadata must be an object.")
        for key in IMPORTED_KEYS:
            if key in item and item[key] is not None and not isinstance(item[key], str):
                raise _import_error(index, f"{key} must be a string.")
    return items


def import_parse(raw: bytes) -> dict:
    """An uploaded export file: at most ``MAX_IMPORT_BYTES`` of UTF-8 JSON, nested no deeper
    than the API allows, with no NUL characters or lone surrogates (the API body rules)."""
    if len(raw) > MAX_IMPORT_BYTES:
        raise InvalidInput(f"The file is larger than {MAX_IMPORT_BYTES} bytes.", code="too_large")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInput("The file is not UTF-8 text.", code="invalid_import") from None
    max_depth = settings.API_MAX_JSON_DEPTH
    if text.count("[") + text.count("{") > max_depth and json_nesting_depth(text) > max_depth:
        raise InvalidInput(f"The file nests deeper than {max_depth} levels.", code="too_deep")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise InvalidInput("The file is not JSON.", code="invalid_import") from None
    problem = json_text_problem(data)
    if problem:
        raise InvalidInput(f"The file has a string that {problem}.", code="invalid_import")
    return data


def home_import(*, actor: AbstractBaseUser, data, origin: str = Origin.API) -> ImportReport:
    """Import the user memories of an export as memories of ``actor``; idempotent: an item
    whose text (normalized as for duplicate items) is already an active memory of mine, or
    came earlier in the file, is skipped, and so are versions that were not active (the chain's
    active end holds the fact). All or nothing: an invalid item refuses the whole file (400,
    naming the item) and nothing is written."""
    items = _import_items(data)
    report = ImportReport()
    scope = (Tier.USER.value, str(actor.pk))
    with transaction.atomic():
        # Two imports of one file at once: the second waits and then finds every duplicate.
        scoped_services.lock_scope(scope)
        active = home_memories(user=actor).filter(scope_type=Tier.USER, status=Status.ACTIVE)
        texts = list(active.order_by("-created_at", "-id").values_list("content", flat=True)[: IMPORT_DEDUPE_SCAN + 1])
        scanned_all = len(texts) <= IMPORT_DEDUPE_SCAN
        seen = {scoped_services.duplicate_key(text) for text in texts}
        for index, item in enumerate(items):
            if item.get("status", Status.ACTIVE) != Status.ACTIVE:
                report.not_active += 1
                report.results.append({"index": index, "result": "not_active"})
                continue
            key = scoped_services.duplicate_key(item["content"])
            duplicate = key in seen or (
                not scanned_all and active.filter(content__iexact=item["content"].strip()).exists()
            )
            if duplicate:
                report.duplicates += 1
                report.results.append({"index": index, "result": "duplicate"})
                continue
            imported = {k: item[k] for k in IMPORTED_KEYS if isinstance(item.get(k), str)}
            try:
                memory = memory_services.memory_create(
                    actor=actor,
                    tier=Tier.USER,
                    kind=item["kind"],
                    content=item["content"],
                    origin=origin,
                    metadata=item.get("metadata") or {},
                    evidence={"imported": imported},
                )
            except DomainError as exc:
                raise _import_error(index, exc.message, exc.code) from None
            seen.add(key)
            report.created.append(memory.pk)
            report.results.append({"index": index, "result": "created", "id": memory.pk})
    return report
