"""The memory home's overview (docs/home.md): every source with its count, its latest items,
the sentence on which agents see it and when, and the switches that decide it."""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Count, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from config.errors import DomainError
from identity_app.models import Project, User
from identity_app.permissions import CREATE_TASK, role_permissions
from identity_app.selectors import projects_with_my_role
from memory_app.automemory.selectors import auto_memory_settings_get
from memory_app.home.sources import (
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
from memory_app.notes.workspace import MEMORY_FILE
from memory_app.scoped.selectors import bound_chats

LATEST_PER_SOURCE = 5
EXPIRING_SOON_DAYS = 7
EXPIRING_SOON_LIMIT = 20


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


def expiring_soon(*, user: User, now: datetime | None = None) -> list[Memory]:
    """The home's items that expire within ``EXPIRING_SOON_DAYS``, soonest first (bounded)."""
    now = now or timezone.now()
    return list(
        home_memories(user=user)
        .filter(live_q(now=now), expires_at__lte=now + timedelta(days=EXPIRING_SOON_DAYS))
        .select_related("project")
        .order_by("expires_at", "id")[:EXPIRING_SOON_LIMIT]
    )


def home_overview(*, user: User) -> Overview:
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

    auto = memories.filter(auto_q(user))
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
