"""REST adapters for workspace files, settings, conversations, runs, context and tools."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import StrictInputMixin
from identity_app.permissions import is_service_principal
from memory_app import context, conversations, notes, runs, tools
from memory_app.api.run_auth import HasRunCredential, RunTokenAuthentication
from memory_app.models import AgentRun, Conversation, Message, RunKind, ToolCall


def _validated(serializer_class, request):
    data = serializer_class(data=request.data)
    data.is_valid(raise_exception=True)
    return data.validated_data


# --- serializers ----------------------------------------------------------------------------
class StrictCharField(serializers.CharField):
    """A string, and only a string (no silent coercion of numbers or booleans)."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class WorkspaceFileOutput(serializers.Serializer):
    name = serializers.CharField()
    content = serializers.CharField()
    size = serializers.IntegerField()
    exists = serializers.BooleanField()


class WorkspaceFileInput(StrictInputMixin, serializers.Serializer):
    content = StrictCharField(allow_blank=True, trim_whitespace=False)


class SettingsSerializer(StrictInputMixin, serializers.Serializer):
    enable_memory = StrictBooleanField()


class ConversationOutput(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username")

    class Meta:
        model = Conversation
        fields = ["id", "owner", "project_id", "title", "status", "source", "parent_id", "session_key", "created_at", "updated_at"]


class ConversationCreateInput(StrictInputMixin, serializers.Serializer):
    user = StrictCharField(max_length=150)
    title = StrictCharField(max_length=300, required=False, allow_blank=True, default="")
    project_id = StrictCharField(max_length=40, required=False, allow_null=True, default=None)
    source = StrictCharField(max_length=32, required=False, default="chat")
    parent_id = StrictCharField(max_length=40, required=False, allow_null=True, default=None)
    session_key = StrictCharField(max_length=200, required=False, allow_null=True, allow_blank=True, default=None)


class ToolCallOutput(serializers.ModelSerializer):
    class Meta:
        model = ToolCall
        fields = ["id", "name", "input", "output", "status", "error", "created_at"]


class MessageOutput(serializers.ModelSerializer):
    tool_calls = ToolCallOutput(many=True, read_only=True)

    class Meta:
        model = Message
        fields = [
            "id", "conversation_id", "run_id", "role", "type", "content", "metadata",
            "attachments", "images", "feedback", "tool_calls", "created_at",
        ]


class MessageCreateInput(StrictInputMixin, serializers.Serializer):
    role = StrictCharField(max_length=16)
    type = StrictCharField(max_length=16, required=False, default="text")
    content = StrictCharField(allow_blank=True, trim_whitespace=False, required=False, default="")
    metadata = serializers.JSONField(required=False, default=dict)
    attachments = serializers.JSONField(required=False, default=list)
    images = serializers.JSONField(required=False, default=list)
    feedback = serializers.JSONField(required=False, default=dict)
    run_id = StrictCharField(max_length=40, required=False, allow_null=True, default=None)
    tool_calls = serializers.JSONField(required=False, default=list)


class RunOutput(serializers.ModelSerializer):
    user = serializers.CharField(source="user.username")
    lease_state = serializers.SerializerMethodField()

    class Meta:
        model = AgentRun
        fields = [
            "id", "user", "conversation_id", "project_id", "request_id", "kind", "parent_run_id", "status",
            "prompt", "goal", "worker_id", "lease_expires_at", "lease_generation", "lease_state",
            "started_at", "finished_at", "usage", "auto_memory_generate", "auto_memory_use",
            "created_at", "updated_at",
        ]

    def get_lease_state(self, run) -> str:
        return runs.run_lease_state(run)


class RunCreateInput(StrictInputMixin, serializers.Serializer):
    user = StrictCharField(max_length=150)
    conversation_id = StrictCharField(max_length=40)
    request_id = StrictCharField(max_length=100)
    kind = serializers.ChoiceField(choices=RunKind.choices, required=False, default=RunKind.CHAT)
    worker_id = StrictCharField(max_length=200)
    lease_seconds = serializers.IntegerField(required=False, default=60)
    prompt = StrictCharField(required=False, allow_blank=True, trim_whitespace=False, default="", max_length=256 * 1024)
    goal = StrictCharField(required=False, allow_null=True, allow_blank=True, trim_whitespace=False, default=None, max_length=64 * 1024)
    parent_run_id = StrictCharField(max_length=40, required=False, allow_null=True, default=None)
    project_id = StrictCharField(max_length=40, required=False, allow_null=True, default=None)


class RunClaimInput(StrictInputMixin, serializers.Serializer):
    worker_id = StrictCharField(max_length=200)
    lease_seconds = serializers.IntegerField(required=False, default=60)


class RunHeartbeatInput(StrictInputMixin, serializers.Serializer):
    lease_seconds = serializers.IntegerField(required=False, default=60)


class RunFinishInput(StrictInputMixin, serializers.Serializer):
    status = StrictCharField(max_length=16)
    usage = serializers.JSONField(required=False, default=dict)


def _issued(issued: runs.IssuedRun) -> dict:
    return {**RunOutput(issued.run).data, "run_token": issued.run_token}


# --- workspace and settings -----------------------------------------------------------------
class WorkspaceFileView(APIView):
    @extend_schema(responses=WorkspaceFileOutput)
    def get(self, request, name):
        return Response(WorkspaceFileOutput(notes.workspace_file_get(user=request.user, name=name)).data)

    @extend_schema(request=WorkspaceFileInput, responses=WorkspaceFileOutput)
    def put(self, request, name):
        data = _validated(WorkspaceFileInput, request)
        saved = notes.workspace_file_write(user=request.user, name=name, content=data["content"])
        return Response(WorkspaceFileOutput(saved).data)

    @extend_schema(responses={204: None})
    def delete(self, request, name):
        notes.workspace_file_delete(user=request.user, name=name)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SettingsView(APIView):
    @extend_schema(responses=SettingsSerializer)
    def get(self, request):
        return Response({"enable_memory": notes.user_settings_get(user=request.user).enable_memory})

    @extend_schema(request=SettingsSerializer, responses=SettingsSerializer)
    def put(self, request):
        row = notes.user_settings_update(user=request.user, **_validated(SettingsSerializer, request))
        return Response({"enable_memory": row.enable_memory})


# --- conversations --------------------------------------------------------------------------
class ConversationListView(generics.ListAPIView):
    serializer_class = ConversationOutput

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Conversation.objects.none()
        return conversations.conversations_visible(user=self.request.user).order_by("-updated_at", "-id")

    @extend_schema(request=ConversationCreateInput, responses={201: ConversationOutput})
    def post(self, request):
        data = _validated(ConversationCreateInput, request)
        conversation = conversations.conversation_create(actor=request.user, username=data.pop("user"), **data)
        return Response(ConversationOutput(conversation).data, status=status.HTTP_201_CREATED)


class ConversationUpdateInput(StrictInputMixin, serializers.Serializer):
    title = StrictCharField(max_length=300, required=False, allow_blank=True)
    status = StrictCharField(max_length=16, required=False)


class ConversationDetailView(APIView):
    @extend_schema(responses=ConversationOutput)
    def get(self, request, conversation_id):
        return Response(ConversationOutput(conversations.conversation_get(user=request.user, conversation_id=conversation_id)).data)

    @extend_schema(request=ConversationUpdateInput, responses=ConversationOutput)
    def patch(self, request, conversation_id):
        conversation = conversations.conversation_update(
            actor=request.user, conversation_id=conversation_id, **_validated(ConversationUpdateInput, request)
        )
        return Response(ConversationOutput(conversation).data)


class MessageListView(generics.ListAPIView):
    serializer_class = MessageOutput

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Message.objects.none()
        return conversations.conversation_messages(user=self.request.user, conversation_id=self.kwargs["conversation_id"])

    @extend_schema(request=MessageCreateInput, responses={201: MessageOutput})
    def post(self, request, conversation_id):
        message = conversations.message_create(
            actor=request.user, conversation_id=conversation_id, **_validated(MessageCreateInput, request)
        )
        return Response(MessageOutput(message).data, status=status.HTTP_201_CREATED)


# --- runs -----------------------------------------------------------------------------------
class RunListView(generics.ListAPIView):
    serializer_class = RunOutput

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return AgentRun.objects.none()
        return runs.runs_visible(user=self.request.user).order_by("-created_at", "-id")

    @extend_schema(request=RunCreateInput, responses={201: RunOutput})
    def post(self, request):
        data = _validated(RunCreateInput, request)
        issued = runs.run_create(actor=request.user, username=data.pop("user"), **data)
        return Response(_issued(issued), status=status.HTTP_201_CREATED)


class RunDetailView(APIView):
    @extend_schema(responses=RunOutput)
    def get(self, request, run_id):
        return Response(RunOutput(runs.run_get(user=request.user, run_id=run_id)).data)


class RunClaimView(APIView):
    @extend_schema(request=RunClaimInput, responses=RunOutput)
    def post(self, request, run_id):
        if not is_service_principal(request.user):
            runs.run_get(user=request.user, run_id=run_id)  # 404 unless it is their own
        issued = runs.run_claim(actor=request.user, run_id=run_id, **_validated(RunClaimInput, request))
        return Response(_issued(issued))


class RunTokenView(APIView):
    """Base for endpoints authenticated by the run's own token."""

    authentication_classes = [RunTokenAuthentication]
    permission_classes = [HasRunCredential]

    def credential(self, request, run_id) -> runs.RunCredential:
        return runs.credential_require_run(credential=request.auth, run_id=run_id)

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
        run = runs.run_heartbeat(credential=self.credential(request, run_id), **_validated(RunHeartbeatInput, request))
        return Response(RunOutput(run).data)


class RunFinishView(RunTokenView):
    @extend_schema(request=RunFinishInput, responses=RunOutput)
    def post(self, request, run_id):
        run = runs.run_finish(credential=self.credential(request, run_id), **_validated(RunFinishInput, request))
        return Response(RunOutput(run).data)


class RunContextView(RunTokenView):
    @extend_schema(
        parameters=[OpenApiParameter("query", str, required=False), OpenApiParameter("round", int, required=False)],
        responses={200: dict},
    )
    def get(self, request, run_id):
        return Response(
            context.run_context_build(
                credential=self.credential(request, run_id),
                query=request.query_params.get("query", ""),
                round_number=context.context_round(request.query_params.get("round")),
            )
        )


class RunToolView(RunTokenView):
    @extend_schema(request=dict, responses={200: dict})
    def post(self, request, run_id, tool):
        result = tools.tool_call(
            credential=self.credential(request, run_id), name=tool, arguments=request.data, claims=self.claims(request)
        )
        return Response(result)
