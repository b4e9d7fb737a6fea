"""The agent runtime's REST API: workspace files and settings, conversations and messages, runs
and their leases, and the agent tools.

``Authorization: Run <token>`` authenticates the run-scoped endpoints only (context, tools,
heartbeat, finish). A run token never authenticates anything else.
"""

import django_filters
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import extend_schema, extend_schema_field, inline_serializer
from rest_framework import authentication, exceptions, generics, permissions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.inputs import (
    NOT_ONLY_SPACE,
    StrictBooleanField,
    StrictCharField,
    StrictInputMixin,
    StrictIntegerField,
    documented,
    enum_schema,
    validated,
)
from config.api.output import PlannedListSerializer
from config.api.pagination import DefaultPagination
from config.api.routes import api_route
from config.api.schema import is_schema_generation
from identity_app.models import ApiToken
from memory_app.agent import leases, notes_history, selectors, services, tools
from memory_app.agent.budgets import truncate_json_text
from memory_app.agent.filters import ConversationFilter, RunFilter
from memory_app.agent.leases import FINISHED_STATUSES, RunCredential, run_authenticate
from memory_app.agent.models import (
    AgentRun,
    Conversation,
    ConversationSource,
    ConversationStatus,
    Message,
    MessageRole,
    MessageType,
    RunKind,
    ToolCall,
    WorkspaceChange,
    WorkspaceChangeAction,
    WorkspaceChangeSource,
)
from memory_app.agent.services import (
    MAX_LEASE_SECONDS,
    MAX_TOOL_CALL_FIELD_BYTES,
    MAX_TOOL_CALLS_PER_MESSAGE,
    MIN_LEASE_SECONDS,
)
from memory_app.agent.workspace import WORKSPACE_FILES


class RunTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Run"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Invalid run token header.")
        try:
            token = header[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("Invalid run token.") from None
        found = run_authenticate(token)
        if found is None:
            raise exceptions.AuthenticationFailed("Invalid run token, or it was replaced by a newer claim.")
        user, credential = found
        if not user.is_active:
            raise exceptions.AuthenticationFailed("Invalid run token.")
        return user, credential

    def authenticate_header(self, request):
        return self.keyword


class HasRunCredential(permissions.BasePermission):
    def has_permission(self, request, view):
        return isinstance(request.auth, RunCredential)


class RunTokenScheme(OpenApiAuthenticationExtension):
    target_class = "memory_app.agent.api.RunTokenAuthentication"
    name = "runToken"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "header", "name": "Authorization", "description": "Run <run_token>"}


# --- serializers ----------------------------------------------------------------------------
class WorkspaceFileOutput(serializers.Serializer):
    name = serializers.CharField()
    content = serializers.CharField()
    size = serializers.IntegerField()
    exists = serializers.BooleanField()
    sha256 = serializers.CharField()


# A version of a notes file, as the workspace checks it (400 invalid_base_sha256 otherwise).
SHA256_OR_NULL = {"type": "string", "pattern": "^[0-9a-f]{64}$", "nullable": True}


class WorkspaceFileInput(StrictInputMixin, serializers.Serializer):
    content = StrictCharField(allow_blank=True, trim_whitespace=False)
    base_sha256 = documented(
        StrictCharField, SHA256_OR_NULL, required=False, allow_null=True, default=None, max_length=64
    )


class WorkspaceDeleteInput(StrictInputMixin, serializers.Serializer):
    base_sha256 = documented(
        StrictCharField, SHA256_OR_NULL, required=False, allow_null=True, default=None, max_length=64
    )


def _base_sha256(request, body_value):
    """The version an edit is based on: ``base_sha256`` in the body, else ``If-Match``."""
    if body_value is not None:
        return body_value
    header = request.headers.get("If-Match")
    if header is None:
        return None
    return header.strip().removeprefix("W/").strip('"')


class SettingsSerializer(StrictInputMixin, serializers.Serializer):
    enable_memory = StrictBooleanField()


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


