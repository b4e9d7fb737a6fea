"""Identity memories over REST: a user's own (``/users/me/memories``), a project's
(``/projects/{id}/identity-memories``) and the identity context."""

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import generics, serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.filters import ApiFilterBackend
from config.api.inputs import JSONObjectField, StrictBooleanField, StrictCharField, StrictInputMixin, validated
from config.api.output import PlannedListSerializer
from config.api.routes import api_route
from config.api.schema import is_schema_generation
from config.http import AuthenticatedRequest
from config.validation import is_valid_id
from identity_app.api.serializers import ProfileOutput
from memory_app.memories import early, selectors, services
from memory_app.memories.filters import MemoryFilter
from memory_app.memories.identity_context import identity_context_build
from memory_app.memories.models import IDENTITY_KINDS, MAX_CONTENT_CHARS, Kind, Memory, Origin, Tier

# The schema says what the services check: a date-time with a time zone that lies in the
# future. OpenAPI has no bound for a date-time, so the format is one of our own (docs/API.md,
# "Expiry"); a client that does not know it reads an ISO 8601 string, and `make fuzz` generates
# future date-times for it (scripts/fuzz_hooks.py).
EXPIRES_AT_FORMAT = "future-date-time"


@extend_schema_field(
    {
        "type": "string",
        "format": EXPIRES_AT_FORMAT,
        "nullable": True,
        "description": (
            "When the statement stops being true: an ISO 8601 date-time with a time zone, later than the "
            "request (a past or naive one is a 400 invalid_expires_at); null: never."
        ),
    }
)
class ExpiresAtField(serializers.DateTimeField):
    """``expires_at`` as input: an ISO 8601 date-time with a time zone (a naive one is refused,
    never read in the server's zone), or null for "never expires". The services also refuse a
    time that is not in the future (400 ``invalid_expires_at``)."""

    default_error_messages = {
        "naive": "expires_at needs a time zone (an offset such as +01:00, or Z for UTC).",
    }

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("allow_null", True)
        kwargs.setdefault(
            "help_text", "When the statement stops being true (ISO 8601 with a time zone, in the future); null: never."
        )
        super().__init__(**kwargs)

    def enforce_timezone(self, value):
        if timezone.is_naive(value):
            self.fail("naive")
        return super().enforce_timezone(value)


class MemoryOutput(serializers.ModelSerializer):
    expired = serializers.BooleanField(read_only=True, help_text="expires_at has passed (status stays active).")
    paused = serializers.BooleanField(
        read_only=True, help_text="Paused: listed, but used by no agent until resumed (PATCH paused=false)."
    )

    class Meta:
        model = Memory
        list_serializer_class = PlannedListSerializer
        fields = [
            "id",
            "scope_type",
            "scope_id",
            "project_id",
            "kind",
            "content",
            "status",
            "superseded_by",
            "origin",
            "source_thread_id",
            "metadata",
            "evidence",
            "created_at",
            "updated_at",
            "expires_at",
            "expired",
            "paused",
        ]


class MemoryChainOutput(serializers.Serializer):
    results = MemoryOutput(many=True, help_text="The supersede chain, oldest first.")


@extend_schema_field({"type": "string", "enum": sorted(IDENTITY_KINDS)})
class IdentityKindField(serializers.ChoiceField):
    """Any kind parses; the services refuse those the user and project tiers do not take (400
    invalid_kind)."""


class MemoryCreateInput(StrictInputMixin, serializers.Serializer):
    kind = IdentityKindField(choices=Kind.choices)
    content = StrictCharField(max_length=MAX_CONTENT_CHARS, trim_whitespace=True)
    metadata = JSONObjectField(required=False, default=dict)
    evidence = JSONObjectField(required=False, default=dict)
    source_thread_id = StrictCharField(max_length=64, required=False, allow_blank=True, default="")
    expires_at = ExpiresAtField()


class MemorySupersedeInput(StrictInputMixin, serializers.Serializer):
    content = StrictCharField(max_length=MAX_CONTENT_CHARS, trim_whitespace=True)
    kind = IdentityKindField(choices=Kind.choices, required=False)
    metadata = JSONObjectField(required=False)
    evidence = JSONObjectField(required=False)
    source_thread_id = StrictCharField(max_length=64, required=False, allow_blank=True)
    expires_at = ExpiresAtField(
        help_text="The new version's expiry (ISO 8601 with a time zone, in the future; null: none). "
        "Left out: the corrected memory's."
    )


