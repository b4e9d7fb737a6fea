"""Reads of the memory home (docs/home.md): everything agents may use about the signed-in user,
grouped by where it comes from, one search across all of it, and why each item is known.

Sources: ``user`` (my memories), ``project:<id>`` (each project I may read), ``notes`` (my
``MEMORY.md``), ``chat:<key>`` (each private chat bound to me), ``shared`` (global items that
were learned in a chat bound to me and shared with everyone, after review or through the
deployment's opt-in: ``Memory.source_chat_key``) and ``auto`` (project memories auto-memory
extracted from my runs; they are also part of their project). Rows are always read through
``memories_visible``, narrowed to those sources: a service principal's reach over every chat
does not make another person's chat part of its home. "Bound to me" is the one chat-binding
selector, ``chat_keys_bound_to``.
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Q, QuerySet
from django.utils import timezone
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from config.errors import DomainError, InvalidInput, NotFound
from config.validation import is_valid_id
from identity_app.models import Membership, Project
from identity_app.permissions import (
    CREATE_TASK,
    READ,
    project_ids_with_permission,
    project_require_permission,
    role_permissions,
    service_principal_ids,
)
from identity_app.selectors import profile_get, projects_with_my_role
from identity_app.session_keys import MAX_SESSION_KEY_LENGTH, ChatAddress
from memory_app.agent.notes_index import notes_lines_sync, notes_scope
from memory_app.agent.selectors import conversations_visible, runs_visible, user_settings_get, workspace_file_get
from memory_app.agent.workspace import MEMORY_FILE, WORKSPACE_FILES
from memory_app.automemory.models import AUTO_MEMORY_DEFAULTS, AutoMemoryLogEntry
from memory_app.automemory.selectors import auto_memory_log_for, auto_memory_log_for_memories, auto_memory_settings_get
from memory_app.memories.derived import scope_key, shared_scope_key
from memory_app.memories.models import Memory, Origin, Tier, live_q
from memory_app.memories.selectors import chat_is_bound_to, chat_keys_bound_to, memories_visible
from memory_app.reads.models import ItemKind, MemoryRead
from memory_app.reads.selectors import notes_reads_of, reads_of
from memory_app.scoped.models import CandidateDecision, MemoryCandidate, ScopeMigrationEntry
from memory_app.scoped.selectors import bound_chats, candidates_for_memories, migrations_applied_to
from memory_app.search import engine
from memory_app.search.highlight import highlight

MAX_PROJECTS = 50  # projects shown (and searched) in the home; the projects page lists them all
MAX_CHATS = 50
LATEST_PER_SOURCE = 5
SEARCH_LIMIT = 30
SEARCH_FIRST = 8  # the home shows the best few first, and more on request
MAX_QUERY_CHARS = 200
PROVENANCE_CHUNK = 500
EXPIRING_SOON_DAYS = 7
EXPIRING_SOON_LIMIT = 20

SOURCE_USER, SOURCE_NOTES, SOURCE_AUTO, SOURCE_ALL = "user", "notes", "auto", "all"
SOURCE_SHARED = "shared"  # shared from your chats
SIMPLE_SOURCES = (SOURCE_USER, SOURCE_NOTES, SOURCE_AUTO, SOURCE_SHARED)
SOURCE_PROJECT, SOURCE_CHAT = "project", "chat"


# --- sources ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class SourceRef:
    """One source of the home: ``kind`` and, for a project or a chat, its id or key."""

    kind: str
    ident: str = ""

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.ident}" if self.ident else self.kind


def source_parse(value, *, allow_all: bool = False) -> SourceRef:
    """``user``, ``notes``, ``auto``, ``shared``, ``project:<id>``, ``chat:<key>`` (and ``all``
    where a request may name every source); anything else is a 400 ``invalid_source``."""
    if isinstance(value, str) and len(value) <= MAX_SESSION_KEY_LENGTH + 10:
        if value in SIMPLE_SOURCES or (allow_all and value == SOURCE_ALL):
            return SourceRef(value)
        kind, sep, ident = value.partition(":")
        if sep and kind == SOURCE_PROJECT and is_valid_id(ident):
            return SourceRef(SOURCE_PROJECT, ident)
        if sep and kind == SOURCE_CHAT:
            try:
                address = ChatAddress.parse(ident)
            except DomainError:
                address = None
            if address is not None and address.is_typed and address.chat_key == ident:
                return SourceRef(SOURCE_CHAT, ident)
    names = "user, notes, auto, shared, project:<id>, chat:<key>" + (", all" if allow_all else "")
    raise InvalidInput(f"source must be one of {names}.", code="invalid_source")


def source_of(memory: Memory) -> SourceRef:
    if memory.scope_type == Tier.PROJECT:
        return SourceRef(SOURCE_PROJECT, memory.project_id)
    if memory.scope_type == Tier.CHAT:
        return SourceRef(SOURCE_CHAT, memory.scope_id)
    if memory.scope_type == Tier.GLOBAL:
        return SourceRef(SOURCE_SHARED)
    return SourceRef(SOURCE_USER)


def shared_from_chats_q(chat_keys) -> Q:
    """Global items shared from the chats ``chat_keys`` (a list or a values subquery)."""
    return Q(scope_type=Tier.GLOBAL, source_chat_key__in=chat_keys) & ~Q(source_chat_key="")


def _home_q(user: AbstractBaseUser) -> Q:
    bound = chat_keys_bound_to(user=user)
    return (
        Q(scope_type=Tier.USER, owner=user)
        | Q(scope_type=Tier.PROJECT, project_id__in=project_ids_with_permission(user=user, permission=READ))
        | Q(scope_type=Tier.CHAT, scope_id__in=bound)
        | shared_from_chats_q(bound)
    )


def home_memories(*, user: AbstractBaseUser) -> QuerySet[Memory]:
    """Every memory of the home, whatever its status: the user's own, their projects', those
    of the private chats bound to them, and the global items shared from those chats (read
    through the visibility rule)."""
    return memories_visible(user=user).filter(_home_q(user)).select_related("created_by")


def home_item_get(*, user: AbstractBaseUser, memory_id: str) -> Memory:
    memory = home_memories(user=user).filter(pk=str(memory_id)[:40]).first()
    if memory is None:
        raise NotFound("Memory not found.")
    return memory


def _auto_q(user: AbstractBaseUser) -> Q:
    return Q(scope_type=Tier.PROJECT, origin=Origin.AUTO, created_by=user)


def source_memories(*, user: AbstractBaseUser, source: SourceRef) -> QuerySet[Memory]:
    """The memories of one source (every status). A project the user may not read and a chat
    not bound to them are 404."""
    qs = home_memories(user=user)
    if source.kind == SOURCE_USER:
        return qs.filter(scope_type=Tier.USER)
    if source.kind == SOURCE_PROJECT:
        project = project_require_permission(user=user, project_id=source.ident, permission=READ)
        return qs.filter(scope_type=Tier.PROJECT, project=project)
    if source.kind == SOURCE_CHAT:
        if not chat_is_bound_to(user=user, chat_key=source.ident):
            raise NotFound("Chat not found.")
        return qs.filter(scope_type=Tier.CHAT, scope_id=source.ident)
    if source.kind == SOURCE_AUTO:
        return qs.filter(_auto_q(user))
    if source.kind == SOURCE_SHARED:
        return qs.filter(scope_type=Tier.GLOBAL)
    raise InvalidInput("The notes file has no memory rows; open it in the editor.", code="invalid_source")


def chat_names(*, user: AbstractBaseUser, keys) -> dict[str, str]:
    """The display names the user gave their bound chats (keys without one are left out)."""
    keys = [k for k in keys if k][:MAX_CHATS]
    if not keys:
        return {}
    return dict(
        bound_chats(user=user)
        .filter(chat_key__in=keys)
        .exclude(display_name="")
        .values_list("chat_key", "display_name")
    )


def source_title(source: SourceRef, *, project_name: str = "", chat_names: dict | None = None) -> str:
    if source.kind == SOURCE_USER:
        return _("About me")
    if source.kind == SOURCE_PROJECT:
        return _("Project %(name)s") % {"name": project_name or source.ident}
    if source.kind == SOURCE_CHAT:
        return _("Chat “%(name)s”") % {"name": (chat_names or {}).get(source.ident) or source.ident}
    if source.kind == SOURCE_AUTO:
        return _("Auto-extracted")
    if source.kind == SOURCE_NOTES:
        return _("Notes file")
    if source.kind == SOURCE_SHARED:
        return _("Shared from your chats")
    return _("Everything")


# --- the overview ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Switch:
    """A switch that decides whether agents use a source, its state and where it is changed."""

    name: str
    label: str
    on: bool
    url_name: str
    api_path: str


@dataclass
class Source:
    ref: SourceRef
    title: str
    count: int
    sentence: str
    switches: list[Switch] = field(default_factory=list)
    latest: list[Memory] = field(default_factory=list)
    project: Project | None = None
    role: str | None = None
    members: int = 0
    can_write: bool = True
    notes_bytes: int = 0
    notes_exists: bool = False
    notes_error: str = ""


@dataclass
class Overview:
    sources: list[Source]
    switches: dict[str, Switch]
    projects_total: int
    projects_shown: int
    chats_total: int
    chats_shown: int

    @property
    def total(self) -> int:
        """Active memories in the home, each counted once (auto-extracted ones are also in
        their project's count), plus the notes file's lines."""
        return sum(s.count for s in self.sources if s.ref.kind != SOURCE_AUTO)


def switches_get(*, user: AbstractBaseUser) -> dict[str, Switch]:
    """The three switches, each changed on the one settings panel (``web:settings``) and through
    ``/api/users/me/memory-switches`` (docs/auto-memory.md, "Switches")."""
    memory = user_settings_get(user=user)
    auto = auto_memory_settings_get(user=user)
    return {
        "enable_memory": Switch(
            "enable_memory",
            _("Memory (the notes file)"),
            memory.enable_memory,
            "web:settings",
            "/api/users/me/memory-switches",
        ),
        "auto_memory_use": Switch(
            "auto_memory_use",
            _("Use my memories in new agent tasks"),
            auto.use,
            "web:settings",
            "/api/users/me/memory-switches",
        ),
        "auto_memory_generate": Switch(
            "auto_memory_generate",
            _("Generate memories from my finished agent tasks"),
            auto.generate,
            "web:settings",
            "/api/users/me/memory-switches",
        ),
    }


def _state(switch: Switch) -> str:
    return _("on") if switch.on else _("off")


def _sentence(kind: str, switches: dict[str, Switch], *, members: int = 0) -> str:
    use, generate, notes = switches["auto_memory_use"], switches["auto_memory_generate"], switches["enable_memory"]
    if kind == SOURCE_USER:
        return _(
            "No other user reads these (operators of the service who hold the review permission can, in the "
            "admin). Your main agent gets the latest %(n)s at the start of each new chat when “%(switch)s” is "
            "on — it is %(state)s now. Helper agents it starts never see them."
        ) % {"n": LATEST_PER_SOURCE, "switch": use.label, "state": _state(use)}
    if kind == SOURCE_PROJECT:
        return ngettext(
            "Every member of this project can read these (%(members)s person). Your main agent gets the latest "
            "%(n)s at the start of a new chat in this project when “%(switch)s” is on — it is %(state)s now. "
            "Helper agents it starts never see them.",
            "Every member of this project can read these (%(members)s people). Your main agent gets the latest "
            "%(n)s at the start of a new chat in this project when “%(switch)s” is on — it is %(state)s now. "
            "Helper agents it starts never see them.",
            members,
        ) % {"members": members, "n": LATEST_PER_SOURCE, "switch": use.label, "state": _state(use)}
    if kind == SOURCE_NOTES:
        return _(
            "Your main agent reads this file at every turn and may add notes to it when “%(switch)s” is on — it "
            "is %(state)s now. When it is off the agent neither reads nor writes it. Helper agents it starts never see it."
        ) % {"switch": notes.label, "state": _state(notes)}
    if kind == SOURCE_CHAT:
        return _(
            "The bots of this chat look these up when you talk to them there (up to 8 relevant items per turn) and "
            "add new ones as you chat. Besides you and the bots, only operators who hold the review permission "
            "read them. No switch turns this off: forget what they should not use."
        )
    if kind == SOURCE_SHARED:
        return _(
            "Decisions, procedures, warnings and summaries learned in your chats that were shared with everyone "
            "(after an operator approved them, or directly where the service is set up so). Every user's and "
            "every bot's agents may find them. Forget one here and it is gone for everyone."
        )
    return _(
        "Auto-memory writes these from your finished agent tasks into their project when “%(switch)s” is on — it is "
        "%(state)s now. They are project memories: every member of the project reads them, and agents use them "
        "like any project memory."
    ) % {"switch": generate.label, "state": _state(generate)}


def _latest(qs: QuerySet[Memory]) -> list[Memory]:
    return list(qs.filter(live_q()).order_by("-created_at", "-id")[:LATEST_PER_SOURCE])


def expiring_soon(*, user: AbstractBaseUser, now: datetime | None = None) -> list[Memory]:
    """The home's items that expire within ``EXPIRING_SOON_DAYS``, soonest first (bounded)."""
    now = now or timezone.now()
    return list(
        home_memories(user=user)
        .filter(live_q(now=now), expires_at__lte=now + timedelta(days=EXPIRING_SOON_DAYS))
        .select_related("project")
        .order_by("expires_at", "id")[:EXPIRING_SOON_LIMIT]
    )


def home_overview(*, user: AbstractBaseUser) -> Overview:
    """Every source with its count of active (unexpired) items, its latest items (own memories and
    auto-extracted ones), the sentence on which agents see it and when, and its switches. A
    fixed number of queries, whatever the number of projects and chats (up to the caps)."""
    switches = switches_get(user=user)
    memories = home_memories(user=user)
    mine = memories.filter(scope_type=Tier.USER)
    sources = [
        Source(
            ref=SourceRef(SOURCE_USER),
            title=source_title(SourceRef(SOURCE_USER)),
            count=mine.filter(live_q()).count(),
            latest=_latest(mine),
            sentence=_sentence(SOURCE_USER, switches),
            switches=[switches["auto_memory_use"]],
        )
    ]
    notes = Source(
        ref=SourceRef(SOURCE_NOTES),
        title=source_title(SourceRef(SOURCE_NOTES)),
        count=0,
        sentence=_sentence(SOURCE_NOTES, switches),
        switches=[switches["enable_memory"]],
    )
    try:
        file = workspace_file_get(user=user, name=MEMORY_FILE)
        notes.count = sum(1 for line in file.content.splitlines() if line.strip())
        notes.notes_bytes, notes.notes_exists = file.size, file.exists
    except DomainError as exc:  # a file grown too large on disk, or an unsafe workspace path
        notes.notes_error = exc.message
    sources.append(notes)

    projects_qs = projects_with_my_role(user=user)
    projects = list(
        projects_qs.annotate(
            active_memories=Count("memories", filter=live_q(prefix="memories__"), distinct=True),
            member_count=Count("memberships", distinct=True),
        ).order_by("name", "id")[:MAX_PROJECTS]
    )
    for project in projects:
        ref = SourceRef(SOURCE_PROJECT, project.pk)
        sources.append(
            Source(
                ref=ref,
                title=source_title(ref, project_name=project.name),
                count=project.active_memories,
                sentence=_sentence(SOURCE_PROJECT, switches, members=project.member_count),
                switches=[switches["auto_memory_use"]],
                project=project,
                role=project.my_role,
                members=project.member_count,
                can_write=CREATE_TASK in role_permissions(project.my_role),
            )
        )

    chats = list(bound_chats(user=user)[:MAX_CHATS])
    keys = [chat.chat_key for chat in chats]
    counts = dict(
        memories.filter(live_q(), scope_type=Tier.CHAT, scope_id__in=keys)
        .order_by()
        .values_list("scope_id")
        .annotate(n=Count("pk"))
    )
    for key in keys:
        ref = SourceRef(SOURCE_CHAT, key)
        sources.append(
            Source(
                ref=ref,
                title=source_title(ref, chat_names={c.chat_key: c.display_name for c in chats}),
                count=counts.get(key, 0),
                sentence=_sentence(SOURCE_CHAT, switches),
            )
        )

    shared = memories.filter(scope_type=Tier.GLOBAL)
    sources.append(
        Source(
            ref=SourceRef(SOURCE_SHARED),
            title=source_title(SourceRef(SOURCE_SHARED)),
            count=shared.filter(live_q()).count(),
            latest=_latest(shared),
            sentence=_sentence(SOURCE_SHARED, switches),
        )
    )

    auto = memories.filter(_auto_q(user))
    sources.append(
        Source(
            ref=SourceRef(SOURCE_AUTO),
            title=source_title(SourceRef(SOURCE_AUTO)),
            count=auto.filter(live_q()).count(),
            latest=_latest(auto),
            sentence=_sentence(SOURCE_AUTO, switches),
            switches=[switches["auto_memory_generate"]],
        )
    )
    projects_total = len(projects) if len(projects) < MAX_PROJECTS else projects_qs.count()
    chats_total = len(chats) if len(chats) < MAX_CHATS else bound_chats(user=user).count()
    return Overview(
        sources=sources,
        switches=switches,
        projects_total=projects_total,
        projects_shown=len(projects),
        chats_total=chats_total,
        chats_shown=len(chats),
    )


# --- why an item is known ------------------------------------------------------------------
@dataclass
class Provenance:
    """Who or what wrote a memory, when, from where, and its place in the correction chain.

    References are filled only where the reader may follow them: a conversation or run of
    their own, their own auto-memory log entry."""

    sentence: str
    created_at: datetime
    author: str  # "you", "member", "service", "user", "system"
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


def _quoted(name: str) -> str:
    return f"“{name}”"


def _author(memory: Memory, *, user, services: set[int], members: set[tuple[str, int]]) -> tuple[str, str, str]:
    """(kind, name, how the sentence names them)."""
    creator = memory.created_by
    if creator is None:
        return "system", "", _("an author that is not recorded (or whose account is gone)")
    name = creator.get_username()
    if creator.pk == user.pk:
        return "you", name, _("you")
    if creator.pk in services:
        return "service", name, _("the agent runtime %(name)s") % {"name": _quoted(name)}
    if memory.scope_type == Tier.PROJECT and (memory.project_id, creator.pk) in members:
        return "member", name, _("project member %(name)s") % {"name": _quoted(name)}
    if memory.scope_type == Tier.PROJECT:
        return "user", name, _("%(name)s, no longer a member") % {"name": _quoted(name)}
    return "user", name, _quoted(name)


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
    creators = {m.created_by_id for m in memories if m.created_by_id}
    services = service_principal_ids(creators)
    project_ids = {m.project_id for m in memories if m.project_id}
    members = set(
        Membership.objects.filter(project_id__in=project_ids, user_id__in=creators).values_list("project_id", "user_id")
    )
    logs: dict[str, AutoMemoryLogEntry] = {}
    for entry in auto_memory_log_for_memories(user=user, memory_ids=ids):
        logs.setdefault(entry.memory_id, entry)
    candidates: dict[str, MemoryCandidate] = {}
    approvals: dict[str, MemoryCandidate] = {}
    pending: set[str] = set()
    for candidate in candidates_for_memories(ids):
        candidates.setdefault(candidate.memory_id, candidate)
        if candidate.decision == CandidateDecision.PENDING:
            pending.add(candidate.memory_id)
        elif candidate.decision == CandidateDecision.CREATED and candidate.reviewed_at is not None:
            approvals.setdefault(candidate.memory_id, candidate)
    migrations: dict[str, ScopeMigrationEntry] = {}
    for entry in migrations_applied_to(ids):
        migrations.setdefault(entry.item_id, entry)
    older = dict(
        Memory.objects.filter(superseded_by_id__in=ids).order_by("created_at").values_list("superseded_by_id", "pk")
    )
    run_ids = {_evidence_value(m, "run_id") for m in memories} | {e.run_ref for e in logs.values()}
    runs = set(runs_visible(user=user).filter(pk__in=run_ids - {""}).values_list("pk", flat=True))
    thread_ids = {m.source_thread_id for m in memories if m.source_thread_id} | {
        _evidence_value(m, "conversation_id") for m in memories
    }
    threads = dict(conversations_visible(user=user).filter(pk__in=thread_ids - {""}).values_list("pk", "title"))

    found: dict[str, Provenance] = {}
    for memory in memories:
        author, name, who = _author(memory, user=user, services=services, members=members)
        thread_id = memory.source_thread_id or _evidence_value(memory, "conversation_id")
        log = logs.get(memory.pk)
        run_id = log.run_ref if log else _evidence_value(memory, "run_id")
        imported = memory.evidence.get("imported") if isinstance(memory.evidence, dict) else None
        candidate = candidates.get(memory.pk)
        chat_key = (candidate.session_id if candidate else "") or _evidence_value(memory, "source_session_id")
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
            candidate=candidate,
            migration=migrations.get(memory.pk),
            imported=imported if isinstance(imported, dict) else None,
            replaces=older.get(memory.pk, ""),
            replaced_by=memory.superseded_by_id or "",
            shared_from=shared_from,
            approved_by=(approval.reviewed_by.get_username() if approval and approval.reviewed_by else ""),
            approved_at=approval.reviewed_at if approval else None,
            pending_review=memory.scope_type == Tier.CHAT and memory.pk in pending,
        )
        prov.sentence = _provenance_sentence(memory, prov, who=who)
        found[memory.pk] = prov
    return found