class ToolCallOutput(serializers.ModelSerializer):
    class Meta:
        model = ToolCall
        fields = ["id", "name", "input", "output", "status", "error", "created_at"]


# Lists are bounded: at most LIST_MAX_PAGE_SIZE items, and large text fields cut (marked) to
# LIST_TEXT_BYTES of JSON each; the detail endpoints return the full text.
LIST_MAX_PAGE_SIZE = 50
LIST_TEXT_BYTES = 4 * 1024
RUN_LIST_TEXT_BYTES = 1024


class ListPagination(DefaultPagination):
    page_size = LIST_MAX_PAGE_SIZE
    max_page_size = LIST_MAX_PAGE_SIZE


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
    metadata = documented(serializers.JSONField, JSON_OBJECT_OR_NULL, required=False, default=dict, allow_null=True)
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


class RunOutput(serializers.ModelSerializer):
    user = serializers.CharField(source="user.username")
    lease_state = serializers.SerializerMethodField()

    class Meta:
        model = AgentRun
        list_serializer_class = PlannedListSerializer
        fields = [
            "id",
            "user",
            "conversation_id",
            "project_id",
            "request_id",
            "kind",
            "parent_run_id",
            "status",
            "prompt",
            "goal",
            "worker_id",
            "lease_expires_at",
            "lease_generation",
            "lease_state",
            "started_at",
            "finished_at",
            "usage",
            "auto_memory_generate",
            "auto_memory_use",
            "created_at",
            "updated_at",
        ]

    def get_lease_state(self, run) -> str:
        return selectors.run_lease_state(run)


class RunListOutput(RunOutput):
    """A run in a list: ``prompt`` and ``goal`` cut (marked); ``GET /api/runs/{id}`` has them whole."""

    prompt = serializers.SerializerMethodField()
    goal = serializers.SerializerMethodField()
    prompt_truncated = serializers.SerializerMethodField()
    goal_truncated = serializers.SerializerMethodField()

    class Meta(RunOutput.Meta):
        fields = [*RunOutput.Meta.fields, "prompt_truncated", "goal_truncated"]

    # ``prompt_head``/``goal_head``: the first RUN_LIST_TEXT_BYTES + 1 characters (selectors.runs_list),
    # enough to know whether the cut below shortened the text.
    def get_prompt(self, run) -> str:
        return truncate_json_text(run.prompt_head or "", RUN_LIST_TEXT_BYTES)[0]

    def get_goal(self, run) -> str | None:
        return None if run.goal_head is None else truncate_json_text(run.goal_head, RUN_LIST_TEXT_BYTES)[0]

    def get_prompt_truncated(self, run) -> bool:
        return truncate_json_text(run.prompt_head or "", RUN_LIST_TEXT_BYTES)[1]

    def get_goal_truncated(self, run) -> bool:
        return run.goal_head is not None and truncate_json_text(run.goal_head, RUN_LIST_TEXT_BYTES)[1]


class RunCreateInput(StrictInputMixin, serializers.Serializer):
    user = StrictCharField(max_length=150)
    conversation_id = StrictCharField(max_length=40)
    request_id = StrictCharField(max_length=100)
    kind = serializers.ChoiceField(choices=RunKind.choices, required=False, default=RunKind.CHAT)
    worker_id = StrictCharField(max_length=200)
    lease_seconds = StrictIntegerField(
        required=False, default=60, min_value=MIN_LEASE_SECONDS, max_value=MAX_LEASE_SECONDS
    )
    prompt = StrictCharField(required=False, allow_blank=True, trim_whitespace=False, default="", max_length=256 * 1024)
    goal = StrictCharField(
        required=False, allow_null=True, allow_blank=True, trim_whitespace=False, default=None, max_length=64 * 1024
    )
    parent_run_id = StrictCharField(max_length=40, required=False, allow_null=True, default=None)
    project_id = StrictCharField(max_length=40, required=False, allow_null=True, default=None)


