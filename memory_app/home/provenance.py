"""Why an item of the memory home is known (docs/home.md): who or what wrote it, when, from
where, and its place in the correction chain, as a sentence and as data (``provenance_data``,
the JSON form the API and the export share)."""

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, F, Window
from django.db.models.functions import RowNumber
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _

from config.errors import DomainError
from config.sentences import join_sentences
from identity_app.chat_reach import chat_of_session
from identity_app.models import Membership, User
from identity_app.permissions import service_principal_ids
from memory_app.automemory.models import AutoMemoryLogEntry
from memory_app.automemory.selectors import auto_memory_log_for_memories
from memory_app.memories.models import ChangedField, Memory, MemoryChange, Origin, Tier
from memory_app.runs.selectors import runs_visible
from memory_app.scoped.models import CandidateDecision, MemoryCandidate, ScopeMigrationEntry
from memory_app.scoped.selectors import bound_chats, candidates_for_memories, migrations_applied_to
from memory_app.threads.selectors import conversations_visible

PROVENANCE_CHUNK = 500
CHANGES_SHOWN = 5  # the latest changes in place per memory (``changes_total`` counts them all)
# Who wrote a memory or changed it, as the API names them (``author``, a change's ``by``).
AUTHORS = ("you", "member", "service", "user", "system")


@dataclass
class Provenance:
    """Who or what wrote a memory, when, from where, and its place in the correction chain.

    References are filled only where the reader may follow them: a conversation or run of
    their own, their own auto-memory log entry."""

    sentence: str
    created_at: datetime
    author: str  # one of AUTHORS
    author_name: str = ""
    thread_id: str = ""
    thread_title: str = ""
    run_id: str = ""
    log_entry: AutoMemoryLogEntry | None = None
    chat_key: str = ""
    candidate: MemoryCandidate | None = None
    migration: ScopeMigrationEntry | None = None
    imported: dict | None = None
    replaces: str = ""
    replaced_by: str = ""
    # A global item shared from one of the reader's chats: which chat, and who approved it when
    # (empty: shared without review, as the deployment allows).
    shared_from: str = ""
    approved_by: str = ""
    approved_at: datetime | None = None
    # A chat item that waits for review before it is shared with everyone.
    pending_review: bool = False
    # Changes in place (pause, resume, expiry: ``memory_change``), newest first, at most
    # ``CHANGES_SHOWN``, each with who made it (``who``: "you", "service", …; ``who_name``).
    changes: list[MemoryChange] = field(default_factory=list)
    changes_total: int = 0
    paused: bool = False
    # The names the reader gave the chats above (``chat_key``, ``shared_from``), if any.
    chat_name: str = ""
    shared_from_name: str = ""


def _quoted(name: str) -> str:
    return f"“{name}”"


def _author(memory: Memory, *, user, services: set[int], members: set[tuple[str, int]]) -> tuple[str, str, str]:
    """(kind, name, how the sentence names them) of whoever wrote ``memory``."""
    return _person(memory.created_by, memory=memory, user=user, services=services, members=members)


def _person(person, *, memory: Memory, user, services: set[int], members: set[tuple[str, int]]) -> tuple[str, str, str]:
    """(kind, name, how the sentence names them) of someone who wrote or changed ``memory``."""
    if person is None:
        return "system", "", _("an author that is not recorded (or whose account is gone)")
    name = person.get_username()
    if person.pk == user.pk:
        return "you", name, _("you")
    if person.pk in services:
        return "service", name, _("the agent service %(name)s") % {"name": _quoted(name)}
    if memory.scope_type == Tier.PROJECT and (memory.project_id, person.pk) in members:
        return "member", name, _("project member %(name)s") % {"name": _quoted(name)}
    if memory.scope_type == Tier.PROJECT:
        return "user", name, _("%(name)s, no longer a member") % {"name": _quoted(name)}
    return "user", name, _quoted(name)


def _changes_of(ids: list[str]) -> tuple[dict[str, list[MemoryChange]], dict[str, int]]:
    """The latest ``CHANGES_SHOWN`` changes in place of each memory, newest first, with who made
    them, and how many each has: two queries, whatever the number of changes."""
    latest: dict[str, list[MemoryChange]] = {}
    ranked = (
        MemoryChange.objects.filter(memory_id__in=ids)
        .annotate(
            rank=Window(RowNumber(), partition_by=[F("memory_id")], order_by=[F("changed_at").desc(), F("id").desc()])
        )
        .filter(rank__lte=CHANGES_SHOWN)
        .select_related("changed_by")
        .order_by("memory_id", "-changed_at", "-id")
    )
    for change in ranked:
        latest.setdefault(change.memory_id, []).append(change)
    totals = (
        dict(
            MemoryChange.objects.filter(memory_id__in=list(latest))
            .order_by()
            .values_list("memory_id")
            .annotate(n=Count("id"))
        )
        if latest
        else {}
    )
    return latest, totals