def _provenance_sentence(memory: Memory, prov: Provenance, *, who: str) -> str:
    where = ""
    if prov.thread_title or prov.thread_id:
        where = " " + _("in the conversation %(title)s") % {"title": _quoted(prov.thread_title or prov.thread_id)}
    elif memory.source_thread_id:
        where = " " + _("in a conversation you cannot open")
    if prov.imported is not None and prov.author == "you":
        text = _("You imported it from an export")
    elif memory.origin == Origin.AUTO:
        if prov.log_entry is not None:
            text = _("Auto-memory extracted it from your run %(run)s") % {"run": prov.log_entry.run_ref} + where
        elif prov.author == "you":
            text = _("Auto-memory extracted it from one of your runs") + where
        else:
            text = _("Auto-memory extracted it from a run of %(who)s") % {"who": who}
    elif memory.origin == Origin.CONSOLIDATION:
        dreaming = prov.candidate is not None and prov.candidate.source == "dream"
        template = (
            _("%(who)s consolidated it while dreaming over the chat %(chat)s")
            if dreaming
            else _("%(who)s consolidated it from the chat %(chat)s")
        )
        text = template % {"who": _capital(who), "chat": prov.chat_key or _("it was written in")}
    elif memory.origin == Origin.TOOL:
        text = _("An agent saved it with a memory tool for %(who)s") % {"who": who} + where
    elif memory.origin == Origin.MIGRATION:
        text = _("A scope migration wrote it")
    elif memory.origin == Origin.MANUAL:
        text = _("%(who)s wrote it by hand") % {"who": _capital(who)}
    else:
        text = _("%(who)s saved it through the API") % {"who": _capital(who)} + where
        if prov.chat_key and not where:
            text += " " + _("in the chat %(chat)s") % {"chat": prov.chat_key}
    parts = [text + "."]
    if prov.shared_from and prov.approved_at is not None:
        parts.append(
            _("%(who)s approved sharing it with everyone from your chat %(chat)s.")
            % {"who": _quoted(prov.approved_by) if prov.approved_by else _("An operator"), "chat": prov.shared_from}
        )
    elif prov.shared_from:
        parts.append(
            _("It was shared with everyone from your chat %(chat)s without review, as this service is set up.")
            % {"chat": prov.shared_from}
        )
    if prov.pending_review:
        parts.append(_("It waits for an operator's review before it is shared with everyone."))
    if prov.migration is not None:
        parts.append(_("A scope migration moved it from the global scope to this chat."))
    if prov.replaces:
        parts.append(_("It corrects an earlier version."))
    if prov.replaced_by:
        parts.append(_("A newer version replaced it."))
    return " ".join(parts)


