"""Who read an item of the memory home (docs/home.md): the reads log as its reader is shown
it, and the JSON form the API and the export share.

A project memory's reads show every member that the project's agents read it, and when; which
member's agent it was — the identity, the API key's name, the run — only to the memory's author,
to the project's owners and admins (``manage``), and to the member whose own run read it
(``ReadView.hidden``). Any other item's reads by another person's agents (a shared item, read by
everyone's) show when and how, never whose."""

from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet
from django.utils.translation import gettext as _

from identity_app.models import User
from identity_app.permissions import MANAGE, project_ids_with_permission, service_principal_ids
from memory_app.home.sources import SOURCE_NOTES, SourceRef, home_memories, source_memories
from memory_app.memories.models import Memory
from memory_app.reads.models import ItemKind, MemoryRead
from memory_app.reads.selectors import notes_reads_of, reads_of
from memory_app.runs.selectors import runs_visible


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
    hidden: bool = False  # which member's agent read it is not this reader's to see


def _hidden_reads(*, user: User, reads: list[MemoryRead]) -> dict[int, bool]:
    """The reads (ids) whose reader ``user`` may not be shown, each with whether its item is a
    project memory. Of a project memory, every read not for ``user`` unless ``user`` wrote it or
    owns or administers its project; of any other item, every read for another user (a shared
    item, global, first said in ``user``'s chat, is read by everyone's agents: whose they were is
    theirs; a bot's search of a chat is for nobody and stays shown). Two queries at most."""
    others = [r for r in reads if r.user_id != user.pk]
    if not others:
        return {}
    refs = {r.item_ref for r in others if r.item_kind == ItemKind.MEMORY}
    projects = (
        {
            pk: (project_id, author)
            for pk, project_id, author in Memory.objects.filter(pk__in=refs, project__isnull=False).values_list(
                "pk", "project_id", "created_by_id"
            )
        }
        if refs
        else {}
    )
    managed = (
        set(
            project_ids_with_permission(user=user, permission=MANAGE)
            .filter(project_id__in={project_id for project_id, _ in projects.values()})
            .values_list("project_id", flat=True)
        )
        if projects
        else set()
    )
    shown = {pk for pk, (project_id, author) in projects.items() if author == user.pk or project_id in managed}
    return {
        r.pk: r.item_ref in projects
        for r in others
        if r.item_ref not in shown and (r.item_ref in projects or r.user_id is not None)
    }


def _read_views(*, user: User, reads: list[MemoryRead], memories: dict | None = None) -> list[ReadView]:
    """A fixed number of queries for any list of reads (the caller bounds it)."""
    run_ids = {r.run_ref for r in reads if r.run_ref}
    runs = set(runs_visible(user=user).filter(pk__in=run_ids).values_list("pk", flat=True)) if run_ids else set()
    token_owners = {r.token.user_id for r in reads if r.token is not None}
    services = service_principal_ids(token_owners) if token_owners else set()
    hidden = _hidden_reads(user=user, reads=reads)
    views = []
    for read in reads:
        if read.pk in hidden:
            views.append(
                ReadView(
                    at=read.at,
                    path=read.path,
                    path_label=read.get_path_display(),
                    principal=_("an agent of the project") if hidden[read.pk] else _("another person's agent"),
                    token_name="",
                    run_id="",
                    run_visible=False,
                    run_generation=None,
                    item_ref=read.item_ref,
                    memory=(memories or {}).get(read.item_ref),
                    hidden=True,
                )
            )
            continue
        token = read.token
        # A token's name is the holder's: shown for the reader's own tokens and a service's.
        shown_token = token is not None and (token.user_id == user.pk or token.user_id in services)
        views.append(
            ReadView(
                at=read.at,
                path=read.path,
                path_label=read.get_path_display(),
                principal=read.principal.get_username() if read.principal is not None else "",
                token_name=(token.name or token.prefix) if token is not None and shown_token else "",
                run_id=read.run_ref,
                run_visible=read.run_ref in runs,
                run_generation=read.run_generation,
                item_ref=read.item_ref,
                memory=(memories or {}).get(read.item_ref),
            )
        )
    return views


def item_last_read(*, user: User, memory: Memory) -> ReadView | None:
    """The latest read of a home item (``memory`` as ``home_item_get`` returned it)."""
    read = reads_of(item_kind=ItemKind.MEMORY, refs=[memory.pk]).first()
    return _read_views(user=user, reads=[read])[0] if read is not None else None


def source_reads(*, user: User, source: SourceRef) -> QuerySet[MemoryRead]:
    """The reads of one source's items, newest first: the items are those ``source_memories``
    lets the reader see (a project they may not read, a chat not bound to them: 404); for the
    notes file, the reads of the reader's own notes-file versions."""
    if source.kind == SOURCE_NOTES:
        return notes_reads_of(user_id=user.pk)
    return reads_of(item_kind=ItemKind.MEMORY, refs=source_memories(user=user, source=source).values("pk"))


def read_views(*, user: User, reads: list[MemoryRead], with_items: bool = True) -> list[ReadView]:
    """``reads`` (a page of ``source_reads``) with their items loaded through
    ``home_memories`` (``with_items``; without: the item's ref only, as the export lists them)."""
    refs = {r.item_ref for r in reads if r.item_kind == ItemKind.MEMORY} if with_items else set()
    memories = {m.pk: m for m in home_memories(user=user).filter(pk__in=refs)} if refs else {}
    return _read_views(user=user, reads=reads, memories=memories)


def read_data(view: ReadView) -> dict:
    """The JSON form of a read (API and export)."""
    return {
        "at": view.at.isoformat(),
        "path": view.path,
        "principal": None if view.hidden else view.principal or None,
        "token_name": view.token_name or None,
        "run_id": view.run_id or None,
        "run_generation": view.run_generation,
        "item": view.item_ref,
        "details_hidden": view.hidden,
    }
