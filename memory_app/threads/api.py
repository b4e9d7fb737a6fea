"""Conversations and their messages over REST (``/api/conversations/...``): written by service
principals for a user, read by their owner."""

from drf_spectacular.utils import OpenApiParameter, PolymorphicProxySerializer, extend_schema, inline_serializer
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.inputs import (
    NOT_ONLY_SPACE,
    StrictBooleanField,
    StrictCharField,
    StrictInputMixin,
    documented,
    enum_schema,
    validated,
)
from config.api.output import PlannedListSerializer
from config.api.pagination import ListPagination
from config.api.routes import api_route
from config.api.schema import is_schema_generation
from config.budgets import truncate_json_text
from config.http import AuthenticatedRequest
from memory_app.threads import selectors, services
from memory_app.threads.filters import ConversationFilter
from memory_app.threads.models import (
    Conversation,
    ConversationSource,
    ConversationStatus,
    Message,
    MessageRole,
    MessageType,
    ToolCall,
)
from memory_app.threads.services import MAX_TOOL_CALL_FIELD_BYTES, MAX_TOOL_CALLS_PER_MESSAGE


class ConversationOutput(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username")

    class Meta:
        model = Conversation
        list_serializer_class = PlannedListSerializer
        fields = [
            "id",
            "owner",
            "project_id",
            "title",
            "status",
            "source",
            "parent_id",
            "session_key",
            "no_memory",
            "external_id",
            "created_at",
            "updated_at",
        ]


class ConversationCreateInput(StrictInputMixin, serializers.Serializer):
    user = StrictCharField(max_length=150)
    title = StrictCharField(max_length=300, required=False, allow_blank=True, default="")
    project_id = StrictCharField(max_length=40, required=False, allow_null=True, default=None)
    source = documented(StrictCharField, enum_schema(ConversationSource.choices), required=False, default="chat")
    parent_id = StrictCharField(max_length=40, required=False, allow_null=True, default=None)
    session_key = StrictCharField(max_length=200, required=False, allow_null=True, allow_blank=True, default=None)
    # "Don't remember this chat" (docs/runs.md): its runs get no memory, nothing is extracted.
    no_memory = StrictBooleanField(required=False, default=False)
    external_id = StrictCharField(
        max_length=200,
        required=False,
        help_text="The runtime's own id for this conversation (e.g. an OpenAI Agents SDK session id), unique "
        "per user: when that user has a conversation with it, it is returned (200) instead of a new one.",
    )


class ToolCallOutput(serializers.ModelSerializer):
    class Meta:
        model = ToolCall
        fields = ["id", "name", "input", "output", "status", "error", "created_at"]


# A message in a list has its content cut (marked) to LIST_TEXT_BYTES of JSON; its detail has it whole.
LIST_TEXT_BYTES = 4 * 1024


class MessageOutput(serializers.ModelSerializer):
    tool_calls = ToolCallOutput(many=True, read_only=True)
    sent_at = serializers.SerializerMethodField(help_text="When the message was said; its created_at if not given.")

    class Meta:
        model = Message
        fields = [
            "id",
            "conversation_id",
            "run_id",
            "role",
            "type",
            "content",
            "metadata",
            "attachments",
            "images",
            "feedback",
            "tool_calls",
            "created_at",
            "sent_at",
        ]

    def get_sent_at(self, message) -> str:
        return serializers.DateTimeField().to_representation(message.sent_at or message.created_at)


class MessageListOutput(serializers.ModelSerializer):
    """A message in a list: no JSON side fields, tool calls counted, content cut."""

    content = serializers.SerializerMethodField()
    content_truncated = serializers.SerializerMethodField()
    tool_call_count = serializers.IntegerField()

    class Meta:
        model = Message
        fields = [
            "id",
            "conversation_id",
            "run_id",
            "role",
            "type",
            "content",
            "content_truncated",
            "tool_call_count",
            "created_at",
        ]

    def get_content(self, message) -> str:
        return truncate_json_text(message.content_head, LIST_TEXT_BYTES)[0]

    def get_content_truncated(self, message) -> bool:
        return truncate_json_text(message.content_head, LIST_TEXT_BYTES)[1]


# What the services accept (and check, with their own error codes), for the schema.
JSON_OBJECT_OR_NULL = {"type": "object", "additionalProperties": {}, "nullable": True}
JSON_ARRAY_OR_NULL = {"type": "array", "items": {}, "nullable": True}
TOOL_CALL_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 200, "pattern": NOT_ONLY_SPACE},
        "input": {"oneOf": [{"type": "object", "additionalProperties": {}}, {"type": "array", "items": {}}]},
        "output": {"description": "Text, or any JSON value (stored as its JSON text)."},
        "status": {"type": "string", "maxLength": 32, "nullable": True},
        "error": {"type": "string", "maxLength": MAX_TOOL_CALL_FIELD_BYTES, "nullable": True},
    },
    "required": ["name"],
    "additionalProperties": False,
}