def provenance_for(*, user: AbstractBaseUser, memories: list[Memory]) -> dict[str, Provenance]:
    """Provenance of each memory (id → ``Provenance``), in a fixed number of queries per
    ``PROVENANCE_CHUNK`` memories. ``memories`` must be rows ``user`` may read."""
    found: dict[str, Provenance] = {}
    memories = list(memories)
    for start in range(0, len(memories), PROVENANCE_CHUNK):
        found.update(_provenance_chunk(memories[start : start + PROVENANCE_CHUNK], user=user))
    return found


def project_roles(*, user: AbstractBaseUser, project_ids) -> dict[str, str]:
    return dict(Membership.objects.filter(user=user, project_id__in=set(project_ids)).values_list("project_id", "role"))


def may_change(memory: Memory, *, roles: dict[str, str]) -> bool:
    """Whether the reader may forget it, and correct it unless ``may_correct`` says otherwise
    (the services decide; this is for showing the buttons): their own, their bound chats' and
    what was shared from them, and a project's with ``create_task``. Called on home items only."""
    if memory.scope_type == Tier.PROJECT:
        return CREATE_TASK in role_permissions(roles.get(memory.project_id))
    return memory.scope_type in (Tier.USER, Tier.CHAT, Tier.GLOBAL)


def may_correct(memory: Memory, *, roles: dict[str, str]) -> bool:
    """An item shared with everyone from the reader's chat may be forgotten, not reworded."""
    return memory.scope_type != Tier.GLOBAL and may_change(memory, roles=roles)


