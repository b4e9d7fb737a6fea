"""One search across the memory home (docs/home.md): the retrieval engine over every source's
scope and the notes file's lines, one list best first."""

from dataclasses import dataclass, field

from django.db.models import Q
from django.utils.safestring import SafeString

from config.errors import DomainError
from identity_app.models import User
from identity_app.permissions import READ, project_ids_with_permission
from memory_app.home.sources import (
    MAX_CHATS,
    MAX_PROJECTS,
    SourceRef,
    home_memories,
    shared_from_chats_q,
    source_of,
    source_title,
)
from memory_app.memories.derived import scope_key, shared_scope_key
from memory_app.memories.models import Memory, Tier, agent_q, live_q
from memory_app.notes.notes_index import notes_lines_sync, notes_scope
from memory_app.notes.selectors import workspace_file_get
from memory_app.notes.workspace import MEMORY_FILE
from memory_app.scoped.selectors import bound_chats
from memory_app.search import engine
from memory_app.search.highlight import highlight

SEARCH_LIMIT = 30
SEARCH_FIRST = 8  # the home shows the best few first, and more on request
MAX_QUERY_CHARS = 200


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
    *, user: User, query: str, limit: int = SEARCH_LIMIT, with_notes: bool = True, for_agent: bool = False
) -> HomeSearch:
    """Rank the active memories of every source with the retrieval engine (the user's scope,
    each readable project's, each bound chat's and what was shared from it), loaded through
    ``home_memories``, and (``with_notes``) the lines of the notes file, indexed as documents
    of the user's notes scope: one list, best first, at most ``limit``; ``more`` says whether
    there is more to show. The user's own search finds paused memories too (marked on the
    page); ``for_agent`` (an agent searching for the user) leaves them out (``agent_q``)."""
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
            agent_q() if for_agent else live_q(),
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
            title = source_title(source, project_name=memory.project.name if memory.project else "", chat_names=names)
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