class MemoryChangeInput(StrictInputMixin, serializers.Serializer):
    """A change in place: same id, no new version; each changed field is recorded in the
    memory's provenance. At least one field."""

    schema_required_any_of = (("expires_at",), ("paused",))

    expires_at = ExpiresAtField(
        help_text="A new expiry (ISO 8601 with a time zone, in the future), or null for none. Left out: unchanged."
    )
    paused = StrictBooleanField(
        required=False,
        help_text="true: no agent uses it (context, identity block, searches, MCP) until it is resumed with false.",
    )


class IdentityContextOutput(serializers.Serializer):
    profile = serializers.DictField()
    memories = serializers.DictField(child=MemoryOutput(many=True))
    identity_context = StrictCharField()
    project_summary_context = StrictCharField()


class SearchStartsEarly:
    """A list whose search (``?q=``) hands its question to the model before the request's API
    token is checked, when the token has a credit (``memory_app.memories.early``); an answered
    search grants the next one."""

    def initial(self, request, *args, **kwargs):
        early.start(request)  # the question to the model while the token and filters are checked
        super().initial(request, *args, **kwargs)  # type: ignore[misc]

    def list(self, request, *args, **kwargs):
        response = super().list(request, *args, **kwargs)  # type: ignore[misc]
        early.grant(request)
        return response


class MyMemoryListView(SearchStartsEarly, generics.ListAPIView):
    request: AuthenticatedRequest  # IsAuthenticated, the default permission
    serializer_class = MemoryOutput
    filter_backends = [ApiFilterBackend]
    filterset_class = MemoryFilter

    def get_queryset(self):
        if is_schema_generation(self):
            return Memory.objects.none()
        # The output reads no related row (``project_id``, ``superseded_by`` as its id).
        return selectors.user_memories(user=self.request.user).select_related(None).order_by("-created_at", "-id")

    @extend_schema(request=MemoryCreateInput, responses={201: MemoryOutput})
    def post(self, request: AuthenticatedRequest):
        memory = services.memory_create(
            actor=request.user, tier=Tier.USER, origin=Origin.API, **validated(MemoryCreateInput, request)
        )
        return Response(MemoryOutput(memory).data, status=status.HTTP_201_CREATED)


class MyMemoryDetailView(APIView):
    @extend_schema(responses=MemoryOutput)
    def get(self, request: AuthenticatedRequest, memory_id):
        return Response(MemoryOutput(selectors.user_memory_get(user=request.user, memory_id=memory_id)).data)

    @extend_schema(request=MemoryChangeInput, responses=MemoryOutput)
    def patch(self, request: AuthenticatedRequest, memory_id):
        memory = services.memory_change(
            actor=request.user, memory_id=memory_id, tier=Tier.USER, **validated(MemoryChangeInput, request)
        )
        return Response(MemoryOutput(memory).data)

    @extend_schema(responses={204: None})
    def delete(self, request: AuthenticatedRequest, memory_id):
        services.memory_forget(actor=request.user, memory_id=memory_id, tier=Tier.USER)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MyMemorySupersedeView(APIView):
    @extend_schema(request=MemorySupersedeInput, responses={201: MemoryOutput})
    def post(self, request: AuthenticatedRequest, memory_id):
        new = services.memory_supersede(
            actor=request.user, memory_id=memory_id, tier=Tier.USER, **validated(MemorySupersedeInput, request)
        )
        return Response(MemoryOutput(new).data, status=status.HTTP_201_CREATED)


class MyMemoryChainView(APIView):
    @extend_schema(responses=MemoryChainOutput)
    def get(self, request: AuthenticatedRequest, memory_id):
        memory = selectors.user_memory_get(user=request.user, memory_id=memory_id)
        return Response({"results": MemoryOutput(selectors.memory_chain(memory=memory), many=True).data})


class ProjectMemoryListView(SearchStartsEarly, generics.ListAPIView):
    request: AuthenticatedRequest  # IsAuthenticated, the default permission
    serializer_class = MemoryOutput
    filter_backends = [ApiFilterBackend]
    filterset_class = MemoryFilter

    def get_queryset(self):
        if is_schema_generation(self):
            return Memory.objects.none()
        memories = selectors.project_memories(user=self.request.user, project_id=self.kwargs["project_id"])
        return memories.select_related(None).order_by("-created_at", "-id")

    @extend_schema(request=MemoryCreateInput, responses={201: MemoryOutput})
    def post(self, request: AuthenticatedRequest, project_id):
        memory = services.memory_create(
            actor=request.user,
            tier=Tier.PROJECT,
            project_id=project_id,
            origin=Origin.API,
            **validated(MemoryCreateInput, request),
        )
        return Response(MemoryOutput(memory).data, status=status.HTTP_201_CREATED)


