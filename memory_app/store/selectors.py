"""Reads of the store (docs/integrations.md, "The store"): memories addressed by a namespace and
a key, as LangGraph's ``BaseStore`` reads them.

A namespace starts with the scope its memories live in, and the rule of that scope decides:

- ``("users", <username>, …)``: that user's own memories (``memories_of_users``: the user
  itself, or a service principal acting for them);
- ``("projects", <project id>, …)``: the project's memories (members with ``read``);
- ``("chats", <chat key>, …)``: the chat's items (the chat reach rule).

The labels after those two are the memory's ``store_namespace``; a memory written without a
key (anywhere else: the API, the pages, auto-memory) is in the scope's own namespace, under its
id. A scope out of reach is answered as one that does not exist (404).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q, QuerySet, Value
from django.db.models.functions import Left
from django.db.models.lookups import Exact

from config.errors import InvalidInput, NotFound
from identity_app.chat_reach import CHAT_NOT_FOUND, chat_in_reach
from identity_app.models import User
from identity_app.permissions import READ, acting_for_users_q, project_ids_with_permission, project_require_permission
from identity_app.selectors import user_get_subject
from identity_app.session_keys import ChatAddress
from memory_app.memories.derived import scope_key
from memory_app.memories.keys import STORE_EVIDENCE, store_namespace_encode, store_namespace_labels
from memory_app.memories.models import Memory, Status, Tier, agent_q
from memory_app.memories.selectors import memories_of_users, memories_visible, memory_visibility_q
from memory_app.search import engine
from memory_app.store.errors import ErrorCode

USERS, PROJECTS, CHATS = "users", "projects", "chats"
ROOTS = {USERS: Tier.USER, PROJECTS: Tier.PROJECT, CHATS: Tier.CHAT}
MAX_SCAN = 2000  # memories a search reads past its ranked hits, at most (its offset + limit)
MAX_QUERY_CHARS = 2000


def namespace_error() -> InvalidInput:
    return InvalidInput(
        'A namespace starts with ("users", <username>), ("projects", <project id>) or ("chats", <chat key>).',
        code=ErrorCode.INVALID_NAMESPACE,
    )


@dataclass(frozen=True)
class Scope:
    """Where a namespace's memories live, resolved for one caller."""

    root: tuple[str, str]
    tier: str
    scope_id: str
    for_user: User | None = None
    project_id: str | None = None

    def memories(self, actor: User) -> QuerySet[Memory]:
        """Every memory of the scope ``actor`` may read."""
        if self.tier == Tier.USER:
            return memories_of_users(actor=actor, users=[self.for_user])
        return memories_visible(user=actor, tier=self.tier).filter(scope_id=self.scope_id)


def scope_resolve(*, actor: User, labels: object) -> tuple[Scope, tuple[str, ...]]:
    """The scope a namespace names and the labels below it; out of reach: 404."""
    if not isinstance(labels, list | tuple) or len(labels) < 2 or labels[0] not in ROOTS:
        raise namespace_error()
    root, name = labels[0], labels[1]
    if not isinstance(name, str) or not name:
        raise namespace_error()
    rest = tuple(labels[2:])
    if root == USERS:
        subject = user_get_subject(actor=actor, username=name)
        return Scope(root=(root, name), tier=Tier.USER, scope_id=str(subject.pk), for_user=subject), rest
    if root == PROJECTS:
        project = project_require_permission(user=actor, project_id=name, permission=READ)
        return Scope(root=(root, name), tier=Tier.PROJECT, scope_id=project.pk, project_id=project.pk), rest
    chat_key = ChatAddress.parse(name).chat_key
    if not chat_in_reach(actor=actor, chat_key=chat_key):
        raise NotFound(CHAT_NOT_FOUND)
    return Scope(root=(root, name), tier=Tier.CHAT, scope_id=chat_key), rest


def store_data(memory: Memory) -> dict:
    """What the store keeps of a keyed memory in its evidence."""
    data = memory.evidence.get(STORE_EVIDENCE) if isinstance(memory.evidence, dict) else None
    return data if isinstance(data, dict) else {}


def item_value(memory: Memory) -> dict:
    """The value as it was put: its fields, with ``content`` and ``kind`` where the value held
    them; a memory written without a key is ``{"content", "kind", **metadata}``."""
    if not memory.store_key:
        return {**memory.metadata, "content": memory.content, "kind": memory.kind}
    data = store_data(memory)
    value = dict(memory.metadata)
    if data.get("content", True):
        around = data.get("around")
        if isinstance(around, list) and len(around) == 2 and all(isinstance(part, str) for part in around):
            value["content"] = f"{around[0]}{memory.content}{around[1]}"
        else:
            value["content"] = memory.content
    if data.get("kind", False):
        value["kind"] = memory.kind
    return value