class MessageCreateInput(StrictInputMixin, serializers.Serializer):
    role = documented(StrictCharField, enum_schema(MessageRole.choices))
    type = documented(StrictCharField, enum_schema(MessageType.choices), required=False, default="text")
    content = StrictCharField(allow_blank=True, trim_whitespace=False, required=False, default="")
    metadata = documented(
        serializers.JSONField,
        JSON_OBJECT_OR_NULL,
        required=False,
        default=dict,
        allow_null=True,
        help_text="A JSON object. In a chat of more than one person, `name` (or `speaker`) says who said it: "
        "history search favours the turns of a person the question names.",
    )
    attachments = documented(serializers.JSONField, JSON_ARRAY_OR_NULL, required=False, default=list, allow_null=True)
    images = documented(serializers.JSONField, JSON_ARRAY_OR_NULL, required=False, default=list, allow_null=True)
    feedback = documented(serializers.JSONField, JSON_OBJECT_OR_NULL, required=False, default=dict, allow_null=True)
    run_id = StrictCharField(max_length=40, required=False, allow_null=True, default=None)
    sent_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        default=None,
        help_text="When the message was said (ISO 8601 with a time zone); default: when it is stored.",
    )
    tool_calls = documented(
        serializers.JSONField,
        {**JSON_ARRAY_OR_NULL, "items": TOOL_CALL_SCHEMA, "maxItems": MAX_TOOL_CALLS_PER_MESSAGE},
        required=False,
        default=list,
        allow_null=True,
    )


# --- conversations --------------------------------------------------------------------------
class ConversationListView(generics.ListAPIView):
    request: AuthenticatedRequest  # IsAuthenticated, the default permission
    serializer_class = ConversationOutput
    filterset_class = ConversationFilter

    def get_queryset(self):
        if is_schema_generation(self):
            return Conversation.objects.none()
        conversations = selectors.conversations_visible(user=self.request.user)
        return conversations.select_related(None).select_related("owner").order_by("-updated_at", "-id")

    @extend_schema(request=ConversationCreateInput, responses={201: ConversationOutput, 200: ConversationOutput})
    def post(self, request: AuthenticatedRequest):
        data = validated(ConversationCreateInput, request)
        username = data.pop("user")
        if "external_id" in data:
            conversation, created = services.conversation_for_external_id(
                actor=request.user, username=username, external_id=data.pop("external_id"), **data
            )
        else:
            conversation, created = services.conversation_create(actor=request.user, username=username, **data), True
        return Response(
            ConversationOutput(conversation).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )


class ConversationUpdateInput(StrictInputMixin, serializers.Serializer):
    title = StrictCharField(max_length=300, required=False, allow_blank=True)
    status = documented(StrictCharField, enum_schema(ConversationStatus.choices), required=False)
    no_memory = StrictBooleanField(required=False)


class ConversationDetailView(APIView):
    @extend_schema(responses=ConversationOutput)
    def get(self, request: AuthenticatedRequest, conversation_id):
        return Response(
            ConversationOutput(selectors.conversation_get(user=request.user, conversation_id=conversation_id)).data
        )

    @extend_schema(request=ConversationUpdateInput, responses=ConversationOutput)
    def patch(self, request: AuthenticatedRequest, conversation_id):
        conversation = services.conversation_update(
            actor=request.user, conversation_id=conversation_id, **validated(ConversationUpdateInput, request)
        )
        return Response(ConversationOutput(conversation).data)


LIST_ORDERINGS = ("created_at", "-created_at")


def _message_list_params(request: Request) -> tuple[bool, str]:
    """``fields=full`` (whole messages, as their detail gives them) and ``ordering``."""
    fields = request.query_params.get("fields", "")
    ordering = request.query_params.get("ordering", "created_at")
    if fields not in ("", "full"):
        raise serializers.ValidationError({"fields": ["Must be full (or left out)."]})
    if ordering not in LIST_ORDERINGS:
        raise serializers.ValidationError({"ordering": [f"Must be one of {', '.join(LIST_ORDERINGS)}."]})
    return fields == "full", ordering