class RunClaimInput(StrictInputMixin, serializers.Serializer):
    worker_id = StrictCharField(max_length=200)
    lease_seconds = StrictIntegerField(
        required=False, default=60, min_value=MIN_LEASE_SECONDS, max_value=MAX_LEASE_SECONDS
    )


class RunHeartbeatInput(StrictInputMixin, serializers.Serializer):
    lease_seconds = StrictIntegerField(
        required=False, default=60, min_value=MIN_LEASE_SECONDS, max_value=MAX_LEASE_SECONDS
    )


FINISH_STATUS_CHOICES = [(status.value, status.label) for status in FINISHED_STATUSES]


class RunFinishInput(StrictInputMixin, serializers.Serializer):
    status = documented(StrictCharField, enum_schema(FINISH_STATUS_CHOICES))
    usage = documented(
        serializers.JSONField, {"type": "object", "additionalProperties": {}}, required=False, default=dict
    )


class RunIssuedOutput(RunOutput):
    """A run with the token that acts for it (create and claim): the only time the token is shown."""

    run_token = serializers.CharField(help_text="`Authorization: Run <run_token>` for this lease generation")

    class Meta(RunOutput.Meta):
        fields = [*RunOutput.Meta.fields, "run_token"]


def _issued(issued: services.IssuedRun) -> dict:
    return {**RunOutput(issued.run).data, "run_token": issued.run_token}


