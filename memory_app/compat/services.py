"""The writes of the mem0-compatible API (docs/integrations.md): each a translation onto the
memory services, whose rules decide; nothing here decides who may do what.

A memory written here is a memory of the user that ``user_id`` names (the user tier, in their
memory home), with ``evidence`` saying it came through this API (``via``) and which of mem0's
``agent_id``, ``run_id`` and ``app_id`` it was written with; those tags narrow reads, never
widen them.
"""

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.dateparse import parse_date

from config.errors import InvalidInput, NotFound, TooLarge
from config.instants import SHOWN_LAST
from config.validation import clean_text
from identity_app.models import User
from identity_app.permissions import acting_for_users_q, is_service_principal
from identity_app.selectors import user_get_subject
from memory_app.automemory.selectors import auto_memory_settings_get
from memory_app.compat.errors import ErrorCode
from memory_app.compat.query import EVIDENCE_KEY, MAX_VALUE_CHARS
from memory_app.distill.extraction import PERSONAL, Candidate, PersonalExtractor, clean_candidates, get_extractor
from memory_app.distill.extraction import normalize_key as normalized
from memory_app.distill.guard import refuse_secrets
from memory_app.distill.redaction import redact
from memory_app.distill.timebound import with_expiry
from memory_app.memories import services as memory_services
from memory_app.memories.models import IDENTITY_KINDS, Kind, Memory, Origin, Tier, live_q
from memory_app.memories.selectors import memories_of_users, memory_of_users_get
from memory_app.memories.timing import user_zone

VIA = "mem0"
ENTITY_TAGS = ("agent_id", "run_id", "app_id")
MAX_SUBJECTS = 20
MAX_MESSAGES = 100
MAX_BATCH = 100
FORGET_BATCH = memory_services.MAX_FORGET_MANY
MAX_FORGET_ALL = 20 * FORGET_BATCH
ADD, UPDATE, DELETE, NOOP = "ADD", "UPDATE", "DELETE", "NOOP"
REDACTED_MARK = "[REDACTED:"


def subjects_for(*, actor: User, named) -> list[User]:
    """The users a call is about: each name must be a user ``actor`` may act for (404
    ``unknown_user`` otherwise, as for a user that does not exist); a key that names nobody is
    about its own user, except a service's, which must name them."""
    names = sorted({str(name) for name in named})
    if not names:
        if is_service_principal(actor):
            raise InvalidInput(
                "user_id is required: name the user this key acts for (filters={'user_id': ...}).",
                code=ErrorCode.USER_ID_REQUIRED,
            )
        return [actor]
    if len(names) > MAX_SUBJECTS:
        raise InvalidInput(f"At most {MAX_SUBJECTS} users at once.", code=ErrorCode.TOO_MANY_USERS)
    return [user_get_subject(actor=actor, username=name) for name in names]


