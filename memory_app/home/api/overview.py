"""The memory home's overview over REST: counts and the newest per source, switches, capacity."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from config.http import AuthenticatedRequest
from memory_app.home.overview import home_overview
from memory_app.home.sources import (
    SOURCE_NOTES,
)


class HomeSwitchOutput(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # a declared field, not Field.label: stubs miss the metaclass
    on = serializers.BooleanField()
    settings_path = serializers.CharField(source="api_path", help_text="Where the API changes it.")


class HomeSourceOutput(serializers.Serializer):
    source = serializers.CharField(source="ref.key")  # type: ignore[assignment]  # a declared field, not Field.source: stubs miss the metaclass
    kind = serializers.CharField(source="ref.kind")
    title = serializers.CharField()
    count = serializers.IntegerField(help_text="Active items (the notes file: its non-empty lines).")
    paused = serializers.IntegerField(help_text="Of count: paused ones (listed, used by no agent).")
    sentence = serializers.CharField(help_text="Which agents see it and when, with the switch states.")
    switches = serializers.SerializerMethodField()
    latest = serializers.SerializerMethodField()
    project = serializers.SerializerMethodField()
    can_write = serializers.BooleanField()
    notes_file = serializers.SerializerMethodField()

    def get_switches(self, source) -> list[str]:
        return [switch.name for switch in source.switches]

    def get_latest(self, source) -> list[dict]:
        return [{"id": m.pk, "kind": m.kind, "content": m.content, "created_at": m.created_at} for m in source.latest]

    def get_project(self, source) -> dict | None:
        if source.project is None:
            return None
        return {"id": source.project.pk, "name": source.project.name, "role": source.role, "members": source.members}

    def get_notes_file(self, source) -> dict | None:
        if source.ref.kind != SOURCE_NOTES:
            return None
        return {"exists": source.notes_exists, "bytes": source.notes_bytes, "error": source.notes_error or None}


class HomeCapacityOutput(serializers.Serializer):
    notes_bytes = serializers.IntegerField(help_text="The notes file's size.")
    notes_read_bytes = serializers.IntegerField(help_text="How much of it a run's context carries (24 KiB).")
    notes_max_bytes = serializers.IntegerField(help_text="The largest notes file (128 KiB).")
    memories = serializers.IntegerField(help_text="Rows of the home, every version counted.")
    export_limit = serializers.IntegerField(help_text="Rows one export holds.")
    in_new_chats = serializers.IntegerField(help_text="Newest items of 'About me' and of a project a new chat gets.")
    warnings = serializers.ListField(child=serializers.CharField(), help_text="Calm sentences near a limit.")


class HomeOverviewOutput(serializers.Serializer):
    total = serializers.IntegerField()
    capacity = HomeCapacityOutput(help_text="Room left: the notes file and the rows against their limits.")
    switches = HomeSwitchOutput(many=True)
    sources = HomeSourceOutput(many=True)
    projects_total = serializers.IntegerField()
    projects_shown = serializers.IntegerField()
    chats_total = serializers.IntegerField()
    chats_shown = serializers.IntegerField()


class HomeView(APIView):
    @extend_schema(responses=HomeOverviewOutput)
    def get(self, request: AuthenticatedRequest):
        overview = home_overview(user=request.user)
        data = HomeOverviewOutput(
            {
                "total": overview.total,
                "capacity": overview.capacity,
                "switches": list(overview.switches.values()),
                "sources": overview.sources,
                "projects_total": overview.projects_total,
                "projects_shown": overview.projects_shown,
                "chats_total": overview.chats_total,
                "chats_shown": overview.chats_shown,
            }
        ).data
        return Response(data)
