"""Auto-memory API (docs/auto-memory.md): settings, per-run flags, a manual round, the log."""

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import generics, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.inputs import StrictBooleanField, StrictCharField, StrictInputMixin, StrictIntegerField
from config.api.routes import api_route
from config.api.schema import is_schema_generation
from config.http import AuthenticatedRequest
from memory_app.automemory import selectors, services, switches
from memory_app.automemory.models import (
    AUTO_MEMORY_LIMITS,
    MODEL_NAME_MAX,
    AutoMemoryLogEntry,
    AutoMemoryOutcome,
    AutoMemorySettings,
)
from memory_app.automemory.worker.rounds import auto_memory_round_request
from memory_app.ops.api import JobOutput, job_accepted
from memory_app.runs.models import AgentRun


class AutoMemorySettingsInput(StrictInputMixin, serializers.Serializer):
    generate = StrictBooleanField(required=False)
    use = StrictBooleanField(required=False)
    extract_model = StrictCharField(required=False, allow_blank=True, max_length=MODEL_NAME_MAX)
    consolidation_model = StrictCharField(required=False, allow_blank=True, max_length=MODEL_NAME_MAX)
    min_idle_minutes = StrictIntegerField(required=False, min_value=0, max_value=AUTO_MEMORY_LIMITS["min_idle_minutes"])
    min_duration_seconds = StrictIntegerField(
        required=False, min_value=0, max_value=AUTO_MEMORY_LIMITS["min_duration_seconds"]
    )
    min_length_chars = StrictIntegerField(required=False, min_value=0, max_value=AUTO_MEMORY_LIMITS["min_length_chars"])
    min_quota_remaining_pct = StrictIntegerField(
        required=False, min_value=0, max_value=AUTO_MEMORY_LIMITS["min_quota_remaining_pct"]
    )
    redact_contact_info = StrictBooleanField(required=False)


class AutoMemorySettingsOutput(serializers.ModelSerializer):
    class Meta:
        model = AutoMemorySettings
        fields = list(services.SETTINGS_FIELDS)


class AutoMemorySettingsView(APIView):
    @extend_schema(responses=AutoMemorySettingsOutput)
    def get(self, request: AuthenticatedRequest):
        return Response(AutoMemorySettingsOutput(selectors.auto_memory_settings_get(user=request.user)).data)

    @extend_schema(request=AutoMemorySettingsInput, responses=AutoMemorySettingsOutput)
    def put(self, request: AuthenticatedRequest):
        data = AutoMemorySettingsInput(data=request.data)
        data.is_valid(raise_exception=True)
        row = services.auto_memory_settings_update(user=request.user, changes=dict(data.validated_data))
        return Response(AutoMemorySettingsOutput(row).data)


class MemorySwitchesInput(StrictInputMixin, serializers.Serializer):
    enable_memory = StrictBooleanField(required=False)
    use = StrictBooleanField(required=False)
    generate = StrictBooleanField(required=False)


class MemorySwitchesOutput(serializers.Serializer):
    enable_memory = serializers.BooleanField()
    use = serializers.BooleanField()
    generate = serializers.BooleanField()


class MemorySwitchesView(APIView):
    """The three memory switches together (the settings panel's API): ``enable_memory`` (the
    notes file and memory tools for the main agent), auto-memory ``use`` and ``generate``."""

    @extend_schema(responses=MemorySwitchesOutput)
    def get(self, request: AuthenticatedRequest):
        return Response(switches.memory_switches_get(user=request.user).as_dict())

    @extend_schema(request=MemorySwitchesInput, responses=MemorySwitchesOutput)
    def put(self, request: AuthenticatedRequest):
        data = MemorySwitchesInput(data=request.data)
        data.is_valid(raise_exception=True)
        state = switches.memory_switches_update(user=request.user, changes=dict(data.validated_data))
        return Response(state.as_dict())


class NullableStrictBooleanField(StrictBooleanField):
    def __init__(self, **kwargs):
        super().__init__(allow_null=True, **kwargs)


class RunFlagsInput(StrictInputMixin, serializers.Serializer):
    generate = NullableStrictBooleanField(required=False)
    use = NullableStrictBooleanField(required=False)


def run_flags_data(run: AgentRun) -> dict:
    effective = selectors.effective_flags(run=run)
    return {
        "id": run.pk,
        "generate": run.auto_memory_generate,
        "use": run.auto_memory_use,
        "effective": {"generate": effective.generate, "use": effective.use},
        "processed_at": run.auto_memory_processed_at,
    }


RunFlagsOutput = inline_serializer(
    "RunAutoMemoryFlags",
    {
        "id": serializers.CharField(),
        "generate": serializers.BooleanField(allow_null=True),
        "use": serializers.BooleanField(allow_null=True),
        "effective": inline_serializer(
            "EffectiveAutoMemoryFlags", {"generate": serializers.BooleanField(), "use": serializers.BooleanField()}
        ),
        "processed_at": serializers.DateTimeField(allow_null=True),
    },
)


class RunFlagsView(APIView):
    @extend_schema(request=RunFlagsInput, responses=RunFlagsOutput)
    def post(self, request: AuthenticatedRequest, run_id):
        data = RunFlagsInput(data=request.data)
        data.is_valid(raise_exception=True)
        run = services.run_auto_memory_flags_set(actor=request.user, run_id=run_id, **data.validated_data)
        return Response(run_flags_data(run))


class AutoMemoryRunView(APIView):
    @extend_schema(
        request=None,
        responses={202: JobOutput},
        description=(
            "Queue one bounded extraction round over the caller's runs; poll `status_url`. When done, "
            '`result` is `{"processed": [...], "stopped": "" | "time_budget", "left": N}`.'
        ),
    )
    def post(self, request: AuthenticatedRequest):
        return job_accepted(auto_memory_round_request(user=request.user))


class AutoMemoryLogOutput(serializers.ModelSerializer):
    run_id = serializers.CharField(source="run_ref")
    project_id = serializers.CharField(source="project_id_ref")

    class Meta:
        model = AutoMemoryLogEntry
        fields = [
            "id",
            "run_id",
            "project_id",
            "outcome",
            "gate",
            "reason",
            "details",
            "memory_id",
            "superseded_memory_id",
            "content",
            "error_class",
            "created_at",
        ]


class AutoMemoryLogView(generics.ListAPIView):
    request: AuthenticatedRequest  # IsAuthenticated, the default permission
    serializer_class = AutoMemoryLogOutput

    @extend_schema(parameters=[OpenApiParameter("outcome", str, enum=AutoMemoryOutcome.values, required=False)])
    def get(self, request: Request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        if is_schema_generation(self):
            return AutoMemoryLogEntry.objects.none()
        outcome = self.request.query_params.get("outcome") or None
        if outcome is not None and outcome not in AutoMemoryOutcome.values:
            raise serializers.ValidationError({"outcome": ["Unknown outcome."]})
        return selectors.auto_memory_log_for(user=self.request.user, outcome=outcome)


urlpatterns = [
    api_route(r"users/me/auto-memory-settings", AutoMemorySettingsView.as_view(), "auto-memory-settings"),
    api_route(r"users/me/memory-switches", MemorySwitchesView.as_view(), "memory-switches"),
    api_route(r"tasks/(?P<run_id>[\w-]+)/auto-memory-flags", RunFlagsView.as_view(), "run-auto-memory-flags"),
    api_route(r"users/me/auto-memory/run", AutoMemoryRunView.as_view(), "auto-memory-run"),
    api_route(r"users/me/auto-memory-log", AutoMemoryLogView.as_view(), "auto-memory-log"),
]