def tag_text(name: str, value) -> str | None:
    """An entity tag as written (``agent_id``, ``run_id``, ``app_id``, ``user_id``)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_VALUE_CHARS:
        raise InvalidInput(
            f"{name} must be a non-empty string of at most {MAX_VALUE_CHARS} characters.", code=ErrorCode.INVALID
        )
    return clean_text(value, field=name)


def mem0_evidence(tags: dict[str, str]) -> dict:
    return {"via": VIA, EVIDENCE_KEY: {name: value for name, value in tags.items() if value}}


def tags_q(tags: dict[str, str | None]) -> Q:
    """Memories written with exactly these tags (absent tag: written without it)."""
    condition = Q()
    for name in ENTITY_TAGS:
        value = tags.get(name)
        path = f"evidence__{EVIDENCE_KEY}__{name}"
        condition &= Q(**{path: value}) if value else Q(**{f"{path}__isnull": True})
    return condition


def expiry_of(value) -> datetime | None:
    """mem0's ``expiration_date``: a date (the memory expires when that day is over, in UTC) or
    an ISO 8601 date-time with a zone; null: none."""
    if value is None:
        return None
    if isinstance(value, str) and len(value) <= 10:
        try:
            day = parse_date(value.strip())
        except ValueError:
            day = None
        if day is not None:
            try:
                value = datetime.combine(day, time.min, tzinfo=UTC) + timedelta(days=1)
            except OverflowError:  # 9999-12-31, written for "never": its end is past what a date can be
                value = SHOWN_LAST
    return memory_services.validate_expires_at(value)


# --- add -------------------------------------------------------------------------------------
@dataclass
class Event:
    memory: Memory
    event: str
    previous: str = ""  # UPDATE: the text it replaced
    previous_id: str = ""


def messages_text(messages) -> list[tuple[str, str]]:
    """mem0's ``messages`` (a string, one message or a list of them) as (role, text) pairs; a
    message's content is a string or a list of text parts, or null (no text: left out)."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    elif isinstance(messages, dict):
        messages = [messages]
    if not isinstance(messages, list) or not messages:
        raise InvalidInput(
            "messages must be a string, a message or a non-empty list of messages.", code=ErrorCode.INVALID
        )
    if len(messages) > MAX_MESSAGES:
        raise TooLarge(f"At most {MAX_MESSAGES} messages at once.")
    found = []
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise InvalidInput("Each message is an object with a role and a content.", code=ErrorCode.INVALID)
        content = message.get("content")
        if content is None:
            continue  # a turn without text (an assistant's tool calls, in OpenAI's format)
        if isinstance(content, list):
            parts = [part.get("text") for part in content if isinstance(part, dict) and part.get("type") == "text"]
            texts = [part for part in parts if isinstance(part, str)]
            if len(texts) != len(content):
                raise InvalidInput("Only text content is supported (no images or files).", code=ErrorCode.UNSUPPORTED)
            content = "\n".join(texts)
        if not isinstance(content, str):
            raise InvalidInput("A message's content must be text.", code=ErrorCode.INVALID)
        found.append((message["role"], clean_text(content, field="content")))
    return found


def _kind_of(text: str) -> str:
    found = PersonalExtractor().extract(text, max_items=1)
    return found[0].kind if found and found[0].kind in IDENTITY_KINDS else Kind.FACT


def _lock_subject(subject: User) -> None:
    """Writes for one user through this API take turns (a row lock on the user): two adds of
    one statement never make two memories."""
    list(get_user_model().objects.select_for_update().filter(pk=subject.pk).values_list("pk"))


def memories_add(
    *,
    actor: User,
    subject: User,
    messages: list[tuple[str, str]],
    tags: dict[str, str | None],
    metadata: dict | None,
    infer: bool,
    expires_at: datetime | None,
) -> list[Event]:
    """``infer=False``: every user and assistant message is stored as given (a message already
    stored with the same tags is a NOOP). ``infer=True``: the person's own messages go through
    redaction and the extractor (``PersonalExtractor``, or the configured model), and each
    statement found is added, corrects the older statement of the same subject (UPDATE: a
    supersede) or is already known (NOOP)."""
    evidence = mem0_evidence({k: v for k, v in tags.items() if v})
    if not infer:
        texts = [text.strip() for role, text in messages if role in ("user", "assistant") and text.strip()]
        for text in texts:
            memory_services.validate_content(text)
            refuse_secrets(text)
        with transaction.atomic():
            _lock_subject(subject)
            return [_add_as_given(actor, subject, text, tags, metadata, evidence, expires_at) for text in texts]
    candidates = _inferred(subject, messages)
    with transaction.atomic():
        _lock_subject(subject)
        events = []
        for candidate in candidates:
            expiry = min((e for e in (candidate.expires_at, expires_at) if e is not None), default=None)
            if expiry is not None and expiry <= timezone.now():
                continue  # said as lasting until a time that has passed
            events.append(_add_inferred(actor, subject, candidate, tags, metadata, evidence, expiry))
        return events


def _subject_memories(actor: User, subject: User, tags: dict) -> "Q":
    return Q(pk__in=memories_of_users(actor=actor, users=[subject]).filter(live_q(), tags_q(tags)).values("pk"))


def _add_as_given(actor, subject, text, tags, metadata, evidence, expires_at) -> Event:
    known = Memory.objects.filter(_subject_memories(actor, subject, tags), content=text).first()
    if known is not None:
        return Event(memory=known, event=NOOP)
    memory = memory_services.memory_create(
        actor=actor,
        tier=Tier.USER,
        for_user=subject,
        kind=_kind_of(text),
        content=text,
        metadata=metadata,
        evidence=evidence,
        expires_at=expires_at,
        origin=Origin.API,
        content_guard=refuse_secrets,
    )
    return Event(memory=memory, event=ADD)