def home_items(*, user: AbstractBaseUser, memories) -> list[Memory]:
    """Home items as the API and the pages show them: each memory (rows ``user`` may read) with
    its provenance (``prov``), its source (``source_key``) and that source's title (a bound chat
    by the name the user gave it: ``source_title``), and whether the reader may forget it
    (``can_change``) and correct it (``can_correct``). A fixed number of queries for the list."""
    memories = list(memories)
    prov = provenance_for(user=user, memories=memories)
    roles = project_roles(user=user, project_ids={m.project_id for m in memories if m.project_id})
    names = chat_names(user=user, keys={m.scope_id for m in memories if m.scope_type == Tier.CHAT})
    for memory in memories:
        source = source_of(memory)
        memory.prov = prov[memory.pk]
        memory.source_key = source.key
        memory.source_title = source_title(
            source, project_name=memory.project.name if memory.project else "", chat_names=names
        )
        memory.can_change = may_change(memory, roles=roles)
        memory.can_correct = may_correct(memory, roles=roles)
    return memories


# --- one search across the home --------------------------------------------------------------
@dataclass
class SearchHit:
    memory: Memory
    source: SourceRef
    title: str
    score: float
    highlighted: SafeString


@dataclass
class NotesHit:
    line: int
    text: str
    highlighted: SafeString
    score: float = 0.0


