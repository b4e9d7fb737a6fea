"""The ``filters`` of the mem0-compatible API (docs/integrations.md, "Filters"), read into a
query over the memories a key may reach — never past them.

Grammar (mem0's "filters v2"): a root ``{"AND": [...]}``, ``{"OR": [...]}`` or ``{"NOT": ...}``,
or a plain object whose fields all hold (``{"user_id": "alice", "agent_id": "a1"}``). A
condition is a nested root or ``{field: value}``; a value is a string (equality), ``"*"`` (any
value present) or an object of operators, all of which hold. Fields and their operators:

- ``user_id``, ``agent_id``, ``run_id``, ``app_id``: ``eq``, ``ne`` (also true where the field is
  absent), ``in``; ``"*"``;
- ``created_at``, ``updated_at``: ``eq``, ``ne``, ``gt``, ``gte``, ``lt``, ``lte`` with an ISO 8601
  date or date-time (a date is midnight UTC; a date-time without a zone is UTC);
- ``metadata``: an object of top-level keys, each equal to the value given (any JSON), or an
  object of operators: ``eq``, ``ne`` (also true where the key is absent), ``in``, ``nin`` (not
  in the list, or absent), with any JSON values (an object is operators when each of its keys is
  one of mem0's operator names; ``gt``, ``gte``, ``lt``, ``lte``, ``contains``, ``icontains`` there are
  a 400 like any other unsupported operator);
- ``keywords``: ``contains`` (case-sensitive), ``icontains``, on the memory's text;
- ``memory_ids``: a list of ids (or ``in``).

Anything else — another field, operator or shape — is a 400 ``unsupported_filter`` that names
it: a filter is never ignored. Every ``user_id`` the filter names with ``eq`` or ``in`` is
collected (``Parsed.user_ids``): the caller must be allowed each of them, and the query only
ever runs over their memories (``services.subjects_for``). A ``user_id`` under a ``NOT`` names no
one to search: ``{"NOT": [{"user_id": "bob"}]}`` is every searched user but bob (a user's own key:
its own memories; a service key still names whose memories it searches).
"""

import ast
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, time

from django.db.models import JSONField, Q, Value
from django.db.models.fields.json import KeyTransform, KeyTransformExact
from django.db.models.functions import StrIndex
from django.db.models.lookups import GreaterThan
from django.utils.dateparse import parse_date, parse_datetime

from config.errors import InvalidInput
from config.instants import OutOfRange, in_utc
from memory_app.compat.errors import ErrorCode

