"""The memory home's overview (docs/home.md): every source with its count, its latest items,
the sentence on which agents see it and when, and the switches that decide it; and how much
room is left (``Capacity``: the part of the notes file agents read, the rows an export holds),
with a calm warning near a limit."""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Count, F, Q, QuerySet, Window
from django.db.models.functions import RowNumber
from django.template.defaultfilters import filesizeformat
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from config.errors import DomainError
from identity_app.models import Project, User
from identity_app.permissions import CREATE_TASK, role_permissions
from identity_app.selectors import projects_with_my_role
from memory_app.automemory.selectors import auto_memory_settings_get
from memory_app.home.sources import (
    EXPORT_MAX_MEMORIES,
    MAX_CHATS,
    MAX_PROJECTS,
    SOURCE_AUTO,
    SOURCE_CHAT,
    SOURCE_NOTES,
    SOURCE_PROJECT,
    SOURCE_SHARED,
    SOURCE_USER,
    SourceRef,
    auto_q,
    home_memories,
    source_title,
)
from memory_app.memories.models import Memory, Tier, live_q
from memory_app.notes.selectors import user_settings_get, workspace_file_get
from memory_app.notes.workspace import MAX_WORKSPACE_FILE_BYTES, MEMORY_CONTEXT_BYTES, MEMORY_FILE
from memory_app.scoped.selectors import bound_chats

LATEST_PER_SOURCE = 5
EXPIRING_SOON_DAYS = 7
EXPIRING_SOON_LIMIT = 20
# Capacity: warn (calmly) from this share of a limit on.
NOTES_WARN_PERCENT = 80
EXPORT_WARN_PERCENT = 90


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
    items_url: str = ""  # set by the home page (memory_app/home/web/browse.py)
    notes_error: str = ""
    paused: int = 0  # of ``count``: paused ones (listed, used by no agent)
    # How agents use it, in a few words, and the state of the switch that decides it (None: no
    # switch, it is always so).
    use_label: str = ""
    use_on: bool | None = None
    chat_named: bool = False  # a chat the user gave a name


@dataclass
class Capacity:
    """How much room is left: the notes file against what agents read of it (and the file's
    own limit), and the home's rows against what one export holds; ``warnings`` are calm
    sentences near a limit."""

    notes_bytes: int
    notes_read_bytes: int = MEMORY_CONTEXT_BYTES
    notes_max_bytes: int = MAX_WORKSPACE_FILE_BYTES
    memories: int = 0
    export_limit: int = EXPORT_MAX_MEMORIES
    in_new_chats: int = LATEST_PER_SOURCE
    warnings: list[str] = field(default_factory=list)

    @property
    def notes_warn_bytes(self) -> int:
        return self.notes_read_bytes * NOTES_WARN_PERCENT // 100

    @property
    def export_warn(self) -> int:
        return self.export_limit * EXPORT_WARN_PERCENT // 100

    @property
    def notes_percent(self) -> int:
        return min(100, round(100 * self.notes_bytes / self.notes_read_bytes))

    @property
    def memories_percent(self) -> int:
        return min(100, round(100 * self.memories / self.export_limit))


@dataclass
class Overview:
    sources: list[Source]
    switches: dict[str, Switch]
    projects_total: int
    projects_shown: int
    chats_total: int
    chats_shown: int
    capacity: Capacity | None = None

    @property
    def total(self) -> int:
        """Active memories in the home, each counted once (auto-extracted ones are also in
        their project's count), plus the notes file's lines."""
        return sum(s.count for s in self.sources if s.ref.kind != SOURCE_AUTO)


def switches_get(*, user: User) -> dict[str, Switch]:
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


def _newest_of_each(qs: QuerySet[Memory], partition: str) -> dict[str, Memory]:
    """The newest live memory of each ``partition`` (a project id, a chat key) in one query."""
    ranked = (
        qs.filter(live_q())
        .annotate(
            newest=Window(RowNumber(), partition_by=[F(partition)], order_by=[F("created_at").desc(), F("id").desc()])
        )
        .filter(newest=1)
    )
    return {getattr(memory, partition): memory for memory in ranked}


def _counts(qs: QuerySet[Memory]) -> tuple[int, int]:
    """(live memories, of which paused) of ``qs`` in one query."""
    found = qs.aggregate(n=Count("pk", filter=live_q()), paused=Count("pk", filter=live_q() & Q(paused=True)))
    return found["n"], found["paused"]


def _use(kind: str, switches: dict[str, Switch]) -> tuple[str, bool | None]:
    """How agents use a source, in a few words, and the state of the switch that decides it."""
    if kind in (SOURCE_USER, SOURCE_PROJECT):
        return _("Given to your main agent in new chats"), switches["auto_memory_use"].on
    if kind == SOURCE_NOTES:
        return _("Read by your main agent at every turn"), switches["enable_memory"].on
    if kind == SOURCE_CHAT:
        return _("Looked up by this chat's bots"), None
    if kind == SOURCE_SHARED:
        return _("Found by every agent"), None
    return _("Written from your finished agent tasks"), switches["auto_memory_generate"].on


def _source(ref: SourceRef, all_switches: dict[str, Switch], **fields) -> Source:
    label, on = _use(ref.kind, all_switches)
    return Source(ref=ref, use_label=label, use_on=on, **fields)