@dataclass
class HomeSearch:
    query: str
    hits: list[SearchHit]
    notes: list[NotesHit]
    terms: list[str]
    warnings: list[str]
    # Items and notes-file lines in one list, best first (``hits`` and ``notes`` are its parts).
    ranked: list[SearchHit | NotesHit] = field(default_factory=list)
    more: bool = False  # a higher limit would show more


def home_search(
    *, user: AbstractBaseUser, query: str, limit: int = SEARCH_LIMIT, with_notes: bool = True
) -> HomeSearch:
    """Rank the active memories of every source with the retrieval engine (the user's scope,
    each readable project's, each bound chat's and what was shared from it), loaded through
    ``home_memories``, and (``with_notes``) the lines of the notes file, indexed as documents
    of the user's notes scope: one list, best first, at most ``limit``; ``more`` says whether
    there is more to show."""
    query = (query or "").strip()[:MAX_QUERY_CHARS]
    limit = max(1, min(limit, SEARCH_LIMIT))
    project_ids = [
        row["project_id"] for row in project_ids_with_permission(user=user, permission=READ).order_by("project_id")
    ][:MAX_PROJECTS]
    names = dict(bound_chats(user=user).values_list("chat_key", "display_name")[:MAX_CHATS])
    chat_keys = list(names)
    scopes = [scope_key(Tier.USER.value, str(user.pk))]
    scopes += [scope_key(Tier.PROJECT.value, pid) for pid in project_ids]
    scopes += [scope_key(Tier.CHAT.value, key) for key in chat_keys]
    scopes += [shared_scope_key(key) for key in chat_keys]
    lines: dict[str, tuple[int, str]] = {}
    if with_notes and query:
        try:
            content = workspace_file_get(user=user, name=MEMORY_FILE).content
        except DomainError:
            content = ""  # a file grown too large on disk, or an unsafe path: searched without it
        lines = notes_lines_sync(user_id=user.pk, content=content)
        scopes.append(notes_scope(user.pk))
    # One more than shown tells whether there is more.
    found = engine.search(scopes=scopes, query=query, limit=limit + 1, depth=(limit + 1) * 2, floor=True)
    rows = {
        m.pk: m
        for m in home_memories(user=user).filter(
            Q(scope_type=Tier.USER)
            | Q(project_id__in=project_ids)
            | Q(scope_type=Tier.CHAT, scope_id__in=chat_keys)
            | shared_from_chats_q(chat_keys),
            live_q(),
            pk__in=[ref for ref in found.refs if ref not in lines],
        )
    }
    ranked: list[SearchHit | NotesHit] = []
    for hit in found.hits:
        if hit.ref in lines:
            number, line = lines[hit.ref]
            ranked.append(NotesHit(number, line[:500], highlight(line, found.terms, max_chars=500), hit.score))
        elif (memory := rows.get(hit.ref)) is not None:
            source = source_of(memory)
            title = source_title(
                source, project_name=memory.project.name if memory.project_id else "", chat_names=names
            )
            ranked.append(SearchHit(memory, source, title, hit.score, highlight(memory.content, found.terms)))
        if len(ranked) > limit:
            break
    more, ranked = len(ranked) > limit, ranked[:limit]
    return HomeSearch(
        query,
        [e for e in ranked if isinstance(e, SearchHit)],
        [e for e in ranked if isinstance(e, NotesHit)],
        found.terms,
        found.warnings,
        ranked=ranked,
        more=more,
    )


