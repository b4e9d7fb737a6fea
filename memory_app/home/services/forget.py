"""Forget a selection, or everything of a source (or all of them) after a typed confirmation."""

import logging
from dataclasses import dataclass, field

from django.db import transaction

from config.errors import InvalidInput, NotFound
from identity_app.models import User
from identity_app.permissions import CREATE_TASK, project_ids_with_permission, project_require_permission
from memory_app.home.errors import ErrorCode
from memory_app.home.sources import (
    SOURCE_ALL,
    SOURCE_AUTO,
    SOURCE_CHAT,
    SOURCE_NOTES,
    SOURCE_PROJECT,
    SOURCE_SHARED,
    SOURCE_USER,
    home_memories,
    source_parse,
)
from memory_app.memories import services as memory_services
from memory_app.memories.models import (
    Memory,
    Origin,
    Status,
    Tier,
)
from memory_app.memories.selectors import chat_is_bound_to
from memory_app.notes import services as notes_services
from memory_app.notes.workspace import MEMORY_FILE
from memory_app.scoped import services as scoped_services
from memory_app.scoped.models import ChatForgetUndo
from memory_app.scoped.selectors import bound_chats

logger = logging.getLogger(__name__)


CONFIRM_WORD = "FORGET"
MAX_SELECTED = memory_services.MAX_FORGET_MANY
FORGET_ALL_LIMIT = 10_000  # memory rows per call; what is left is reported and forgotten by calling again


# --- a selection -----------------------------------------------------------------------------
def home_forget_selected(*, actor: User, memory_ids) -> list[str]:
    """Forget the selected items, all or nothing: an id that is not in the caller's home (or
    that they may not change) refuses the whole selection and nothing is forgotten."""
    if not isinstance(memory_ids, list | tuple) or not all(isinstance(i, str) for i in memory_ids):
        raise InvalidInput("ids must be a list of memory ids.", code=ErrorCode.INVALID_IDS)
    ids = list(dict.fromkeys(i[:40] for i in memory_ids))
    if not ids:
        raise InvalidInput("Select at least one memory.", code=ErrorCode.INVALID_IDS)
    if len(ids) > MAX_SELECTED:
        raise InvalidInput(f"Select at most {MAX_SELECTED} memories at once.", code=ErrorCode.TOO_MANY)
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
        raise InvalidInput(
            f"Type {CONFIRM_WORD} to confirm; nothing was forgotten.", code=ErrorCode.CONFIRMATION_REQUIRED
        )
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
