"""Messages in the retrieval engine: what ``search_thread_messages`` ranks.

User and assistant text messages of main threads are indexed in their owner's "history:<id>"
scope when they are written; which of them a search may return is decided by
``history_messages`` in the query that loads the hits (archived and deleted threads stay
indexed but are never returned). A message's vector is the mean of its own text's and of the
text with the turn before it, so a short answer ("Yes, the blue one") carries what it answers
and a stated fact is not blurred by the small talk before it.
"""

from django.db.models import OuterRef, Subquery
from django.db.models.functions import Right

from memory_app.search import documents, embedder
from memory_app.search.index import Row
from memory_app.threads.models import Conversation, Message, MessageRole, MessageType
from memory_app.threads.selectors import conversation_is_main_thread

SOURCE = "message"
HISTORY_ROLES = (MessageRole.USER, MessageRole.ASSISTANT)
CONTEXT_CHARS = 600
# What ``_texts`` gives to embed, by version: 0 the turn with the one before it; 1 also the turn
# alone (the mean of the two vectors). Vectors of 0 are made again by the worker (embed_stale).
MESSAGE_VECTOR_RECIPE = 1
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


def on_user_deleted(sender, instance, **kwargs) -> None:
    documents.drop_scopes([history_scope(instance.pk)])


def _texts(refs: list[str]) -> dict[str, tuple[str, embedder.ToEmbed]]:
    """A message's indexed text and what its vector is made of: its own text and, after the
    first turn of a thread, the text with the end of the turn before it (the mean of the two
    vectors: the turn alone keeps a stated fact sharp, the pair keeps what a short answer refers
    to; bench/message_vectors_eval.py)."""
    ids = [int(ref) for ref in refs if ref.isdigit()]
    previous = (
        Message.objects.filter(
            conversation_id=OuterRef("conversation_id"),
            role__in=HISTORY_ROLES,
            type=MessageType.TEXT,
            id__lt=OuterRef("id"),
        )
        .order_by("-created_at", "-id")
        .annotate(tail=Right("content", CONTEXT_CHARS))
        .values("tail")[:1]
    )
    rows = (
        Message.objects.filter(pk__in=ids).annotate(context=Subquery(previous)).values_list("id", "content", "context")
    )
    return {
        str(pk): (content, (content, f"{context}\n{content}") if context else content) for pk, content, context in rows
    }


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