def _chat_of(key: str) -> str:
    """The chat a session key or chat key names (lanes dropped), or the key as it is."""
    try:
        return chat_of_session(key) or key
    except DomainError:
        return key


def _chat_words(key: str, name: str) -> str:
    """A chat as the sentences name it: the name the reader gave it, else its key."""
    return _quoted(name) if name else key


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _evidence_value(memory: Memory, key: str) -> str:
    for data in (memory.evidence, memory.metadata):
        value = data.get(key) if isinstance(data, dict) else None
        if isinstance(value, str) and value:
            return value[:200]
    return ""


def _provenance_chunk(memories: list[Memory], *, user) -> dict[str, Provenance]:
    ids = [m.pk for m in memories]
    changes, change_totals = _changes_of(ids)
    creators = {m.created_by_id for m in memories if m.created_by_id}
    creators |= {c.changed_by_id for found in changes.values() for c in found if c.changed_by_id}
    services = service_principal_ids(creators)
    project_ids = {m.project_id for m in memories if m.project_id}
    members = set(
        Membership.objects.filter(project_id__in=project_ids, user_id__in=creators).values_list("project_id", "user_id")
    )
    logs: dict[str, AutoMemoryLogEntry] = {}
    for entry in auto_memory_log_for_memories(user=user, memory_ids=ids):
        logs.setdefault(entry.memory_id, entry)
    # Keyed by the candidate's memory_id (nullable on the model; never None here, see the query).
    candidates: dict[str | None, MemoryCandidate] = {}
    approvals: dict[str | None, MemoryCandidate] = {}
    pending: set[str | None] = set()
    for candidate in candidates_for_memories(ids):
        candidates.setdefault(candidate.memory_id, candidate)
        if candidate.decision == CandidateDecision.PENDING:
            pending.add(candidate.memory_id)
        elif candidate.decision == CandidateDecision.CREATED and candidate.reviewed_at is not None:
            approvals.setdefault(candidate.memory_id, candidate)
    migrations: dict[str, ScopeMigrationEntry] = {}
    for migration in migrations_applied_to(ids):
        migrations.setdefault(migration.item_id, migration)
    older = dict(
        Memory.objects.filter(superseded_by_id__in=ids).order_by("created_at").values_list("superseded_by_id", "pk")
    )
    run_ids = {_evidence_value(m, "run_id") for m in memories} | {e.run_ref for e in logs.values()}
    runs = set(runs_visible(user=user).filter(pk__in=run_ids - {""}).values_list("pk", flat=True))
    thread_ids = {m.source_thread_id for m in memories if m.source_thread_id} | {
        _evidence_value(m, "conversation_id") for m in memories
    }
    threads = dict(conversations_visible(user=user).filter(pk__in=thread_ids - {""}).values_list("pk", "title"))
    chat_keys = {_chat_of(c.session_id) for c in candidates.values() if c.session_id}
    chat_keys |= {_chat_of(_evidence_value(m, "source_session_id")) for m in memories}
    chat_keys |= {m.source_chat_key for m in memories if m.source_chat_key}
    names = dict(
        bound_chats(user=user)
        .filter(chat_key__in=chat_keys - {""})
        .exclude(display_name="")
        .values_list("chat_key", "display_name")
    )

    found: dict[str, Provenance] = {}
    for memory in memories:
        author, name, who = _author(memory, user=user, services=services, members=members)
        thread_id = memory.source_thread_id or _evidence_value(memory, "conversation_id")
        log = logs.get(memory.pk)
        run_id = log.run_ref if log else _evidence_value(memory, "run_id")
        imported = memory.evidence.get("imported") if isinstance(memory.evidence, dict) else None
        record = candidates.get(memory.pk)
        chat_key = (record.session_id if record else "") or _evidence_value(memory, "source_session_id")
        shared_from = memory.source_chat_key if memory.scope_type == Tier.GLOBAL else ""
        approval = approvals.get(memory.pk) if shared_from else None
        prov = Provenance(
            sentence="",
            created_at=memory.created_at,
            author=author,
            author_name=name,
            thread_id=thread_id if thread_id in threads else "",
            thread_title=threads.get(thread_id, ""),
            run_id=run_id if run_id in runs else "",
            log_entry=log,
            chat_key=chat_key,
            candidate=record,
            migration=migrations.get(memory.pk),
            imported=imported if isinstance(imported, dict) else None,
            replaces=older.get(memory.pk, ""),
            replaced_by=memory.superseded_by_id or "",
            shared_from=shared_from,
            approved_by=(approval.reviewed_by.get_username() if approval and approval.reviewed_by else ""),
            approved_at=approval.reviewed_at if approval else None,
            pending_review=memory.scope_type == Tier.CHAT and memory.pk in pending,
            changes=changes.get(memory.pk, []),
            changes_total=change_totals.get(memory.pk, 0),
            paused=memory.paused,
            chat_name=names.get(_chat_of(chat_key), "") if chat_key else "",
            shared_from_name=names.get(shared_from, "") if shared_from else "",
        )
        for change in prov.changes:
            kind, name, words = _person(change.changed_by, memory=memory, user=user, services=services, members=members)
            new_time = parse_datetime(change.new_value) if isinstance(change.new_value, str) else None
            vars(change).update(who=kind, who_name=name, who_words=words, new_time=new_time)
        prov.sentence = _provenance_sentence(memory, prov, who=who)
        found[memory.pk] = prov
    return found