# --- export ----------------------------------------------------------------------------------
EXPORT_FORMAT = "memory-service-export"
EXPORT_VERSION = 2  # 2: the profile's language and every auto-memory setting; version 1 files are still read
EXPORT_READABLE_VERSIONS = (1, 2)
EXPORT_MAX_MEMORIES = 5000  # rows per export, over all sources (oldest rows of a large source first left out)
EXPORT_LOG_ENTRIES = 500
EXPORT_ITEM_KEYS = (
    "id",
    "kind",
    "content",
    "status",
    "origin",
    "origin_label",
    "created_at",
    "updated_at",
    "expires_at",
    "replaces",
    "superseded_by",
    "source_thread_id",
    "metadata",
    "evidence",
    "provenance",
)


def export_item(memory: Memory, prov: Provenance) -> dict:
    return {
        "id": memory.pk,
        "kind": memory.kind,
        "content": memory.content,
        "status": memory.status,
        "origin": memory.origin,
        "origin_label": memory.origin_label,
        "created_at": memory.created_at.isoformat(),
        "updated_at": memory.updated_at.isoformat(),
        "expires_at": memory.expires_at.isoformat() if memory.expires_at else None,
        "replaces": prov.replaces or None,
        "superseded_by": memory.superseded_by_id,
        "source_thread_id": memory.source_thread_id,
        "metadata": memory.metadata,
        "evidence": memory.evidence,
        "provenance": provenance_data(prov),
    }


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
    }