class ProjectMemoryDetailView(APIView):
    @extend_schema(responses=MemoryOutput)
    def get(self, request: AuthenticatedRequest, project_id, memory_id):
        memory = selectors.project_memory_get(user=request.user, project_id=project_id, memory_id=memory_id)
        return Response(MemoryOutput(memory).data)

    @extend_schema(request=MemoryChangeInput, responses=MemoryOutput)
    def patch(self, request: AuthenticatedRequest, project_id, memory_id):
        # Visibility first so a non-member cannot learn anything from the error.
        selectors.project_memory_get(user=request.user, project_id=project_id, memory_id=memory_id)
        memory = services.memory_change(
            actor=request.user,
            memory_id=memory_id,
            tier=Tier.PROJECT,
            project_id=project_id,
            **validated(MemoryChangeInput, request),
        )
        return Response(MemoryOutput(memory).data)

    @extend_schema(responses={204: None})
    def delete(self, request: AuthenticatedRequest, project_id, memory_id):
        # Visibility first so a non-member cannot learn anything from the error.
        selectors.project_memory_get(user=request.user, project_id=project_id, memory_id=memory_id)
        services.memory_forget(actor=request.user, memory_id=memory_id, tier=Tier.PROJECT, project_id=project_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ProjectMemorySupersedeView(APIView):
    @extend_schema(request=MemorySupersedeInput, responses={201: MemoryOutput})
    def post(self, request: AuthenticatedRequest, project_id, memory_id):
        selectors.project_memory_get(user=request.user, project_id=project_id, memory_id=memory_id)
        new = services.memory_supersede(
            actor=request.user,
            memory_id=memory_id,
            tier=Tier.PROJECT,
            project_id=project_id,
            **validated(MemorySupersedeInput, request),
        )
        return Response(MemoryOutput(new).data, status=status.HTTP_201_CREATED)


class ProjectMemoryChainView(APIView):
    @extend_schema(responses=MemoryChainOutput)
    def get(self, request: AuthenticatedRequest, project_id, memory_id):
        memory = selectors.project_memory_get(user=request.user, project_id=project_id, memory_id=memory_id)
        return Response({"results": MemoryOutput(selectors.memory_chain(memory=memory), many=True).data})


class IdentityContextView(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("project_id", str, required=False, pattern=r"^[A-Za-z0-9_-]{0,40}$")],
        responses=IdentityContextOutput,
    )
    def get(self, request: AuthenticatedRequest):
        project_id = request.query_params.get("project_id") or None
        if project_id is not None and not is_valid_id(project_id):
            raise ValidationError({"project_id": ["Not a project id."]})
        ctx = identity_context_build(user=request.user, project_id=project_id)
        return Response(
            {
                "profile": ProfileOutput(ctx.profile).data,
                "memories": {
                    "user": MemoryOutput(ctx.user_memories, many=True).data,
                    "project": MemoryOutput(ctx.project_memories, many=True).data,
                },
                "identity_context": ctx.identity_context,
                "project_summary_context": ctx.project_summary_context,
            }
        )


MEM = r"(?P<memory_id>[\w-]+)"
PRJ = r"(?P<project_id>[\w-]+)"

urlpatterns = [
    api_route(r"users/me/memories", MyMemoryListView.as_view(), "my-memories"),
    api_route(rf"users/me/memories/{MEM}", MyMemoryDetailView.as_view(), "my-memory-detail"),
    api_route(rf"users/me/memories/{MEM}/supersede", MyMemorySupersedeView.as_view(), "my-memory-supersede"),
    api_route(rf"users/me/memories/{MEM}/chain", MyMemoryChainView.as_view(), "my-memory-chain"),
    api_route(r"users/me/identity-context", IdentityContextView.as_view(), "identity-context"),
    api_route(rf"projects/{PRJ}/identity-memories", ProjectMemoryListView.as_view(), "project-memories"),
    api_route(rf"projects/{PRJ}/identity-memories/{MEM}", ProjectMemoryDetailView.as_view(), "project-memory-detail"),
    api_route(
        rf"projects/{PRJ}/identity-memories/{MEM}/supersede",
        ProjectMemorySupersedeView.as_view(),
        "project-memory-supersede",
    ),
    api_route(
        rf"projects/{PRJ}/identity-memories/{MEM}/chain", ProjectMemoryChainView.as_view(), "project-memory-chain"
    ),
]
