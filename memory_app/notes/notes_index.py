"""The notes file's lines as documents of the retrieval engine (docs/home.md, "Search"), so the
memory home's search ranks them in the same list as the items, by the same words and meaning.

Each non-empty line of ``MEMORY.md`` (the first ``MAX_LINES``) is a document of the scope
``notes:<user id>``, its ref the user id and a hash of the line: a line keeps its document (and
its vector) when lines above it move. The index follows the file lazily: the home's search
passes the file as it reads it (``notes_lines_sync``) and only added and removed lines are
written. A hit is shown only if its line is in the file at that moment, so a line removed
since the last sync never comes back. Deleting the file, or the user, drops the whole scope.
"""

from typing import Any

from django.db import IntegrityError, transaction

from identity_app.models import User
from memory_app.notes.workspace import MAX_WORKSPACE_FILE_BYTES, MEMORY_FILE, Workspace, WorkspaceUnsafe
from memory_app.search import documents, embedder
from memory_app.search.index import Row, text_hash
from memory_app.search.models import SearchDocument

SOURCE = "notes-line"
MAX_LINES = 2000
MAX_LINE_CHARS = 2000


def notes_scope(user_id: int) -> str:
    return f"notes:{user_id}"


def _ref(user_id: int, line: str) -> str:
    return f"{user_id}:{text_hash(line)}"


def notes_lines(user_id: int, content: str) -> dict[str, tuple[int, str]]:
    """``ref → (line number from 1, line)`` of the file's non-empty lines (the first of equal ones)."""
    found: dict[str, tuple[int, str]] = {}
    for number, line in enumerate(content.splitlines(), start=1):
        text = line.strip()[:MAX_LINE_CHARS]
        if text:
            found.setdefault(_ref(user_id, text), (number, line))
            if len(found) >= MAX_LINES:
                break
    return found


def notes_lines_sync(*, user_id: int, content: str) -> dict[str, tuple[int, str]]:
    """Make the index hold the lines of ``content`` (the file as the caller just read it);
    returns ``notes_lines``. A concurrent sync of the same lines is not an error: the first wins."""
    lines = notes_lines(user_id, content)
    indexed = set(
        SearchDocument.objects.filter(source=SOURCE, scope__key=notes_scope(user_id)).values_list("ref", flat=True)[
            : MAX_LINES * 2
        ]
    )
    scope = notes_scope(user_id)
    rows = [Row(ref=ref, scope=scope, text=line.strip()[:MAX_LINE_CHARS]) for ref, (_n, line) in lines.items()]
    rows = [row for row in rows if row.ref not in indexed]
    rows += [Row(ref=ref, scope=None) for ref in indexed - lines.keys()]
    if rows:
        try:
            with transaction.atomic():
                documents.sync(SOURCE, rows)
        except IntegrityError:
            pass  # another request indexed the same lines at the same moment; the next search settles it
    return lines


def notes_index_drop(*, user_id: int) -> None:
    """The file is gone (deleted, forgotten) or its owner is: its lines leave the index."""
    documents.drop_scopes([notes_scope(user_id)])


def on_user_deleted(sender: type[User], instance: User, **kwargs: Any) -> None:
    notes_index_drop(user_id=instance.pk)


def _texts(refs: list[str]) -> dict[str, tuple[str, str]]:
    """The lines still in their files, for the embedder."""
    by_user: dict[int, set[str]] = {}
    for ref in refs:
        user, _, _hash = ref.partition(":")
        if user.isdigit():
            by_user.setdefault(int(user), set()).add(ref)
    found: dict[str, tuple[str, str]] = {}
    for user_id, wanted in by_user.items():
        try:
            read = Workspace(user_id).read_file(MEMORY_FILE, max_bytes=MAX_WORKSPACE_FILE_BYTES)
        except WorkspaceUnsafe:
            continue
        for ref, (_n, line) in notes_lines(user_id, read.content.decode("utf-8", errors="replace")).items():
            if ref in wanted:
                text = line.strip()[:MAX_LINE_CHARS]
                found[ref] = (text, text)
    return found


embedder.register_source(SOURCE, _texts)