def _inferred(subject: User, messages: list[tuple[str, str]]) -> list[Candidate]:
    """The statements of the person's own messages, redacted before the extractor sees them
    (it may be a model behind HTTP: called outside any transaction), cleaned and timed."""
    text = "\n".join(text for role, text in messages if role == "user")
    if not text.strip():
        return []
    contact_info = auto_memory_settings_get(user=subject).redact_contact_info
    redacted = redact(text, contact_info=contact_info).text
    found = get_extractor(purpose=PERSONAL).extract(redacted, max_items=20)
    # A statement whose point was removed ("my api key is [REDACTED:…]") says nothing worth keeping.
    kept = [c for c in clean_candidates(found, contact_info=contact_info) if REDACTED_MARK not in c.content]
    return with_expiry(kept, now=timezone.now(), zone=user_zone(subject))


def _kept_already(mine, content: str, *, metadata, expires_at) -> Memory | None:
    """A memory of ``mine`` that says ``content`` (compared as the extractor compares statements:
    ``normalized``), with the same metadata and expiry, and not paused."""
    stem = content.strip().rstrip(".!?。！？")[:100]
    for memory in mine.filter(content__istartswith=stem, paused=False).order_by("-created_at", "-id")[:20]:
        same = normalized(memory.content) == normalized(content)
        if same and (memory.metadata or {}) == (metadata or {}) and memory.expires_at == expires_at:
            return memory
    return None


def _add_inferred(actor, subject, candidate: Candidate, tags, metadata, evidence, expires_at) -> Event:
    mine = Memory.objects.filter(_subject_memories(actor, subject, tags))
    same_subject = mine.filter(evidence__subject_key=candidate.subject_key).order_by("-created_at", "-id").first()
    write = {
        "actor": actor,
        "for_user": subject,
        "content": candidate.content,
        "kind": candidate.kind,
        "metadata": metadata,
        "evidence": {**evidence, "subject_key": candidate.subject_key},
        "expires_at": expires_at,
        "origin": Origin.API,
        "content_guard": refuse_secrets,
    }
    if same_subject is not None and normalized(same_subject.content) == normalized(candidate.content):
        return Event(memory=same_subject, event=NOOP)
    if same_subject is None:
        # The same statement kept already some other way (the REST API, the memory home), with
        # the same tags, and nothing this add asks for that it lacks (an expiry, metadata, not
        # paused): known. A correction of an older statement of its subject supersedes it, below.
        known = _kept_already(mine, candidate.content, metadata=metadata, expires_at=expires_at)
        if known is not None:
            return Event(memory=known, event=NOOP)
        return Event(memory=memory_services.memory_create(tier=Tier.USER, **write), event=ADD)
    new = memory_services.memory_supersede(memory_id=same_subject.pk, tier=Tier.USER, **write)
    return Event(memory=new, event=UPDATE, previous=same_subject.content, previous_id=same_subject.pk)


# --- change and forget -----------------------------------------------------------------------
def memory_update(
    *, actor: User, memory_id: str, text: str | None, metadata: dict | None, expires_at
) -> tuple[Memory, Memory]:
    """mem0's update: a correction (a new version; the old one stays in the history). Returns
    (old, new)."""
    old = memory_of_users_get(actor=actor, memory_id=memory_id)
    new = memory_services.memory_supersede(
        actor=actor,
        memory_id=old.pk,
        tier=Tier.USER,
        for_user=old.owner,
        content=old.content if text is None else text,
        metadata=metadata,
        origin=Origin.API,
        expires_at=expires_at,
        content_guard=refuse_secrets,
    )
    return old, new


def memory_delete(*, actor: User, memory_id: str) -> list[str]:
    memory = memory_of_users_get(actor=actor, memory_id=memory_id)
    return memory_services.memory_forget(actor=actor, memory_id=memory.pk, tier=Tier.USER, for_user=memory.owner)