def item_out(memory: Memory, scope: Scope, *, score: float | None = None, search: bool = False) -> dict:
    created = store_data(memory).get("created_at")
    item: dict[str, object] = {
        "namespace": [*scope.root, *store_namespace_labels(memory.store_namespace)],
        "key": memory.store_key or memory.pk,
        "value": item_value(memory),
        "created_at": created if isinstance(created, str) else memory.created_at.isoformat(),
        "updated_at": memory.created_at.isoformat(),
        "id": memory.pk,
        "text": memory.content,  # what the item is found by (its content, or the text indexed for it)
        "kind": memory.kind,
        "expires_at": memory.expires_at.isoformat() if memory.expires_at else None,
    }
    if search:
        item["score"] = score
    return item


def _in_namespace(rest: tuple[str, ...], *, prefix: bool) -> Q:
    encoded = store_namespace_encode(rest)
    if not prefix:
        return Q(store_namespace=encoded)
    if not encoded:
        return Q()
    # LIKE finds the rows by the index; SQLite's LIKE ignores the case of ASCII letters, so the
    # prefix is also compared exactly ("Docs" is not "docs", as in LangGraph's own stores).
    exact: Exact = Exact(Left("store_namespace", len(encoded)), Value(encoded))
    return Q(store_namespace__startswith=encoded) & Q(exact)


def item_get(*, actor: User, scope: Scope, rest: tuple[str, ...], key: str) -> Memory | None:
    """The live memory under ``key`` in the namespace; in a scope's own namespace also a
    memory written without a key, by its id."""
    rows = scope.memories(actor).filter(agent_q(), _in_namespace(rest, prefix=False))
    found = rows.filter(store_key=key).first()
    if found is None and not rest:
        found = rows.filter(store_key="", pk=key[:40]).first()
    return found


def items_to_forget(*, actor: User, scope: Scope, rest: tuple[str, ...], key: str) -> list[Memory]:
    """Every active memory under ``key`` in the namespace, paused and expired ones too (what a
    delete forgets: ``item_get`` sees only what agents may use, and a paused memory left behind
    would come back when it is resumed); as ``item_get``, a memory written without a key by its
    id in a scope's own namespace."""
    rows = scope.memories(actor).filter(_in_namespace(rest, prefix=False), status=Status.ACTIVE)
    found = list(rows.filter(store_key=key).order_by("pk"))
    if not found and not rest:
        found = list(rows.filter(store_key="", pk=key[:40]))
    return found


def matches(value: object, wanted: object) -> bool:
    """LangGraph's filter on one field: equality (objects and lists compared as JSON), or
    operators ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte`` (numbers compare as numbers,
    strings as strings; a comparison between other types does not hold)."""
    if isinstance(wanted, dict) and wanted and all(isinstance(op, str) and op.startswith("$") for op in wanted):
        return all(_operator(value, op, operand) for op, operand in wanted.items())
    if isinstance(wanted, dict):
        return isinstance(value, dict) and all(matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list):
        return isinstance(value, list) and len(value) == len(wanted) and all(map(matches, value, wanted))
    return value == wanted


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _operator(value: Any, op: str, operand: Any) -> bool:  # JSON values
    if op == "$eq":
        equal: bool = value == operand
        return equal
    if op == "$ne":
        unequal: bool = value != operand
        return unequal
    comparable = (_number(value) and _number(operand)) or (isinstance(value, str) and isinstance(operand, str))
    if op in ("$gt", "$gte", "$lt", "$lte"):
        if not comparable:
            return False
        holds: bool = {
            "$gt": value > operand,
            "$gte": value >= operand,
            "$lt": value < operand,
            "$lte": value <= operand,
        }[op]
        return holds
    raise InvalidInput(
        f"filter: the operator {op!r} is not supported ($eq, $ne, $gt, $gte, $lt, $lte).",
        code=ErrorCode.UNSUPPORTED_FILTER,
    )


def check_filter(wanted: object) -> dict[str, Any]:
    if wanted is None:
        return {}
    if not isinstance(wanted, dict):
        raise InvalidInput("filter must be a JSON object.", code=ErrorCode.INVALID)

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for name, inner in node.items():
                if (
                    isinstance(name, str)
                    and name.startswith("$")
                    and name not in ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
                ):
                    raise InvalidInput(
                        f"filter: the operator {name!r} is not supported ($eq, $ne, $gt, $gte, $lt, $lte).",
                        code=ErrorCode.UNSUPPORTED_FILTER,
                    )
                walk(inner)

    walk(wanted)
    return wanted


def _kept(memory: Memory, wanted: dict) -> bool:
    value = item_value(memory)
    return all(matches(value.get(name), expected) for name, expected in wanted.items())


@dataclass
class Found:
    memory: Memory
    score: float | None