def home_export(*, user: AbstractBaseUser, now: datetime) -> dict:
    """All of the home as one versioned JSON document (docs/home.md): profile, switches,
    notes files, the memories of every source with their provenance (bounded), and the
    user's latest auto-memory log entries."""
    profile = profile_get(user=user)
    auto = auto_memory_settings_get(user=user)
    budget = EXPORT_MAX_MEMORIES
    truncated = False

    def rows(qs: QuerySet[Memory]) -> list[Memory]:
        nonlocal budget, truncated
        taken = list(qs.order_by("-created_at", "-id")[: budget + 1]) if budget > 0 else []
        if len(taken) > budget or (budget <= 0 and qs.exists()):
            truncated = True
        taken = taken[:budget]
        budget -= len(taken)
        return taken[::-1]  # oldest first, as a chain reads

    memories = home_memories(user=user)
    mine = rows(memories.filter(scope_type=Tier.USER))
    chat_keys = _chat_keys(user)
    chats = [(key, rows(memories.filter(scope_type=Tier.CHAT, scope_id=key))) for key in chat_keys]
    shared = [(key, rows(memories.filter(scope_type=Tier.GLOBAL, source_chat_key=key))) for key in chat_keys]
    projects = list(projects_with_my_role(user=user).order_by("name", "id")[:MAX_PROJECTS])
    project_rows = [(p, rows(memories.filter(scope_type=Tier.PROJECT, project=p))) for p in projects]
    everything = [
        *mine,
        *(m for _key, r in chats for m in r),
        *(m for _key, r in shared for m in r),
        *(m for _p, r in project_rows for m in r),
    ]
    prov = provenance_for(user=user, memories=everything)

    def items(found: list[Memory]) -> list[dict]:
        return [export_item(m, prov[m.pk]) for m in found]

    notes = {}
    for name in WORKSPACE_FILES:
        try:
            file = workspace_file_get(user=user, name=name)
            notes[name] = file.content if file.exists else None
        except DomainError as exc:
            notes[name] = {"error": exc.message}
    log = list(auto_memory_log_for(user=user)[:EXPORT_LOG_ENTRIES])
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "exported_at": now.isoformat(),
        "user": {
            "username": user.get_username(),
            "display_name": profile.display_name,
            "timezone": profile.timezone,
            "language": profile.language,
            "preferences": profile.preferences,
        },
        "settings": {
            "enable_memory": user_settings_get(user=user).enable_memory,
            "auto_memory": {name: getattr(auto, name) for name in AUTO_MEMORY_DEFAULTS},
        },
        "notes_files": notes,
        "memories": {
            "user": items(mine),
            "projects": [
                {"id": p.pk, "name": p.name, "role": p.my_role, "memories": items(found)} for p, found in project_rows
            ],
            "chats": [{"chat_key": key, "memories": items(found)} for key, found in chats],
            "shared": [{"chat_key": key, "memories": items(found)} for key, found in shared if found],
        },
        "auto_memory_log": [
            {
                "id": e.pk,
                "run_id": e.run_ref,
                "project_id": e.project_id_ref,
                "outcome": e.outcome,
                "gate": e.gate,
                "reason": e.reason,
                "memory_id": e.memory_id,
                "content": e.content,
                "created_at": e.created_at.isoformat(),
            }
            for e in log
        ],
        "reads": _export_reads(user),
        "truncated": truncated,
    }


