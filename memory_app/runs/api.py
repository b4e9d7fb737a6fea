"""Runs over REST (``/api/runs/...``): create and claim (each issues a run token), heartbeat,
finish, and the agent tools.

``Authorization: Run <token>`` authenticates the run-scoped endpoints only (context, tools,
heartbeat, finish). A run token never authenticates anything else.
"""

from typing import cast

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import extend_schema
from rest_framework import authentication, exceptions, generics, permissions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.inputs import StrictCharField, StrictInputMixin, StrictIntegerField, documented, enum_schema, validated
from config.api.output import PlannedListSerializer
from config.api.pagination import ListPagination
from config.api.query import KnownQueryParameters
from config.api.routes import api_route
from config.api.schema import is_schema_generation
from config.budgets import truncate_json_text
from config.http import AuthenticatedRequest
from memory_app.runs import early, leases, selectors, services, tools
from memory_app.runs.filters import RunFilter
from memory_app.runs.leases import FINISHED_STATUSES, RunCredential, run_authenticate
from memory_app.runs.models import AgentRun, RunKind
from memory_app.runs.services import MAX_LEASE_SECONDS, MIN_LEASE_SECONDS


class RunTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Run"

    def authenticate(self, request: Request):
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

    def authenticate_header(self, request: Request):
        return self.keyword


class HasRunCredential(permissions.BasePermission):
    def has_permission(self, request: Request, view):
        return isinstance(request.auth, RunCredential)


class RunTokenScheme(OpenApiAuthenticationExtension):
    target_class = "memory_app.runs.api.RunTokenAuthentication"
    name = "runToken"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "header", "name": "Authorization", "description": "Run <run_token>"}


# A run in a list has its ``prompt`` and ``goal`` cut (marked) to RUN_LIST_TEXT_BYTES of JSON.
RUN_LIST_TEXT_BYTES = 1024


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


# --- runs -----------------------------------------------------------------------------------
class RunListView(generics.ListAPIView):
    request: AuthenticatedRequest  # IsAuthenticated, the default permission
    serializer_class = RunListOutput
    pagination_class = ListPagination
    filterset_class = RunFilter

    def get_queryset(self):
        if is_schema_generation(self):
            return AgentRun.objects.none()
        runs = selectors.runs_list(user=self.request.user, text_chars=RUN_LIST_TEXT_BYTES + 1)
        return runs.select_related(None).select_related("user")  # the only related row the output reads

    @extend_schema(request=RunCreateInput, responses={201: RunIssuedOutput})
    def post(self, request: AuthenticatedRequest):
        data = validated(RunCreateInput, request)
        issued = services.run_create(actor=request.user, username=data.pop("user"), **data)
        return Response(_issued(issued), status=status.HTTP_201_CREATED)


class RunDetailView(APIView):
    @extend_schema(responses=RunOutput)
    def get(self, request: AuthenticatedRequest, run_id):
        return Response(RunOutput(selectors.run_get(user=request.user, run_id=run_id)).data)


class RunClaimView(APIView):
    @extend_schema(request=RunClaimInput, responses=RunIssuedOutput)
    def post(self, request: AuthenticatedRequest, run_id):
        issued = services.run_claim(actor=request.user, run_id=run_id, **validated(RunClaimInput, request))
        return Response(_issued(issued))


class RunTokenView(APIView):
    """Base for endpoints authenticated by the run's own token."""

    authentication_classes = [RunTokenAuthentication]
    permission_classes = [HasRunCredential, KnownQueryParameters]

    def credential(self, request: Request, run_id) -> leases.RunCredential:
        # HasRunCredential lets in only a request authenticated by a run token.
        credential = cast(RunCredential, request.auth)
        return leases.credential_require_run(credential=credential, run_id=run_id)

    def claims(self, request: Request) -> dict:
        """Optional assertions from the runtime about where the call executes."""
        return {
            "thread_id": request.headers.get("X-Run-Thread-Id"),
            "request_id": request.headers.get("X-Run-Request-Id"),
            "worker_id": request.headers.get("X-Run-Worker-Id"),
        }


class RunHeartbeatView(RunTokenView):
    @extend_schema(request=RunHeartbeatInput, responses=RunOutput)
    def post(self, request: Request, run_id):
        run = services.run_heartbeat(
            credential=self.credential(request, run_id), **validated(RunHeartbeatInput, request)
        )
        return Response(RunOutput(run).data)


class RunFinishView(RunTokenView):
    @extend_schema(request=RunFinishInput, responses=RunOutput)
    def post(self, request: Request, run_id):
        run = services.run_finish(credential=self.credential(request, run_id), **validated(RunFinishInput, request))
        return Response(RunOutput(run).data)


class RunToolView(RunTokenView):
    def get_throttle_scopes(self, request: Request):
        """Every tool call counts against ``run``; the history search also against ``search``."""
        return ("run", "search") if self.kwargs.get("tool") == "search_thread_messages" else ("run",)

    def initial(self, request: Request, *args, **kwargs):
        if kwargs.get("tool") == "search_thread_messages":
            early.start(request)  # the question to the model while the token is checked
        super().initial(request, *args, **kwargs)

    @extend_schema(request=dict, responses={200: dict})
    def post(self, request: Request, run_id, tool):
        credential = self.credential(request, run_id)
        result = tools.tool_call(credential=credential, name=tool, arguments=request.data, claims=self.claims(request))
        if tool == "search_thread_messages":
            early.grant(token_hash=credential.token_hash, user_id=credential.user_id)
        return Response(result)


RUN = r"(?P<run_id>[\w-]+)"

urlpatterns = [
    api_route(r"runs", RunListView.as_view(), "runs"),
    api_route(rf"runs/{RUN}", RunDetailView.as_view(), "run-detail"),
    api_route(rf"runs/{RUN}/claim", RunClaimView.as_view(), "run-claim"),
    api_route(rf"runs/{RUN}/heartbeat", RunHeartbeatView.as_view(), "run-heartbeat"),
    api_route(rf"runs/{RUN}/finish", RunFinishView.as_view(), "run-finish"),
    api_route(rf"runs/{RUN}/tools/(?P<tool>[\w-]+)", RunToolView.as_view(), "run-tool"),
]
