"""Messages in the retrieval engine: what ``search_thread_messages`` ranks.

User and assistant text messages of main threads are indexed in their owner's "history:<id>"
scope when they are written; which of them a search may return is decided by
``history_messages`` in the query that loads the hits (archived and deleted threads stay
indexed but are never returned). A message's vector is the mean of its own text's and of the
text with the turn before it, so a short answer ("Yes, the blue one") carries what it answers
and a stated fact is not blurred by the small talk before it.
"""

from django.db.models import JSONField, OuterRef, Subquery
from django.db.models.functions import Right

from memory_app.search import documents, embedder
from memory_app.search.index import Row
from memory_app.threads.models import Conversation, Message, MessageRole, MessageType
from memory_app.threads.selectors import conversation_is_main_thread

SOURCE = "message"
HISTORY_ROLES = (MessageRole.USER, MessageRole.ASSISTANT)
CONTEXT_CHARS = 600
# What ``_texts`` gives to embed, by version: 0 the turn with the one before it; 1 also the turn
# alone (the mean of the two vectors); 2 each text after its speaker's name where the metadata
# names one ("Mia: …"). Older vectors are made again by the worker (embed_stale).
MESSAGE_VECTOR_RECIPE = 2
# The metadata keys a turn's speaker is read from; the first that holds a JSON string with more
# than spaces wins (``metadata_speaker``; history search reads them the same way in SQL).
SPEAKER_KEYS = ("name", "speaker")
BATCH = 500


def history_scope(user_id: int) -> str:
    return f"history:{user_id}"


def is_indexed(message: Message, conversation: Conversation) -> bool:
    return (
        message.role in HISTORY_ROLES
        and message.type == MessageType.TEXT
        and conversation_is_main_thread(conversation)
        and bool(message.content.strip())
    )


def on_message_created(message: Message, conversation: Conversation) -> None:
    if is_indexed(message, conversation):
        documents.sync(
            SOURCE,
            [Row(ref=str(message.pk), scope=history_scope(conversation.owner_id), text=message.content)],
        )


def on_messages_deleted(message_ids: list[int], followers: list[Message]) -> None:
    """Forgotten messages leave the index with their vectors; the turns that followed them are
    indexed again, since their vectors were made with the forgotten text as context."""
    documents.remove(SOURCE, [str(pk) for pk in message_ids])
    if followers:
        documents.remove(SOURCE, [str(m.pk) for m in followers])
        documents.sync(
            SOURCE,
            [
                Row(ref=str(m.pk), scope=history_scope(m.conversation.owner_id), text=m.content)
                for m in followers
                if is_indexed(m, m.conversation)
            ],
        )


def on_user_deleted(sender, instance, **kwargs) -> None:
    documents.drop_scopes([history_scope(instance.pk)])


def metadata_speaker(metadata) -> str:
    """The speaker a message's metadata names: the first of ``SPEAKER_KEYS`` holding a string with
    more than spaces, stripped; "" if none does (a number, ``true``, an object name nobody)."""
    if isinstance(metadata, dict):
        for key in SPEAKER_KEYS:
            value = metadata.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
    return ""


def _said_by(text: str, metadata) -> str:
    """The text as its speaker said it, "Mia: …", where the metadata names one and the text does
    not start with that name already (a transcript that writes it, docs/runs.md)."""
    speaker = metadata_speaker(metadata)
    if not speaker or text.startswith((f"{speaker}: ", f"{speaker}：")):
        return text
    return f"{speaker}: {text}"


def _texts(refs: list[str]) -> dict[str, tuple[str, embedder.ToEmbed]]:
    """A message's indexed text and what its vector is made of: its own text and, after the
    first turn of a thread, the text with the end of the turn before it (the mean of the two
    vectors: the turn alone keeps a stated fact sharp, the pair keeps what a short answer refers
    to; bench/message_vectors_eval.py); each text after its speaker's name where the metadata
    names one, so a question about Mia finds Mia's own turns, which rarely say her name
    (docs/search.md, "A speaker written before the text")."""
    ids = [int(ref) for ref in refs if ref.isdigit()]
    previous = Message.objects.filter(
        conversation_id=OuterRef("conversation_id"),
        role__in=HISTORY_ROLES,
        type=MessageType.TEXT,
        id__lt=OuterRef("id"),
    ).order_by("-created_at", "-id")
    rows = (
        Message.objects.filter(pk__in=ids)
        .annotate(
            context=Subquery(previous.annotate(tail=Right("content", CONTEXT_CHARS)).values("tail")[:1]),
            context_metadata=Subquery(previous.values("metadata")[:1], output_field=JSONField()),
        )
        .values_list("id", "content", "metadata", "context", "context_metadata")
    )
    out: dict[str, tuple[str, embedder.ToEmbed]] = {}
    for pk, content, metadata, context, context_metadata in rows:
        own = _said_by(content, metadata)
        out[str(pk)] = (content, (own, f"{_said_by(context, context_metadata)}\n{own}") if context else own)
    return out


embedder.register_source(SOURCE, _texts, recipe=MESSAGE_VECTOR_RECIPE)


def reindex_all() -> int:
    """Index every history message again from its row; returns how many rows were looked at."""
    seen, last_id = 0, 0
    while True:
        batch = list(
            Message.objects.filter(pk__gt=last_id)
            .select_related("conversation")
            .order_by("pk")
            .only(
                "id",
                "role",
                "type",
                "content",
                "conversation__owner_id",
                "conversation__parent_id",
                "conversation__source",
            )[:BATCH]
        )
        if not batch:
            return seen
        last_id = batch[-1].pk
        documents.sync(
            SOURCE,
            [
                Row(ref=str(m.pk), scope=history_scope(m.conversation.owner_id), text=m.content)
                if is_indexed(m, m.conversation)
                else Row(ref=str(m.pk), scope=None)
                for m in batch
            ],
        )
        seen += len(batch)