class MessageListView(generics.ListAPIView):
    request: AuthenticatedRequest  # IsAuthenticated, the default permission
    serializer_class = MessageListOutput
    pagination_class = ListPagination

    def get_serializer_class(self):
        if not is_schema_generation(self) and _message_list_params(self.request)[0]:
            return MessageOutput
        return MessageListOutput

    def get_queryset(self):
        if is_schema_generation(self):
            return Message.objects.none()
        full, ordering = _message_list_params(self.request)
        order = ("created_at", "id") if ordering == "created_at" else ("-created_at", "-id")
        if full:
            messages = selectors.conversation_messages(
                user=self.request.user, conversation_id=self.kwargs["conversation_id"]
            )
            return messages.order_by(*order)
        return selectors.conversation_message_list(
            user=self.request.user, conversation_id=self.kwargs["conversation_id"], content_chars=LIST_TEXT_BYTES + 1
        ).order_by(*order)

    @extend_schema(
        parameters=[
            OpenApiParameter("fields", str, enum=["full"], description="full: whole messages, as their detail."),
            OpenApiParameter("ordering", str, enum=list(LIST_ORDERINGS), description="Oldest first by default."),
        ],
        # Each item is a list's message, or with ``fields=full`` the whole message.
        responses=PolymorphicProxySerializer(
            component_name="MessageListItem",
            serializers=[MessageListOutput, MessageOutput],
            resource_type_field_name=None,
            many=True,
        ),
    )
    def get(self, request: Request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        operation_id="conversations_messages_forget_all",
        responses={
            200: inline_serializer(
                "MessagesForgotten", {"forgotten": serializers.IntegerField(), "remaining": serializers.IntegerField()}
            )
        },
    )
    def delete(self, request: AuthenticatedRequest, conversation_id):
        """Forget the conversation's messages (with their index entries and reads), at most
        10,000 a call, oldest first; ``remaining``: how many are left (call again)."""
        forgotten, remaining = services.messages_forget(actor=request.user, conversation_id=conversation_id)
        return Response({"forgotten": len(forgotten), "remaining": remaining})

    @extend_schema(request=MessageCreateInput, responses={201: MessageOutput})
    def post(self, request: AuthenticatedRequest, conversation_id):
        message = services.message_create(
            actor=request.user, conversation_id=conversation_id, **validated(MessageCreateInput, request)
        )
        return Response(MessageOutput(message).data, status=status.HTTP_201_CREATED)


class MessagesCreateInput(StrictInputMixin, serializers.Serializer):
    messages = serializers.ListField(child=MessageCreateInput(), min_length=1, max_length=services.MAX_MESSAGES_AT_ONCE)


class MessageBatchView(APIView):
    @extend_schema(
        operation_id="conversations_messages_create_many",
        request=MessagesCreateInput,
        responses={201: inline_serializer("MessagesCreated", {"results": MessageOutput(many=True)})},
    )
    def post(self, request: AuthenticatedRequest, conversation_id):
        """Several messages, in order, all or none, with no other writer's between them (at most
        100: an agent's turn)."""
        messages = services.messages_create(
            actor=request.user,
            conversation_id=conversation_id,
            messages=validated(MessagesCreateInput, request)["messages"],
        )
        return Response({"results": MessageOutput(messages, many=True).data}, status=status.HTTP_201_CREATED)


class MessageDetailView(APIView):
    @extend_schema(responses=MessageOutput)
    def get(self, request: AuthenticatedRequest, conversation_id, message_id):
        message = selectors.conversation_message_get(
            user=request.user, conversation_id=conversation_id, message_id=message_id
        )
        return Response(MessageOutput(message).data)

    @extend_schema(responses={204: None})
    def delete(self, request: AuthenticatedRequest, conversation_id, message_id):
        """Forget the message (the turn after it is indexed again without it)."""
        services.messages_forget(actor=request.user, conversation_id=conversation_id, message_id=int(message_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


CONV = r"(?P<conversation_id>[\w-]+)"

urlpatterns = [
    api_route(r"conversations", ConversationListView.as_view(), "conversations"),
    api_route(rf"conversations/{CONV}", ConversationDetailView.as_view(), "conversation-detail"),
    api_route(rf"conversations/{CONV}/messages", MessageListView.as_view(), "conversation-messages"),
    api_route(rf"conversations/{CONV}/messages/batch", MessageBatchView.as_view(), "conversation-messages-batch"),
    api_route(
        rf"conversations/{CONV}/messages/(?P<message_id>[0-9]{{1,18}})",
        MessageDetailView.as_view(),
        "conversation-message",
    ),
]