LOGICAL = ("AND", "OR", "NOT")
ENTITY_FIELDS = ("user_id", "agent_id", "run_id", "app_id")
TIME_FIELDS = ("created_at", "updated_at")
FIELDS = (*ENTITY_FIELDS, *TIME_FIELDS, "metadata", "keywords", "memory_ids")
ENTITY_OPS = ("eq", "ne", "in")
TIME_OPS = {"eq": "exact", "ne": "exact", "gt": "gt", "gte": "gte", "lt": "lt", "lte": "lte"}
TEXT_OPS = ("contains", "icontains")
METADATA_OPS = ("eq", "ne", "in", "nin")
# An object given for a metadata key whose every key is one of these is mem0's operators, not a
# literal object to compare with.
OPERATOR_NAMES = frozenset(("eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "contains", "icontains"))
WILDCARD = "*"
MAX_DEPTH = 8
MAX_CONDITIONS = 100
MAX_LIST = 100
MAX_VALUE_CHARS = 200
MAX_PARAM_CHARS = 2000
# Where the entity tags of a memory written through this API live (``services.mem0_evidence``).
EVIDENCE_KEY = "mem0"


def entity_path(name: str) -> str:
    """The lookup of an entity field: the owner's username, or a tag in the evidence."""
    return "owner__username" if name == "user_id" else f"evidence__{EVIDENCE_KEY}__{name}"


def unsupported(what: str) -> InvalidInput:
    return InvalidInput(f"filters: {what} (docs/integrations.md, Filters).", code=ErrorCode.UNSUPPORTED_FILTER)


def entities_param(text: str) -> dict[str, str]:
    """The ``filters`` query parameter of ``delete_all``: an object of entity fields, each equal
    to a string. mem0's client writes ``delete_all(filters={...})`` into the query string as
    Python prints the dict (``{'user_id': 'alice'}``); JSON is taken too. Read as a literal only
    (``ast.literal_eval`` evaluates no names, calls or operators), bounded in length, and then
    held to the same shape whatever it held: anything else is a 400."""
    if len(text) > MAX_PARAM_CHARS:
        raise unsupported(f"the filters parameter is over {MAX_PARAM_CHARS} characters")
    unreadable = (ValueError, TypeError, SyntaxError, MemoryError, RecursionError)
    try:
        given = json.loads(text)
    except unreadable:
        try:
            given = ast.literal_eval(text)
        except unreadable:
            given = None
    if not isinstance(given, dict) or not given:
        raise unsupported('the filters parameter of a delete is an object such as {"user_id": "alice"}')
    for name, value in given.items():
        if name not in ENTITY_FIELDS:
            raise unsupported(f"a delete's filters name {', '.join(ENTITY_FIELDS)} only, not {str(name)[:40]!r}")
        if not isinstance(value, str) or value == WILDCARD:
            raise unsupported(f"{name} in a delete's filters is one name (not null, not {WILDCARD!r})")
    return given


@dataclass
class Parsed:
    q: Q
    user_ids: set[str] = field(default_factory=set)
    conditions: int = 0
    negated: int = 0  # how many NOTs the condition being read is under


def parse(filters) -> Parsed:
    """``filters`` (decoded JSON, or None) as a query and the users it names."""
    parsed = Parsed(q=Q())
    if filters is None or filters == {}:
        return parsed
    if not isinstance(filters, dict):
        raise unsupported("must be a JSON object")
    parsed.q = _node(filters, parsed, depth=1)
    return parsed


def _node(node, parsed: Parsed, *, depth: int) -> Q:
    if depth > MAX_DEPTH:
        raise unsupported(f"nests deeper than {MAX_DEPTH} levels")
    if isinstance(node, list):
        return _all([_node(item, parsed, depth=depth + 1) for item in node])
    if not isinstance(node, dict) or not node:
        raise unsupported("each condition must be a non-empty JSON object")
    parts = []
    for name, value in node.items():
        parsed.conditions += 1
        if parsed.conditions > MAX_CONDITIONS:
            raise unsupported(f"more than {MAX_CONDITIONS} conditions")
        if name in LOGICAL:
            parts.append(_logical(name, value, parsed, depth=depth))
        elif name in FIELDS:
            parts.append(_field(name, value, parsed))
        else:
            raise unsupported(f"the field {name!r} is not supported (supported: {', '.join((*LOGICAL, *FIELDS))})")
    return _all(parts)


def _all(parts: list[Q]) -> Q:
    combined = Q()
    for part in parts:
        combined &= part
    return combined


def _logical(name: str, value, parsed: Parsed, *, depth: int) -> Q:
    items = value if isinstance(value, list) else [value] if name == "NOT" else None
    if not items:
        raise unsupported(f"{name} takes a non-empty list of conditions")
    if name == "NOT":
        parsed.negated += 1
    try:
        children = [_node(item, parsed, depth=depth + 1) for item in items]
    finally:
        if name == "NOT":
            parsed.negated -= 1
    if name == "AND":
        return _all(children)
    if name == "OR":
        either = Q(pk__in=[])
        for child in children:
            either |= child
        return either
    return ~_all(children)


def _operators(name: str, value, allowed) -> list[tuple[str, object]]:
    """``value`` as (operator, operand) pairs: a plain value is ``eq``."""
    if not isinstance(value, dict):
        return [("eq", value)]
    if not value:
        raise unsupported(f"{name} has an empty operator object")
    for op in value:
        if op not in allowed:
            raise unsupported(f"the operator {op!r} is not supported on {name} (supported: {', '.join(allowed)})")
    return list(value.items())


def _text(name: str, value) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_VALUE_CHARS:
        raise unsupported(f"{name} takes non-empty strings of at most {MAX_VALUE_CHARS} characters")
    return value


def _strings(name: str, value) -> list[str]:
    if not isinstance(value, list) or not value or len(value) > MAX_LIST:
        raise unsupported(f"{name} 'in' takes a list of 1 to {MAX_LIST} strings")
    return [_text(name, item) for item in value]


def _field(name: str, value, parsed: Parsed) -> Q:
    if name in ENTITY_FIELDS:
        return _all([_entity(name, op, operand, parsed) for op, operand in _operators(name, value, ENTITY_OPS)])
    if name in TIME_FIELDS:
        return _all([_time(name, op, operand) for op, operand in _operators(name, value, tuple(TIME_OPS))])
    if name == "metadata":
        return _metadata(value)
    if name == "keywords":
        if not isinstance(value, dict):
            raise unsupported('keywords takes contains or icontains, e.g. {"icontains": "budget"}')
        return _all([_keywords(op, operand) for op, operand in _operators(name, value, TEXT_OPS)])
    ids = value["in"] if isinstance(value, dict) and list(value) == ["in"] else value
    return Q(pk__in=_strings("memory_ids", ids))


def _entity(name: str, op: str, operand, parsed: Parsed) -> Q:
    path = entity_path(name)
    if op == "eq" and operand == WILDCARD:
        return Q(**{f"{path}__isnull": False})
    if op == "in":
        values = _strings(name, operand)
        if name == "user_id" and not parsed.negated:
            parsed.user_ids.update(values)
        return Q(**{f"{path}__in": values})
    value = _text(name, operand)
    if op == "eq":
        if name == "user_id" and not parsed.negated:
            parsed.user_ids.add(value)
        return Q(**{path: value})
    # mem0's ne: not equal, or absent.
    return ~Q(**{path: value}) | Q(**{f"{path}__isnull": True})


def _instant(name: str, operand) -> datetime:
    if isinstance(operand, str) and len(operand) <= 40:
        text = operand.strip()
        try:
            moment = parse_datetime(text)
            if moment is None and (day := parse_date(text)) is not None:
                moment = datetime.combine(day, time.min)
        except ValueError:
            moment = None
        if isinstance(moment, datetime):
            try:
                return in_utc(moment if moment.tzinfo else moment.replace(tzinfo=UTC))
            except OutOfRange:
                raise unsupported(f"{name}: {text} lies outside the years 1 to 9999 in UTC") from None
    raise unsupported(f"{name} takes an ISO 8601 date or date-time, e.g. 2025-01-01T00:00:00Z")


def _time(name: str, op: str, operand) -> Q:
    condition = Q(**{f"{name}__{TIME_OPS[op]}": _instant(name, operand)})
    return ~condition if op == "ne" else condition


def _metadata(value) -> Q:
    if not isinstance(value, dict) or not value:
        raise unsupported("metadata takes an object of keys and the values they must equal")
    condition = Q()
    for key, expected in value.items():
        if not key or len(key) > MAX_VALUE_CHARS:
            raise unsupported(f"metadata keys are 1 to {MAX_VALUE_CHARS} characters")
        if isinstance(expected, dict) and expected and set(expected) <= OPERATOR_NAMES:
            where = f"metadata {key!r}"
            condition &= _all(
                [_metadata_op(key, op, operand) for op, operand in _operators(where, expected, METADATA_OPS)]
            )
        else:
            condition &= _metadata_equal(key, expected)
    return condition


def _metadata_equal(key: str, expected) -> Q:
    # The key as a key, whatever it says ("contains", "a__b"), never as a lookup name.
    return Q(KeyTransformExact(KeyTransform(key, "metadata"), Value(expected, output_field=JSONField())))


def _metadata_op(key: str, op: str, operand) -> Q:
    if op in ("in", "nin"):
        if not isinstance(operand, list) or not operand or len(operand) > MAX_LIST:
            raise unsupported(f"metadata {key!r} {op!r} takes a list of 1 to {MAX_LIST} values")
        matched = Q(pk__in=[])
        for item in operand:
            matched |= _metadata_equal(key, item)
    else:
        matched = _metadata_equal(key, operand)
    if op in ("eq", "in"):
        return matched
    # mem0's ne and nin: not equal (not among them), or absent.
    return ~matched | ~Q(metadata__has_key=key)


def _keywords(op: str, operand) -> Q:
    word = _text("keywords", operand)
    if op == "icontains":
        return Q(content__icontains=word)
    # Case-sensitive on every database (SQLite's LIKE is not): where the exact text starts.
    return Q(GreaterThan(StrIndex("content", Value(word)), 0))