def memories_forget_matching(*, actor: User, rows) -> tuple[list[str], int]:
    """Forget the memories ``rows`` holds (every version, derived rows along), by user, in
    batches, at most ``MAX_FORGET_ALL`` rows a call. Returns (forgotten ids, rows left)."""
    forgotten: list[str] = []
    with transaction.atomic():
        for owner_id in sorted(set(rows.values_list("owner_id", flat=True).distinct())):
            owner = get_user_model().objects.get(pk=owner_id)
            theirs = rows.filter(owner_id=owner_id)
            while len(forgotten) < MAX_FORGET_ALL:
                batch = list(theirs.order_by("-created_at", "-id").values_list("pk", flat=True)[:FORGET_BATCH])
                if not batch:
                    break
                forgotten.extend(memory_services.memory_forget_many(actor=actor, memory_ids=batch, for_user=owner))
    return forgotten, rows.count()


def memories_delete_all(*, actor: User, subjects: list[User], tags: dict[str, str | None]) -> tuple[list[str], int]:
    """mem0's ``delete_all``: every memory of these users (with these tags, when given)."""
    narrow = Q()
    for name, value in tags.items():
        if value:
            narrow &= Q(**{f"evidence__{EVIDENCE_KEY}__{name}": value})
    return memories_forget_matching(actor=actor, rows=memories_of_users(actor=actor, users=subjects).filter(narrow))


def entity_delete(*, actor: User, kind: str, name: str) -> tuple[list[str], int]:
    """mem0's entity delete: a user's memories, or the memories tagged with an agent, run or
    app across every user this key may act for. A tag that no memory in reach holds (any more)
    deletes nothing and is no error: mem0's ``delete_users()`` and ``reset()`` delete every entity
    ``users()`` listed, the user first, which takes its agents' and runs' memories along."""
    if kind == "user":
        return memories_delete_all(actor=actor, subjects=subjects_for(actor=actor, named=[name]), tags={})
    tag = {"agent": "agent_id", "run": "run_id", "app": "app_id"}.get(kind)
    if tag is None:
        raise InvalidInput("An entity type is user, agent, run or app.", code=ErrorCode.INVALID)
    rows = Memory.objects.filter(
        acting_for_users_q(actor, user_field="owner"),
        scope_type=Tier.USER,
        **{f"evidence__{EVIDENCE_KEY}__{tag}": tag_text(tag, name)},
    )
    return memories_forget_matching(actor=actor, rows=rows)


def memories_batch_update(*, actor: User, changes: list[dict]) -> list[tuple[Memory, Memory]]:
    """Several updates, all or nothing."""
    if not isinstance(changes, list) or not changes or len(changes) > MAX_BATCH:
        raise InvalidInput(f"memories must be a list of 1 to {MAX_BATCH} changes.", code=ErrorCode.INVALID)
    with transaction.atomic():
        return [
            memory_update(
                actor=actor,
                memory_id=change["memory_id"],
                text=change.get("text"),
                metadata=change.get("metadata"),
                expires_at=memory_services.KEEP_EXPIRY,
            )
            for change in changes
        ]


def memories_batch_delete(*, actor: User, memory_ids: list[str]) -> list[str]:
    """Several deletes, all or nothing: an id out of reach refuses the whole call."""
    ids = list(dict.fromkeys(memory_ids))
    if not ids or len(ids) > FORGET_BATCH:
        raise InvalidInput(f"memories must be a list of 1 to {FORGET_BATCH} ids.", code=ErrorCode.INVALID)
    with transaction.atomic():
        found = list(
            Memory.objects.filter(acting_for_users_q(actor, user_field="owner"), scope_type=Tier.USER, pk__in=ids)
            .select_related("owner")
            .only("pk", "owner")
        )
        if len(found) != len(ids):
            raise NotFound("Memory not found.")
        forgotten: list[str] = []
        owners = {memory.owner_id: memory.owner for memory in found if memory.owner is not None}
        for owner in owners.values():
            theirs = [memory.pk for memory in found if memory.owner_id == owner.pk]
            # An id may have gone already, as an older version of one forgotten before it.
            left = list(Memory.objects.filter(pk__in=theirs).values_list("pk", flat=True))
            forgotten.extend(memory_services.memory_forget_many(actor=actor, memory_ids=left, for_user=owner))
        return forgotten


def content_hash(text: str) -> str:
    """mem0's ``hash`` of a memory's text (MD5, as its own API gives it; not a security use)."""
    return hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()