# --- workspace and settings -----------------------------------------------------------------
class WorkspaceFileView(APIView):
    """``sha256``/``ETag`` name the version read; sending it back as ``base_sha256`` (or
    ``If-Match``) makes PUT/DELETE refuse with 409 when the file changed meanwhile."""

    @staticmethod
    def _file_response(file) -> Response:
        return Response(WorkspaceFileOutput(file).data, headers={"ETag": f'"{file.sha256}"'})

    @extend_schema(responses=WorkspaceFileOutput)
    def get(self, request, name):
        return self._file_response(selectors.workspace_file_get(user=request.user, name=name))

    @extend_schema(request=WorkspaceFileInput, responses=WorkspaceFileOutput)
    def put(self, request, name):
        data = validated(WorkspaceFileInput, request)
        saved = services.workspace_file_write(
            user=request.user,
            name=name,
            content=data["content"],
            base_sha256=_base_sha256(request, data["base_sha256"]),
            author=_api_author(request),
        )
        return self._file_response(saved)

    @extend_schema(request=WorkspaceDeleteInput, responses={204: None})
    def delete(self, request, name):
        data = validated(WorkspaceDeleteInput, request)
        services.workspace_file_delete(
            user=request.user,
            name=name,
            base_sha256=_base_sha256(request, data["base_sha256"]),
            author=_api_author(request),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- workspace change history -----------------------------------------------------------------
class WorkspaceChangeFilter(django_filters.FilterSet):
    name = django_filters.ChoiceFilter(choices=[(n, n) for n in WORKSPACE_FILES])
    action = django_filters.ChoiceFilter(choices=WorkspaceChangeAction.choices)
    source = django_filters.ChoiceFilter(choices=WorkspaceChangeSource.choices)

    class Meta:
        model = WorkspaceChange
        fields = ["name", "action", "source"]


class DiffLineOutput(serializers.Serializer):
    op = serializers.ChoiceField(choices=["-", "+", "@"], help_text="removed, added, or the start of a region")
    line = serializers.IntegerField(source="number", help_text="1-based, in the version before (-) or after (+, @)")
    text = serializers.CharField()


class WorkspaceChangeOutput(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor.username", allow_null=True, default=None)
    run_id = serializers.CharField(source="run_ref")
    reverts = serializers.CharField(source="reverts_id", allow_null=True)
    undoable = serializers.BooleanField(source="diff_complete")
    diff = serializers.SerializerMethodField()
    diff_truncated = serializers.SerializerMethodField()

    class Meta:
        model = WorkspaceChange
        fields = [
            "id",
            "name",
            "seq",
            "action",
            "source",
            "actor",
            "run_id",
            "client",
            "reverts",
            "created_at",
            "before_exists",
            "after_exists",
            "before_sha256",
            "after_sha256",
            "lines_added",
            "lines_removed",
            "undoable",
            "diff",
            "diff_truncated",
        ]

    def _view(self, change) -> notes_history.DiffView:
        limits = self.context.get("diff_limits", {})
        cache = self.context.setdefault("diff_views", {})
        if change.pk not in cache:
            cache[change.pk] = notes_history.diff_view(change, **limits)
        return cache[change.pk]

    @extend_schema_field(DiffLineOutput(many=True))
    def get_diff(self, change) -> list:
        return DiffLineOutput(self._view(change).lines, many=True).data

    def get_diff_truncated(self, change) -> bool:
        return self._view(change).truncated


class WorkspaceUndoInput(StrictInputMixin, serializers.Serializer):
    base_sha256 = documented(
        StrictCharField, SHA256_OR_NULL, required=False, allow_null=True, default=None, max_length=64
    )


class WorkspaceUndoOutput(serializers.Serializer):
    change = WorkspaceChangeOutput()
    file = WorkspaceFileOutput()


class WorkspaceHistoryClearInput(StrictInputMixin, serializers.Serializer):
    name = documented(StrictCharField, enum_schema([(n, n) for n in WORKSPACE_FILES]), required=False, default=None)


def _api_author(request) -> notes_history.Author:
    token = request.auth
    client = f"API token {token.prefix}… {token.name}".strip() if isinstance(token, ApiToken) else ""
    return notes_history.Author(WorkspaceChangeSource.API, actor=request.user, client=client)


class WorkspaceHistoryView(generics.ListAPIView):
    """Changes of the caller's workspace files, newest first, each with its line diff (at most
    80 lines and 16 KiB here; the change itself has up to 2,000 lines and 256 KiB). ``DELETE``
    forgets the history (of one file with ``name``), leaving the files as they are."""

    serializer_class = WorkspaceChangeOutput
    pagination_class = ListPagination
    filterset_class = WorkspaceChangeFilter

    def get_queryset(self):
        if is_schema_generation(self):
            return WorkspaceChange.objects.none()
        return selectors.workspace_changes_visible(user=self.request.user)

    @extend_schema(
        request=WorkspaceHistoryClearInput,
        responses={200: inline_serializer("WorkspaceHistoryCleared", {"forgotten": serializers.IntegerField()})},
    )
    def delete(self, request):
        data = validated(WorkspaceHistoryClearInput, request)
        return Response({"forgotten": services.workspace_history_clear(user=request.user, name=data["name"])})


class WorkspaceChangeDetailView(APIView):
    @extend_schema(responses=WorkspaceChangeOutput)
    def get(self, request, change_id):
        change = selectors.workspace_change_get(user=request.user, change_id=change_id)
        limits = {"max_lines": notes_history.DETAIL_MAX_LINES, "max_bytes": notes_history.DETAIL_MAX_BYTES}
        return Response(WorkspaceChangeOutput(change, context={"diff_limits": limits}).data)


class WorkspaceChangeUndoView(APIView):
    """Reverse one change, keeping the changes made after it. ``base_sha256`` (or ``If-Match``):
    the version of the file the caller saw; a file changed since is ``409 conflict``. A later
    change that touched the same lines, or a file changed outside the service, is
    ``409 undo_conflict``. Either way nothing changes."""

    @extend_schema(request=WorkspaceUndoInput, responses={200: WorkspaceUndoOutput})
    def post(self, request, change_id):
        data = validated(WorkspaceUndoInput, request)
        undo = services.workspace_change_undo(
            user=request.user,
            change_id=change_id,
            base_sha256=_base_sha256(request, data["base_sha256"]),
            author=_api_author(request),
        )
        file = selectors.workspace_file_get(user=request.user, name=undo.name)
        return Response(
            {"change": WorkspaceChangeOutput(undo).data, "file": WorkspaceFileOutput(file).data},
            headers={"ETag": f'"{file.sha256}"'},
        )


class SettingsView(APIView):
    @extend_schema(responses=SettingsSerializer)
    def get(self, request):
        return Response({"enable_memory": selectors.user_settings_get(user=request.user).enable_memory})

    @extend_schema(request=SettingsSerializer, responses=SettingsSerializer)
    def put(self, request):
        row = services.user_settings_update(user=request.user, **validated(SettingsSerializer, request))
        return Response({"enable_memory": row.enable_memory})


# --- conversations --------------------------------------------------------------------------
class ConversationListView(generics.ListAPIView):
    serializer_class = ConversationOutput
    filterset_class = ConversationFilter

    def get_queryset(self):
        if is_schema_generation(self):
            return Conversation.objects.none()
        conversations = selectors.conversations_visible(user=self.request.user)
        return conversations.select_related(None).select_related("owner").order_by("-updated_at", "-id")

    @extend_schema(request=ConversationCreateInput, responses={201: ConversationOutput})
    def post(self, request):
        data = validated(ConversationCreateInput, request)
        conversation = services.conversation_create(actor=request.user, username=data.pop("user"), **data)
        return Response(ConversationOutput(conversation).data, status=status.HTTP_201_CREATED)


class ConversationUpdateInput(StrictInputMixin, serializers.Serializer):
    title = StrictCharField(max_length=300, required=False, allow_blank=True)
    status = documented(StrictCharField, enum_schema(ConversationStatus.choices), required=False)
    no_memory = StrictBooleanField(required=False)


class ConversationDetailView(APIView):
    @extend_schema(responses=ConversationOutput)
    def get(self, request, conversation_id):
        return Response(
            ConversationOutput(selectors.conversation_get(user=request.user, conversation_id=conversation_id)).data
        )

    @extend_schema(request=ConversationUpdateInput, responses=ConversationOutput)
    def patch(self, request, conversation_id):
        conversation = services.conversation_update(
            actor=request.user, conversation_id=conversation_id, **validated(ConversationUpdateInput, request)
        )
        return Response(ConversationOutput(conversation).data)


class MessageListView(generics.ListAPIView):
    serializer_class = MessageListOutput
    pagination_class = ListPagination

    def get_queryset(self):
        if is_schema_generation(self):
            return Message.objects.none()
        return selectors.conversation_message_list(
            user=self.request.user, conversation_id=self.kwargs["conversation_id"], content_chars=LIST_TEXT_BYTES + 1
        )

    @extend_schema(request=MessageCreateInput, responses={201: MessageOutput})
    def post(self, request, conversation_id):
        message = services.message_create(
            actor=request.user, conversation_id=conversation_id, **validated(MessageCreateInput, request)
        )
        return Response(MessageOutput(message).data, status=status.HTTP_201_CREATED)


class MessageDetailView(APIView):
    @extend_schema(responses=MessageOutput)
    def get(self, request, conversation_id, message_id):
        message = selectors.conversation_message_get(
            user=request.user, conversation_id=conversation_id, message_id=message_id
        )
        return Response(MessageOutput(message).data)


# --- runs -----------------------------------------------------------------------------------
class RunListView(generics.ListAPIView):
    serializer_class = RunListOutput
    pagination_class = ListPagination
    filterset_class = RunFilter

    def get_queryset(self):
        if is_schema_generation(self):
            return AgentRun.objects.none()
        runs = selectors.runs_list(user=self.request.user, text_chars=RUN_LIST_TEXT_BYTES + 1)
        return runs.select_related(None).select_related("user")  # the only related row the output reads

    @extend_schema(request=RunCreateInput, responses={201: RunIssuedOutput})
    def post(self, request):
        data = validated(RunCreateInput, request)
        issued = services.run_create(actor=request.user, username=data.pop("user"), **data)
        return Response(_issued(issued), status=status.HTTP_201_CREATED)


class RunDetailView(APIView):
    @extend_schema(responses=RunOutput)
    def get(self, request, run_id):
        return Response(RunOutput(selectors.run_get(user=request.user, run_id=run_id)).data)


class RunClaimView(APIView):
    @extend_schema(request=RunClaimInput, responses=RunIssuedOutput)
    def post(self, request, run_id):
        issued = services.run_claim(actor=request.user, run_id=run_id, **validated(RunClaimInput, request))
        return Response(_issued(issued))


class RunTokenView(APIView):
    """Base for endpoints authenticated by the run's own token."""

    authentication_classes = [RunTokenAuthentication]
    permission_classes = [HasRunCredential]

    def credential(self, request, run_id) -> leases.RunCredential:
        return leases.credential_require_run(credential=request.auth, run_id=run_id)

    def claims(self, request) -> dict:
        """Optional assertions from the runtime about where the call executes."""
        return {
            "thread_id": request.headers.get("X-Run-Thread-Id"),
            "request_id": request.headers.get("X-Run-Request-Id"),
            "worker_id": request.headers.get("X-Run-Worker-Id"),
        }


class RunHeartbeatView(RunTokenView):
    @extend_schema(request=RunHeartbeatInput, responses=RunOutput)
    def post(self, request, run_id):
        run = services.run_heartbeat(
            credential=self.credential(request, run_id), **validated(RunHeartbeatInput, request)
        )
        return Response(RunOutput(run).data)


class RunFinishView(RunTokenView):
    @extend_schema(request=RunFinishInput, responses=RunOutput)
    def post(self, request, run_id):
        run = services.run_finish(credential=self.credential(request, run_id), **validated(RunFinishInput, request))
        return Response(RunOutput(run).data)


class RunToolView(RunTokenView):
    def get_throttle_scopes(self, request):
        """Every tool call counts against ``run``; the history search also against ``search``."""
        return ("run", "search") if self.kwargs.get("tool") == "search_thread_messages" else ("run",)

    @extend_schema(request=dict, responses={200: dict})
    def post(self, request, run_id, tool):
        result = tools.tool_call(
            credential=self.credential(request, run_id), name=tool, arguments=request.data, claims=self.claims(request)
        )
        return Response(result)


RUN = r"(?P<run_id>[\w-]+)"
CONV = r"(?P<conversation_id>[\w-]+)"

urlpatterns = [
    api_route(r"users/me/settings", SettingsView.as_view(), "my-settings"),
    # Any single path segment reaches the view, which accepts only the three file names.
    api_route(r"users/me/workspace/(?P<name>[^/]+)", WorkspaceFileView.as_view(), "my-workspace-file"),
    api_route(r"users/me/workspace-history", WorkspaceHistoryView.as_view(), "my-workspace-history"),
    api_route(
        r"users/me/workspace-history/(?P<change_id>[\w-]+)", WorkspaceChangeDetailView.as_view(), "my-workspace-change"
    ),
    api_route(
        r"users/me/workspace-history/(?P<change_id>[\w-]+)/undo",
        WorkspaceChangeUndoView.as_view(),
        "my-workspace-change-undo",
    ),
    api_route(r"conversations", ConversationListView.as_view(), "conversations"),
    api_route(rf"conversations/{CONV}", ConversationDetailView.as_view(), "conversation-detail"),
    api_route(rf"conversations/{CONV}/messages", MessageListView.as_view(), "conversation-messages"),
    api_route(
        rf"conversations/{CONV}/messages/(?P<message_id>[0-9]{{1,18}})",
        MessageDetailView.as_view(),
        "conversation-message",
    ),
    api_route(r"runs", RunListView.as_view(), "runs"),
    api_route(rf"runs/{RUN}", RunDetailView.as_view(), "run-detail"),
    api_route(rf"runs/{RUN}/claim", RunClaimView.as_view(), "run-claim"),
    api_route(rf"runs/{RUN}/heartbeat", RunHeartbeatView.as_view(), "run-heartbeat"),
    api_route(rf"runs/{RUN}/finish", RunFinishView.as_view(), "run-finish"),
    api_route(rf"runs/{RUN}/tools/(?P<tool>[\w-]+)", RunToolView.as_view(), "run-tool"),
]
