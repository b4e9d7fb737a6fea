"""The rows a history search ranks (``candidate_loader``: each visible message with its next turn,
its speaker and the head of its text, in one compiled statement) and the names of the speakers
of a user's history, which this process remembers (``history_speakers``)."""

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection

from django.db import connection
from django.db.models import BooleanField, Subquery, TextField
from django.db.models.expressions import RawSQL
from django.db.models.functions import Left

from identity_app.models import Profile
from memory_app.search.dialogue import metadata_speaker
from memory_app.threads.indexing import HISTORY_ROLES, SPEAKER_KEYS
from memory_app.threads.models import Message, MessageRole, MessageType
from memory_app.threads.selectors import history_messages

SEARCH_SCORING_CHARS = 3000  # a hit's snippet comes from its first characters


def speaker_sql() -> RawSQL:
    """The speaker a ``Message`` row's metadata names: the first of ``SPEAKER_KEYS`` whose value
    is a JSON string with more than blanks, trimmed; NULL if none is. Any other JSON type (a
    number, ``true``, ``null``, an object) names nobody, the same on both databases (reading
    the keys as text would give PostgreSQL ``"42"`` and SQLite ``"null"``). One column, so that
    the speakers a statement groups are names, not pairs of keys."""
    column = f"{connection.ops.quote_name(Message._meta.db_table)}.{connection.ops.quote_name('metadata')}"
    # Trimmed of spaces, tabs and line breaks, as ``indexing.metadata_speaker`` reads them too.
    if connection.vendor == "postgresql":
        blank = "chr(32) || chr(9) || chr(10) || chr(13)"
        one = f"CASE WHEN jsonb_typeof({column} -> %s) = 'string' THEN NULLIF(btrim({column} ->> %s, {blank}), '') END"
        params = [key for key in SPEAKER_KEYS for _ in range(2)]
    else:
        one = f"CASE WHEN json_type({column}, %s) = 'text' THEN NULLIF(trim(json_extract({column}, %s), char(32, 9, 10, 13)), '') END"
        params = [f'$."{key}"' for key in SPEAKER_KEYS for _ in range(2)]
    return RawSQL(f"COALESCE({', '.join([one] * len(SPEAKER_KEYS))})", params, output_field=TextField())


def display_name_of(user_id: int) -> Subquery:
    """The user's display name, once for a statement (not a join through each row's thread owner:
    every visible history message is the user's own). Not the username: an identifier ("admin",
    "test") is no name a question would use for the person."""
    return Subquery(Profile.objects.filter(user_id=user_id).values("display_name")[:1])


SPEAKER_CACHE_USERS = 4096  # users whose speakers a process remembers
# Names read per user (a group chat's first ones by name): bounds the memory and a search's work.
SPEAKERS_MAX = 64
_speakers: OrderedDict[int, tuple[int | None, frozenset[str]]] = OrderedDict()
_speakers_lock = threading.Lock()


def history_speakers(user_id: int, *, version: int | None = None) -> frozenset[str]:
    """The names of the speakers of the user's visible history turns: each message's speaker as
    its metadata names it and the user's display name (``speaker``; at most ``SPEAKERS_MAX``
    rows, names of up to 100 characters as ``named`` takes them). One statement, grouped by
    speaker. The process remembers them with ``version``, the version of the user's history
    scope read just before (``remembered_speakers``)."""
    rows = (
        history_messages(user_id=user_id)
        .annotate(
            speaker=speaker_sql(),
            display_name=display_name_of(user_id),
        )
        .values("speaker", "display_name")
        .distinct()
        .order_by("speaker", "display_name")[:SPEAKERS_MAX]
    )
    found = (name for row in rows for name in (metadata_speaker(row), row["display_name"]))
    names = frozenset(name.strip() for name in found if isinstance(name, str) and 0 < len(name.strip()) <= 100)
    with _speakers_lock:
        _speakers[user_id] = (version, names)
        _speakers.move_to_end(user_id)
        while len(_speakers) > SPEAKER_CACHE_USERS:
            _speakers.popitem(last=False)
    return names


def remembered_speakers(user_id: int) -> tuple[int | None, frozenset[str]] | None:
    """``(version of the history scope, speakers)`` as this process last read them."""
    with _speakers_lock:
        return _speakers.get(user_id)