def _provenance_sentence(memory: Memory, prov: Provenance, *, who: str) -> str:
    """How the memory came to be, then what happened to it since (sharing, review, moves,
    corrections, changes in place): whole sentences of the reader's language, each translated
    as one message, joined as that language writes them."""
    parts = [_provenance_origin(memory, prov, who=who), _provenance_where(memory, prov)]
    if prov.shared_from and prov.approved_at is not None:
        parts.append(
            _("%(who)s approved sharing it with everyone from your chat %(chat)s.")
            % {
                "who": _quoted(prov.approved_by) if prov.approved_by else _("An operator"),
                "chat": _chat_words(prov.shared_from, prov.shared_from_name),
            }
        )
    elif prov.shared_from:
        parts.append(
            _("It was shared with everyone from your chat %(chat)s without review, as this service is set up.")
            % {"chat": _chat_words(prov.shared_from, prov.shared_from_name)}
        )
    if prov.pending_review:
        parts.append(_("It waits for an operator's review before it is shared with everyone."))
    if prov.migration is not None:
        parts.append(_("An operator moved it into this chat from the memories shared with everyone."))
    if prov.replaces:
        parts.append(_("It corrects an earlier version."))
    if prov.replaced_by:
        parts.append(_("A newer version replaced it."))
    parts += _changes_sentences(prov)
    return join_sentences(*parts)


def _latest_change(prov: Provenance, field_name: str) -> MemoryChange | None:
    return next((c for c in prov.changes if c.field == field_name), None)


def _changes_sentences(prov: Provenance) -> list[str]:
    """The state the changes in place left: paused (by whom), resumed, a changed expiry."""
    parts = []
    pause = _latest_change(prov, ChangedField.PAUSED)
    if prov.paused and pause is not None and pause.new_value is True:
        parts.append(
            _("%(who)s paused it: no agent uses it until it is resumed.") % {"who": _capital(vars(pause)["who_words"])}
        )
    elif prov.paused:
        parts.append(_("It is paused: no agent uses it until it is resumed."))
    elif pause is not None and pause.new_value is False:
        parts.append(_("%(who)s resumed it after a pause.") % {"who": _capital(vars(pause)["who_words"])})
    expiry = _latest_change(prov, ChangedField.EXPIRES_AT)
    if expiry is not None:
        who = _capital(vars(expiry)["who_words"])
        if expiry.new_value is None:
            parts.append(_("%(who)s removed its expiry.") % {"who": who})
        else:
            parts.append(_("%(who)s changed its expiry.") % {"who": who})
    return parts


def _provenance_where(memory: Memory, prov: Provenance) -> str:
    """In which conversation it was written, as a sentence of its own (or nothing): for what
    the API, an agent's tool or the reader's own auto-memory wrote (a chat's items name their
    chat; another member's task is not the reader's to follow)."""
    if prov.imported is not None and prov.author == "you":
        return ""
    if memory.origin in (Origin.CONSOLIDATION, Origin.MIGRATION, Origin.MANUAL):
        return ""
    if memory.origin == Origin.AUTO and prov.log_entry is None and prov.author != "you":
        return ""
    if prov.thread_title or prov.thread_id:
        return _("It was written in the conversation %(title)s.") % {
            "title": _quoted(prov.thread_title or prov.thread_id)
        }
    if memory.source_thread_id:
        return _("It was written in a conversation you cannot open.")
    return ""