EXPORT_READS = 5000


def _export_reads(user) -> dict:
    """Who read what, newest first, at most ``EXPORT_READS`` rows: the reads of the home's
    memories, of the notes-file versions and of the conversation messages (docs/home.md).
    Import ignores this section."""
    home_refs = home_memories(user=user).values("pk")
    qs = (
        MemoryRead.objects.filter(
            Q(item_kind=ItemKind.MEMORY, item_ref__in=home_refs)
            | Q(user=user, item_kind__in=[ItemKind.NOTES, ItemKind.MESSAGE])
        )
        .select_related("principal", "token")
        .order_by("-at", "-id")
    )
    rows = list(qs[: EXPORT_READS + 1])
    views = _read_views(user=user, reads=rows[:EXPORT_READS])
    return {
        "items": [{**read_data(view), "kind": row.item_kind} for row, view in zip(rows, views, strict=False)],
        "truncated": len(rows) > EXPORT_READS,
        "retention_days": settings.MEMORY_READS_RETENTION_DAYS,
    }


def _chat_keys(user) -> list[str]:
    return list(bound_chats(user=user).values_list("chat_key", flat=True)[:MAX_CHATS])


# --- who read this ---------------------------------------------------------------------------
@dataclass
class ReadView:
    """One read as its reader is shown it: when, how, by whom, for which run (linked only when
    the reader may open the run), and the item."""

    at: datetime
    path: str
    path_label: str
    principal: str
    token_name: str
    run_id: str
    run_visible: bool
    run_generation: int | None
    item_ref: str
    memory: Memory | None = None


def _read_views(*, user: AbstractBaseUser, reads: list[MemoryRead], memories: dict | None = None) -> list[ReadView]:
    """A fixed number of queries for any list of reads (the caller bounds it)."""
    run_ids = {r.run_ref for r in reads if r.run_ref}
    runs = set(runs_visible(user=user).filter(pk__in=run_ids).values_list("pk", flat=True)) if run_ids else set()
    token_owners = {r.token.user_id for r in reads if r.token is not None}
    services = service_principal_ids(token_owners) if token_owners else set()
    views = []
    for read in reads:
        token = read.token
        # A token's name is the holder's: shown for the reader's own tokens and a service's.
        shown_token = token is not None and (token.user_id == user.pk or token.user_id in services)
        views.append(
            ReadView(
                at=read.at,
                path=read.path,
                path_label=read.get_path_display(),
                principal=read.principal.get_username() if read.principal is not None else "",
                token_name=(token.name or token.prefix) if shown_token else "",
                run_id=read.run_ref,
                run_visible=read.run_ref in runs,
                run_generation=read.run_generation,
                item_ref=read.item_ref,
                memory=(memories or {}).get(read.item_ref),
            )
        )
    return views


def item_last_read(*, user: AbstractBaseUser, memory: Memory) -> ReadView | None:
    """The latest read of a home item (``memory`` as ``home_item_get`` returned it)."""
    read = reads_of(item_kind=ItemKind.MEMORY, refs=[memory.pk]).first()
    return _read_views(user=user, reads=[read])[0] if read is not None else None


def item_reads(*, user: AbstractBaseUser, memory_id: str) -> QuerySet[MemoryRead]:
    """The reads of one home item, newest first (404 when it is not in the reader's home)."""
    memory = home_item_get(user=user, memory_id=memory_id)
    return reads_of(item_kind=ItemKind.MEMORY, refs=[memory.pk])


def source_reads(*, user: AbstractBaseUser, source: SourceRef) -> QuerySet[MemoryRead]:
    """The reads of one source's items, newest first: the items are those ``source_memories``
    lets the reader see (a project they may not read, a chat not bound to them: 404); for the
    notes file, the reads of the reader's own notes-file versions."""
    if source.kind == SOURCE_NOTES:
        return notes_reads_of(user_id=user.pk)
    return reads_of(item_kind=ItemKind.MEMORY, refs=source_memories(user=user, source=source).values("pk"))


def read_views(*, user: AbstractBaseUser, reads: list[MemoryRead]) -> list[ReadView]:
    """``reads`` (a page of ``source_reads``/``item_reads``) with their items loaded through
    ``home_memories``."""
    refs = {r.item_ref for r in reads if r.item_kind == ItemKind.MEMORY}
    memories = {m.pk: m for m in home_memories(user=user).filter(pk__in=refs)} if refs else {}
    return _read_views(user=user, reads=reads, memories=memories)


def read_data(view: ReadView) -> dict:
    """The JSON form of a read (API and export)."""
    return {
        "at": view.at.isoformat(),
        "path": view.path,
        "principal": view.principal or None,
        "token_name": view.token_name or None,
        "run_id": view.run_id or None,
        "run_generation": view.run_generation,
        "item": view.item_ref,
    }