def items_search(
    *,
    actor: User,
    scope: Scope,
    rest: tuple[str, ...],
    query: str | None,
    wanted: dict,
    limit: int,
    offset: int,
) -> list[Found]:
    """The live memories under the namespace prefix that the filter keeps: with a query, those
    the retrieval engine ranks first (best first, scored), then the others, newest first and
    unscored (an item put with ``index: false`` is among the others); without one, newest first.
    ``offset + limit`` at most ``MAX_SCAN``."""
    if offset + limit > MAX_SCAN:
        raise InvalidInput(
            f"offset + limit may be at most {MAX_SCAN}: narrow the namespace or the filter.", code=ErrorCode.INVALID
        )
    rows = scope.memories(actor).filter(agent_q(), _in_namespace(rest, prefix=True))
    wanted_count = offset + limit
    found: list[Found] = []
    ranked_ids: list[str] = []
    if query and query.strip():
        hits = engine.search(
            scopes=[scope_key(scope.tier, scope.scope_id)],
            query=query[:MAX_QUERY_CHARS],
            limit=engine.MAX_DEPTH,
            depth=engine.MAX_DEPTH,
        )
        scores = {hit.ref: _score(hits.mode, hit.score) for hit in hits.hits}
        by_id = {m.pk: m for m in rows.filter(pk__in=list(scores))}
        for ref in hits.refs:
            memory = by_id.get(ref)
            if memory is None or store_data(memory).get("index") is False:
                continue
            ranked_ids.append(ref)
            if _kept(memory, wanted):
                found.append(Found(memory=memory, score=scores[ref]))
                if len(found) >= wanted_count:
                    return found[offset:]
    others = rows.exclude(pk__in=ranked_ids).order_by("-created_at", "-id")
    scanned = 0
    while len(found) < wanted_count and scanned < MAX_SCAN:
        batch = list(others[scanned : scanned + 200])
        if not batch:
            break
        scanned += len(batch)
        found.extend(Found(memory=m, score=None) for m in batch if _kept(m, wanted))
    return found[offset:wanted_count]


def _score(mode: str, score: float) -> float:
    """A ranked hit's score, 0 to 1 in hybrid mode (first in both rankings: 1)."""
    if mode == "hybrid":
        return round(min(1.0, score * (engine.RRF_K + 1) / 2.0), 6)
    return round(score, 6)


# --- namespaces ------------------------------------------------------------------------------
MAX_NAMESPACE_ROWS = 10_000


def _pattern_matches(path: Sequence[str], labels: tuple[str, ...], *, suffix: bool) -> bool:
    if len(labels) < len(path):
        return False
    pairs = zip(reversed(labels), reversed(path), strict=False) if suffix else zip(labels, path, strict=False)
    return all(want in ("*", have) for have, want in pairs)


def namespaces_list(
    *, actor: User, prefix: Sequence[str], suffix: Sequence[str], max_depth: int | None, limit: int, offset: int
) -> list[tuple[str, ...]]:
    """The namespaces that hold live memories ``actor`` may read, as LangGraph lists them:
    matching ``prefix`` and ``suffix`` (``*`` matches any one label), cut to ``max_depth``,
    sorted, paged."""
    roots = [prefix[0]] if prefix and prefix[0] != "*" else list(ROOTS)
    named = prefix[1] if prefix and len(prefix) > 1 and prefix[1] != "*" else None
    found: set[tuple[str, ...]] = set()
    for root in roots:
        if root not in ROOTS:
            return []
        rows = Memory.objects.filter(agent_q(), scope_type=ROOTS[root])
        if root == USERS:
            rows = rows.filter(acting_for_users_q(actor, user_field="owner"))
            if named is not None:
                rows = rows.filter(owner__username=named)
            pairs = rows.values_list("owner__username", "store_namespace")
        elif root == PROJECTS:
            rows = rows.filter(project_id__in=project_ids_with_permission(user=actor, permission=READ))
            if named is not None:
                rows = rows.filter(project_id=named)
            pairs = rows.values_list("project_id", "store_namespace")
        else:
            rows = rows.filter(memory_visibility_q(user=actor, tier=Tier.CHAT))
            if named is not None:
                rows = rows.filter(scope_id=named)
            pairs = rows.values_list("scope_id", "store_namespace")
        for name, encoded in pairs.distinct().order_by()[:MAX_NAMESPACE_ROWS]:
            found.add((root, name, *store_namespace_labels(encoded)))
    chosen = [
        ns
        for ns in found
        if (not prefix or _pattern_matches(prefix, ns, suffix=False))
        and (not suffix or _pattern_matches(suffix, ns, suffix=True))
    ]
    if max_depth is not None:
        chosen = list({ns[:max_depth] for ns in chosen})
    return sorted(chosen)[offset : offset + limit]


def ttl_minutes(memory: Memory) -> float | None:
    ttl = store_data(memory).get("ttl")
    return float(ttl) if isinstance(ttl, int | float) and not isinstance(ttl, bool) else None


def expiry_after(minutes: float | None, now: datetime) -> datetime | None:
    return None if minutes is None else now + timedelta(minutes=minutes)