def next_turn_sql(column: str) -> RawSQL:
    """``column`` of each row's next turn in its thread (the next user or assistant text by
    ``(created_at, id)``), as a subquery correlated to the outer ``Message`` row. Written out
    rather than built from ``Subquery``/``OuterRef``: the same SQL, but compiling two such
    subqueries cost more than the rest of the statement (~1.5 ms of a search, measured)."""
    quote = connection.ops.quote_name
    outer, column = quote(Message._meta.db_table), quote(column)
    return RawSQL(
        f"SELECT n.{column} FROM {outer} n WHERE n.{quote('conversation_id')} = {outer}.{quote('conversation_id')}"
        f" AND n.{quote('role')} IN ({', '.join(['%s'] * len(HISTORY_ROLES))}) AND n.{quote('type')} = %s"
        # The first condition alone narrows the index range (conversation, created_at, id).
        f" AND n.{quote('created_at')} >= {outer}.{quote('created_at')}"
        f" AND (n.{quote('created_at')} > {outer}.{quote('created_at')} OR n.{quote('id')} > {outer}.{quote('id')})"
        f" ORDER BY n.{quote('created_at')}, n.{quote('id')} LIMIT 1",
        (*HISTORY_ROLES, MessageType.TEXT),
    )


def ids_in(column: str, ids) -> RawSQL:
    """``column`` is one of ``ids``, with the ids as one parameter (an array; a JSON list on
    SQLite): the statement's text is the same however many ids, so it can be compiled before
    they are known (``candidate_loader``)."""
    quote = connection.ops.quote_name
    column = f"{quote(Message._meta.db_table)}.{quote(column)}"
    if connection.vendor == "postgresql":
        return RawSQL(f"{column} = ANY(%s::bigint[])", (ids,), output_field=BooleanField())
    return RawSQL(f"{column} IN (SELECT value FROM json_each(%s))", (ids,), output_field=BooleanField())


class _Ids:
    """Where the ids go in a compiled candidates statement."""


def candidate_loader(user_id: int) -> Callable[[Collection[int]], dict[int, dict]]:
    """The candidates statement, compiled now, as a function of the ids to load: the visible rows
    of those ids (``history_messages``), each with what ranking needs: its next turn in the
    thread (id and role), its speaker, the head of its text. One statement a call.

    A hybrid search compiles it while the model embeds the query (``engine.rank``'s
    ``meanwhile``), so that only running it waits for the meaning ranking (compiling it cost
    about as much as running it, measured)."""
    slot = _Ids()
    queryset = (
        history_messages(user_id=user_id)
        .filter(ids_in("id", slot))
        .annotate(
            # One character more than is scored: a longer message goes on, and its snippet says so.
            head=Left("content", SEARCH_SCORING_CHARS + 1),
            next_id=next_turn_sql("id"),
            next_role=next_turn_sql("role"),
            speaker=speaker_sql(),
            display_name=display_name_of(user_id),
        )
        .values(
            "id",
            "conversation_id",
            "conversation__title",
            "role",
            "created_at",
            "sent_at",
            "head",
            "next_id",
            "next_role",
            "speaker",
            "display_name",
        )
        .order_by()  # read into a dict: no order needed
    )
    compiler = queryset.query.get_compiler(connection=connection)
    sql, params = compiler.as_sql()
    at = [n for n, param in enumerate(params) if param is slot]
    if len(at) != 1:  # the compiled statement must take the ids exactly once
        raise RuntimeError("the candidates statement lost its ids parameter")

    def load(ids: Collection[int]) -> dict[int, dict]:
        if not ids:
            return {}
        bound = list(params)
        wanted = sorted({int(message_id) for message_id in ids})
        bound[at[0]] = wanted if connection.vendor == "postgresql" else json.dumps(wanted)
        with connection.cursor() as cursor:
            cursor.execute(sql, bound)
            names = [column[0] for column in cursor.description]
            fetched = cursor.fetchall()
        # Django's own conversion of the values (dates on SQLite, for one).
        rows = (dict(zip(names, values, strict=True)) for values in compiler.results_iter([fetched]))
        found = {}
        for row in rows:
            # The display name of the person whose history it is names their own turns.
            row["own_name"] = (row["display_name"] or "") if row["role"] == MessageRole.USER else ""
            found[row["id"]] = row
        return found

    return load