def expiring_soon(*, user: User, now: datetime | None = None) -> list[Memory]:
    """The home's items that expire within ``EXPIRING_SOON_DAYS``, soonest first (bounded)."""
    now = now or timezone.now()
    return list(
        home_memories(user=user)
        .filter(live_q(now=now), expires_at__lte=now + timedelta(days=EXPIRING_SOON_DAYS))
        .select_related("project")
        .order_by("expires_at", "id")[:EXPIRING_SOON_LIMIT]
    )


def capacity_of(*, notes_bytes: int, memories: int) -> Capacity:
    """The room left, with a calm sentence for each limit that is near or passed."""
    capacity = Capacity(notes_bytes=notes_bytes, memories=memories)
    if notes_bytes > capacity.notes_read_bytes:
        capacity.warnings.append(
            _(
                "Your notes file is %(size)s: agents read only its first %(read)s, so its last %(rest)s are not "
                "read. Tidy it up, or move lasting facts into your memories."
            )
            % {
                "size": filesizeformat(notes_bytes),
                "read": filesizeformat(capacity.notes_read_bytes),
                "rest": filesizeformat(notes_bytes - capacity.notes_read_bytes),
            }
        )
    elif capacity.notes_percent >= NOTES_WARN_PERCENT:
        capacity.warnings.append(
            _(
                "Your notes file fills %(percent)s%% of what agents read of it (%(read)s). Beyond that its end is "
                "not read: a good moment to tidy it up."
            )
            % {"percent": capacity.notes_percent, "read": filesizeformat(capacity.notes_read_bytes)}
        )
    if capacity.memories_percent >= EXPORT_WARN_PERCENT:
        capacity.warnings.append(
            _(
                "You have %(n)s memories, every version counted; one export holds %(limit)s, and beyond that it "
                "leaves the oldest out. Forgetting what is no longer true makes room."
            )
            % {"n": memories, "limit": capacity.export_limit}
        )
    return capacity


def home_overview(*, user: User) -> Overview:
    """Every source with its count of active (unexpired) items and how many of them are paused,
    its newest items, the sentence on which agents see it and when, and its switches; and the
    room left (``Capacity``). A fixed number of queries, whatever the number of projects and
    chats (up to the caps)."""
    switches = switches_get(user=user)
    memories = home_memories(user=user)
    mine = memories.filter(scope_type=Tier.USER)
    count, paused = _counts(mine)
    sources = [
        _source(
            SourceRef(SOURCE_USER),
            switches,
            title=source_title(SourceRef(SOURCE_USER)),
            count=count,
            paused=paused,
            latest=_latest(mine),
            sentence=_sentence(SOURCE_USER, switches),
            switches=[switches["auto_memory_use"]],
        )
    ]
    notes = _source(
        SourceRef(SOURCE_NOTES),
        switches,
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
            paused_memories=Count(
                "memories", filter=live_q(prefix="memories__") & Q(memories__paused=True), distinct=True
            ),
            member_count=Count("memberships", distinct=True),
        ).order_by("name", "id")[:MAX_PROJECTS]
    )
    newest_in_project = _newest_of_each(
        memories.filter(scope_type=Tier.PROJECT, project_id__in=[p.pk for p in projects]), "project_id"
    )
    for project in projects:
        ref = SourceRef(SOURCE_PROJECT, project.pk)
        newest = newest_in_project.get(project.pk)
        sources.append(
            _source(
                ref,
                switches,
                title=source_title(ref, project_name=project.name),
                count=project.active_memories,
                paused=project.paused_memories,
                latest=[newest] if newest else [],
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
    in_chats = memories.filter(scope_type=Tier.CHAT, scope_id__in=keys)
    counts = {
        key: (n, p)
        for key, n, p in in_chats.filter(live_q())
        .order_by()
        .values_list("scope_id")
        .annotate(n=Count("pk"), p=Count("pk", filter=Q(paused=True)))
    }
    newest_in_chat = _newest_of_each(in_chats, "scope_id")
    names = {c.chat_key: c.display_name for c in chats}
    for key in keys:
        ref = SourceRef(SOURCE_CHAT, key)
        newest = newest_in_chat.get(key)
        sources.append(
            _source(
                ref,
                switches,
                title=source_title(ref, chat_names=names),
                count=counts.get(key, (0, 0))[0],
                paused=counts.get(key, (0, 0))[1],
                latest=[newest] if newest else [],
                sentence=_sentence(SOURCE_CHAT, switches),
                chat_named=bool(names.get(key)),
            )
        )

    shared = memories.filter(scope_type=Tier.GLOBAL)
    count, paused = _counts(shared)
    sources.append(
        _source(
            SourceRef(SOURCE_SHARED),
            switches,
            title=source_title(SourceRef(SOURCE_SHARED)),
            count=count,
            paused=paused,
            latest=_latest(shared),
            sentence=_sentence(SOURCE_SHARED, switches),
        )
    )

    auto = memories.filter(auto_q(user))
    count, paused = _counts(auto)
    sources.append(
        _source(
            SourceRef(SOURCE_AUTO),
            switches,
            title=source_title(SourceRef(SOURCE_AUTO)),
            count=count,
            paused=paused,
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
        capacity=capacity_of(notes_bytes=notes.notes_bytes, memories=memories.count()),
    )
