"""Writes of the store (docs/integrations.md, "The store"), and a batch of store operations: a
put is ``memory_put_keyed`` (a new memory, or a correction of the one under the key), a delete
is ``memory_forget`` (physical, older versions along); their rules decide who may."""

import json
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from config.errors import InvalidInput
from identity_app.models import User
from memory_app.distill.guard import refuse_secrets
from memory_app.memories import keys
from memory_app.memories import services as memory_services
from memory_app.memories.models import MAX_CONTENT_CHARS, Kind, Memory, Origin, Tier
from memory_app.memories.services import rules
from memory_app.store import selectors
from memory_app.store.errors import ErrorCode
from memory_app.store.selectors import Found, Scope

VIA = "store"
MAX_OPS = 100
MAX_LIMIT = 200
MAX_TTL_MINUTES = 10 * 365 * 24 * 60


def _value_text(value: dict) -> str:
    """The text a value without ``content`` is found by: each field as ``name: value``."""
    lines = []
    for name, field_value in value.items():
        shown = field_value if isinstance(field_value, str) else json.dumps(field_value, ensure_ascii=False)
        lines.append(f"{name}: {shown}")
    return "\n".join(lines)


def _ttl(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= MAX_TTL_MINUTES:
        raise InvalidInput(
            f"ttl is a number of minutes above 0, at most {MAX_TTL_MINUTES}.", code=ErrorCode.INVALID_TTL
        )
    return float(value)


def item_put(
    *,
    actor: User,
    scope: Scope,
    rest: tuple[str, ...],
    key: str,
    value: dict[str, Any],
    text: str | None,
    ttl: object,
    index: object,
) -> Memory:
    """Put ``value`` under ``key``: its ``content`` (a non-empty string) is the memory and
    ``kind`` its kind when it names one the tier takes (default ``fact``); the other fields,
    another ``kind`` among them (langmem's ``"Memory"``), are kept as its metadata and come back
    as given. A value without ``content`` is found by ``text`` (what the caller
    chose to index) or by its fields. ``ttl``: minutes until it expires (again from every read
    that refreshes it); ``index: false``: never ranked by a query."""
    if not isinstance(value, dict):
        raise InvalidInput("value must be a JSON object (or null to delete).", code=ErrorCode.INVALID)
    given_content, given_kind = value.get("content"), value.get("kind")
    content_given = isinstance(given_content, str) and bool(given_content.strip())
    kind_given = isinstance(given_kind, str) and given_kind in rules.kinds_of(scope.tier)
    metadata = {
        name: item
        for name, item in value.items()
        if not (name == "content" and content_given) and not (name == "kind" and kind_given)
    }
    around: list[str] = []
    if content_given:
        content = str(given_content)
        # A memory's text is kept stripped; the white space around it comes back with the value.
        lead, trail = content[: len(content) - len(content.lstrip())], content[len(content.rstrip()) :]
        if lead or trail:
            around = [lead, trail]
    else:
        # Found by: what the caller chose to index, else its fields (cut to what a memory holds).
        chosen = text if isinstance(text, str) and text.strip() else _value_text(value)
        content = chosen[:MAX_CONTENT_CHARS].strip() or key
    minutes = _ttl(ttl)
    data: dict = {"content": content_given, "kind": kind_given}
    if around:
        data["around"] = around
    if minutes is not None:
        data["ttl"] = minutes
    if index is False:
        data["index"] = False
    existing = selectors.item_get(actor=actor, scope=scope, rest=rest, key=key)
    return memory_services.memory_put_keyed(
        actor=actor,
        tier=scope.tier,
        namespace=rest,
        key=key,
        content=content,
        kind=str(given_kind) if kind_given else Kind.FACT,
        metadata=metadata,
        evidence={"via": VIA, keys.STORE_EVIDENCE: data},
        expires_at=selectors.expiry_after(minutes, timezone.now()),
        project_id=scope.project_id,
        scope_id=scope.scope_id if scope.tier == Tier.CHAT else None,
        for_user=scope.for_user,
        origin=Origin.API,
        content_guard=refuse_secrets,
        adopt_id=existing.pk if existing is not None and not existing.store_key else None,
    ).memory


def item_delete(*, actor: User, scope: Scope, rest: tuple[str, ...], key: str) -> list[str]:
    """Forget the memory under ``key``, paused or expired too (nothing when there is none)."""
    forgotten: list[str] = []
    for existing in selectors.items_to_forget(actor=actor, scope=scope, rest=rest, key=key):
        forgotten += memory_services.memory_forget(
            actor=actor,
            memory_id=existing.pk,
            tier=scope.tier,
            project_id=scope.project_id,
            for_user=scope.for_user,
        )
    return forgotten


@dataclass
class BatchReport:
    results: list = field(default_factory=list)
    read: list[Memory] = field(default_factory=list)  # memories whose text the caller got


def _labels(op: dict, name: str) -> list:
    labels = op.get(name)
    if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
        raise InvalidInput(f"{name} must be a list of strings.", code=ErrorCode.INVALID_NAMESPACE)
    return labels


def _bounded(op: dict, name: str, default: int, maximum: int) -> int:
    number: object = op.get(name, default)
    if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number <= maximum:
        raise InvalidInput(f"{name} must be an integer from 0 to {maximum}.", code=ErrorCode.INVALID)
    return number


OPS = {
    "get": {"op", "namespace", "key", "refresh_ttl"},
    "put": {"op", "namespace", "key", "value", "text", "ttl", "index"},
    "search": {"op", "namespace_prefix", "query", "filter", "limit", "offset", "refresh_ttl"},
    "list_namespaces": {"op", "prefix", "suffix", "max_depth", "limit", "offset"},
}


def _check(op: object) -> str:
    if not isinstance(op, dict) or op.get("op") not in OPS:
        raise InvalidInput(f"Each operation is an object whose op is one of {', '.join(OPS)}.", code=ErrorCode.INVALID)
    unknown = sorted(set(op) - OPS[op["op"]])
    if unknown:
        raise InvalidInput(f"{op['op']}: unknown fields {', '.join(unknown)}.", code=ErrorCode.INVALID)
    if "key" in OPS[op["op"]]:
        keys.validate_store_key(op.get("key"))
    kind: str = op["op"]
    return kind


def batch_run(*, actor: User, ops: object) -> BatchReport:
    """Run the operations in order, in one transaction: all of them, or (on the first error)
    none. Each result as LangGraph's ``batch`` gives it: an item or null for a get, null for a
    put, a list of items for a search, a list of namespaces for a list."""
    if not isinstance(ops, list) or not ops or len(ops) > MAX_OPS:
        raise InvalidInput(f"ops must be a list of 1 to {MAX_OPS} operations.", code=ErrorCode.INVALID)
    kinds = [_check(op) for op in ops]
    report = BatchReport()
    refresh: list[Memory] = []
    with transaction.atomic():
        for kind, op in zip(kinds, ops, strict=True):
            report.results.append(_run(actor, kind, op, report, refresh))
        if refresh:
            memory_services.memories_expiry_extend(actor=actor, memories=refresh, minutes_of=selectors.ttl_minutes)
    return report


def _run(actor: User, kind: str, op: dict[str, Any], report: BatchReport, refresh: list[Memory]) -> object:
    if kind == "list_namespaces":
        prefix, suffix = op.get("prefix") or [], op.get("suffix") or []
        for path in (prefix, suffix):
            if not isinstance(path, list) or not all(isinstance(label, str) and label for label in path):
                raise InvalidInput("prefix and suffix are lists of labels.", code=ErrorCode.INVALID_NAMESPACE)
        depth = op.get("max_depth")
        if depth is not None:
            depth = _bounded(op, "max_depth", 0, 100)
        listed = selectors.namespaces_list(
            actor=actor,
            prefix=prefix,
            suffix=suffix,
            max_depth=depth,
            limit=_bounded(op, "limit", 100, 1000),
            offset=_bounded(op, "offset", 0, 100_000),
        )
        return [list(namespace) for namespace in listed]
    labels = _labels(op, "namespace_prefix" if kind == "search" else "namespace")
    scope, rest = selectors.scope_resolve(actor=actor, labels=labels)
    keys.store_namespace_encode(rest)  # the labels below the scope: 400 when not storable
    if kind == "put":
        if op.get("value") is None:
            item_delete(actor=actor, scope=scope, rest=rest, key=op["key"])
        else:
            item_put(
                actor=actor,
                scope=scope,
                rest=rest,
                key=op["key"],
                value=op["value"],
                text=op.get("text"),
                ttl=op.get("ttl"),
                index=op.get("index"),
            )
        return None
    if kind == "get":
        memory = selectors.item_get(actor=actor, scope=scope, rest=rest, key=op["key"])
        if memory is None:
            return None
        report.read.append(memory)
        if op.get("refresh_ttl", True):
            refresh.append(memory)
        return selectors.item_out(memory, scope)
    query = op.get("query")
    if query is not None and not isinstance(query, str):
        raise InvalidInput("query must be a string or null.", code=ErrorCode.INVALID)
    found: list[Found] = selectors.items_search(
        actor=actor,
        scope=scope,
        rest=rest,
        query=query,
        wanted=selectors.check_filter(op.get("filter")),
        limit=_bounded(op, "limit", 10, MAX_LIMIT),
        offset=_bounded(op, "offset", 0, selectors.MAX_SCAN),
    )
    report.read.extend(hit.memory for hit in found)
    if op.get("refresh_ttl", True):
        refresh.extend(hit.memory for hit in found)
    return [selectors.item_out(hit.memory, scope, score=hit.score, search=True) for hit in found]