def _provenance_origin(memory: Memory, prov: Provenance, *, who: str) -> str:
    """Who or what wrote the memory and how, as one sentence."""
    if prov.imported is not None and prov.author == "you":
        return _("You imported it from an export.")
    if memory.origin == Origin.AUTO:
        if prov.log_entry is not None:
            return _("Auto-memory extracted it from your agent task %(run)s.") % {"run": prov.log_entry.run_ref}
        if prov.author == "you":
            return _("Auto-memory extracted it from one of your agent tasks.")
        return _("Auto-memory extracted it from an agent task of %(who)s.") % {"who": who}
    if memory.origin == Origin.CONSOLIDATION:
        dreaming = prov.candidate is not None and prov.candidate.source == "dream"
        template = (
            _("%(who)s learned it when looking back over the chat %(chat)s.")
            if dreaming
            else _("%(who)s learned it from the chat %(chat)s.")
        )
        chat = _chat_words(prov.chat_key, prov.chat_name) if prov.chat_key else _("it was written in")
        return template % {"who": _capital(who), "chat": chat}
    if memory.origin == Origin.TOOL:
        return _("An agent saved it with a memory tool for %(who)s.") % {"who": who}
    if memory.origin == Origin.MIGRATION:
        return _("An operator moved it here.")
    if memory.origin == Origin.MANUAL:
        return _("%(who)s wrote it by hand.") % {"who": _capital(who)}
    if _evidence_value(memory, "via") == "mem0":
        return _("%(who)s saved it through the mem0-compatible API.") % {"who": _capital(who)}
    if _evidence_value(memory, "via") == "store":
        return _("%(who)s saved it through the store API (LangGraph).") % {"who": _capital(who)}
    if prov.chat_key and not (prov.thread_title or prov.thread_id or memory.source_thread_id):
        return _("%(who)s saved it through the API in the chat %(chat)s.") % {
            "who": _capital(who),
            "chat": _chat_words(prov.chat_key, prov.chat_name),
        }
    return _("%(who)s saved it through the API.") % {"who": _capital(who)}


def provenance_for(*, user: User, memories: list[Memory]) -> dict[str, Provenance]:
    """Provenance of each memory (id → ``Provenance``), in a fixed number of queries per
    ``PROVENANCE_CHUNK`` memories. ``memories`` must be rows ``user`` may read."""
    found: dict[str, Provenance] = {}
    memories = list(memories)
    for start in range(0, len(memories), PROVENANCE_CHUNK):
        found.update(_provenance_chunk(memories[start : start + PROVENANCE_CHUNK], user=user))
    return found


def provenance_data(prov: Provenance) -> dict:
    """The JSON form of a provenance (API and export)."""
    log = prov.log_entry
    candidate = prov.candidate
    migration = prov.migration
    return {
        "sentence": prov.sentence,
        "created_at": prov.created_at.isoformat(),
        "author": prov.author,
        "author_name": prov.author_name,
        "thread": {"id": prov.thread_id, "title": prov.thread_title} if prov.thread_id else None,
        "run_id": prov.run_id or None,
        "auto_memory_log_entry": (
            {"id": log.pk, "run_id": log.run_ref, "outcome": log.outcome, "created_at": log.created_at.isoformat()}
            if log
            else None
        ),
        "chat_key": prov.chat_key or None,
        "consolidation": (
            {
                "candidate_id": candidate.pk,
                "source": candidate.source,
                "decision": candidate.decision,
                "session_id": candidate.session_id,
                "created_at": candidate.created_at.isoformat(),
            }
            if candidate
            else None
        ),
        "scope_migration": (
            {
                "plan": migration.plan.name,
                "applied_at": migration.plan.applied_at.isoformat() if migration.plan.applied_at else None,
                "detail": migration.result_detail,
            }
            if migration
            else None
        ),
        "imported": prov.imported,
        "replaces": prov.replaces or None,
        "replaced_by": prov.replaced_by or None,
        "shared": (
            {
                "chat_key": prov.shared_from,
                "approved_by": prov.approved_by or None,
                "approved_at": prov.approved_at.isoformat() if prov.approved_at else None,
            }
            if prov.shared_from
            else None
        ),
        "pending_review": prov.pending_review,
        "paused": prov.paused,
        "changes": [change_data(change) for change in prov.changes],
        "changes_total": prov.changes_total,
    }


def change_data(change: MemoryChange) -> dict:
    """One change in place as the API and the export show it."""
    return {
        "field": change.field,
        "old": change.old_value,
        "new": change.new_value,
        "at": change.changed_at.isoformat(),
        "by": vars(change).get("who", "system"),
        "by_name": vars(change).get("who_name", ""),
    }
