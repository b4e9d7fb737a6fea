"""Export (JSON and readable Markdown) and import of everything the caller keeps, over REST."""

import zoneinfo

from django.conf import settings as django_settings
from django.http import HttpResponse
from django.utils import timezone
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.inputs import (
    NOT_ONLY_SPACE,
    JSONObjectField,
    StrictCharField,
    StrictInputMixin,
    StrictIntegerField,
    documented,
    validated,
)
from config.http import AuthenticatedRequest
from memory_app.automemory.models import AUTO_MEMORY_LIMITS, MODEL_NAME_MAX
from memory_app.automemory.services import BOOL_FIELDS, MODEL_FIELDS, THRESHOLD_FIELDS
from memory_app.home import services
from memory_app.home.export import EXPORT_FORMAT, EXPORT_ITEM_KEYS, EXPORT_READABLE_VERSIONS, home_export
from memory_app.home.markdown import export_markdown
from memory_app.memories.models import IDENTITY_KINDS, MAX_CONTENT_CHARS, Origin, Status
from memory_app.notes.workspace import WORKSPACE_FILES


class ExportView(APIView):
    @extend_schema(
        responses={200: inline_serializer("MemoryExport", {"format": serializers.CharField()})},
        description="All of your memory home as versioned JSON (docs/home.md); import it with POST /api/users/me/import.",
    )
    def get(self, request: AuthenticatedRequest):
        return Response(home_export(user=request.user, now=timezone.now()))


class ExportMarkdownView(APIView):
    @extend_schema(responses={(200, "text/markdown"): str})
    def get(self, request: AuthenticatedRequest):
        data = home_export(user=request.user, now=timezone.now())
        return HttpResponse(export_markdown(data), content_type="text/markdown; charset=utf-8")


# What services.home_import checks in an export's memories, for the schema.
IMPORT_MEMORIES_SCHEMA = {
    "type": "object",
    "properties": {
        "user": {
            "type": "array",
            "maxItems": services.MAX_IMPORT_ITEMS,
            "items": {
                "type": "object",
                "properties": {
                    **{key: {} for key in EXPORT_ITEM_KEYS},
                    **{key: {"type": "string", "nullable": True} for key in services.IMPORTED_KEYS},
                    "kind": {"type": "string", "enum": sorted(IDENTITY_KINDS)},
                    "content": {"type": "string", "maxLength": MAX_CONTENT_CHARS, "pattern": NOT_ONLY_SPACE},
                    "status": {"type": "string", "enum": Status.values},
                    "paused": {"type": "boolean"},
                    "metadata": {"type": "object", "additionalProperties": {}},
                },
                "required": ["kind", "content"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["user"],
    "additionalProperties": {},
}


# What services.home_import checks in the other parts of an export, for the schema: the notes
# files by name (a text; null or an object is left alone), the settings the settings pages
# take, the profile fields (others, such as the username, are context and ignored).
IMPORT_NOTES_SCHEMA = {
    "type": "object",
    "properties": {
        name: {"anyOf": [{"type": "string"}, {"type": "object", "additionalProperties": {}}], "nullable": True}
        for name in WORKSPACE_FILES
    },
    "additionalProperties": False,
}
IMPORT_SETTINGS_SCHEMA = {
    "type": "object",
    "properties": {
        "enable_memory": {"type": "boolean"},
        "auto_memory": {
            "type": "object",
            "nullable": True,
            "properties": {
                **{name: {"type": "boolean"} for name in BOOL_FIELDS},
                **{name: {"type": "string", "maxLength": MODEL_NAME_MAX} for name in MODEL_FIELDS},
                **{
                    name: {"type": "integer", "minimum": 0, "maximum": AUTO_MEMORY_LIMITS[name]}
                    for name in THRESHOLD_FIELDS
                },
            },
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
}
IMPORT_USER_SCHEMA = {
    "type": "object",
    "properties": {
        "display_name": {"type": "string", "maxLength": 150},
        "timezone": {"type": "string", "enum": sorted(zoneinfo.available_timezones())},
        "language": {"type": "string", "enum": ["", *(code for code, _name in django_settings.LANGUAGES)]},
        "preferences": {"type": "object", "additionalProperties": {}},
    },
    "additionalProperties": {},
}


class ImportInput(StrictInputMixin, serializers.Serializer):
    format = documented(StrictCharField, {"type": "string", "enum": [EXPORT_FORMAT]}, max_length=64)
    version = documented(StrictIntegerField, {"type": "integer", "enum": list(EXPORT_READABLE_VERSIONS)})
    exported_at = StrictCharField(max_length=64, required=False)
    user = documented(JSONObjectField, IMPORT_USER_SCHEMA, required=False)
    settings = documented(JSONObjectField, IMPORT_SETTINGS_SCHEMA, required=False)
    notes_files = documented(JSONObjectField, IMPORT_NOTES_SCHEMA, required=False)
    memories = documented(
        JSONObjectField,
        IMPORT_MEMORIES_SCHEMA,
        help_text="Only memories.user is imported; a file with memories.global is refused (400 global_not_allowed).",
    )
    auto_memory_log = serializers.ListField(required=False)
    reads = JSONObjectField(required=False, help_text="Who read what: part of an export, ignored by import.")
    truncated = serializers.BooleanField(required=False)


class ImportNotesFileOutput(serializers.Serializer):
    name = serializers.CharField()
    result = serializers.ChoiceField(
        choices=[services.NOTES_WRITTEN, services.NOTES_IDENTICAL, services.NOTES_CONFLICT]
    )
    message = serializers.CharField(required=False)


class ImportSettingOutput(serializers.Serializer):
    field = serializers.CharField(help_text="settings.enable_memory, settings.auto_memory.<name> or user.<name>")
    result = serializers.ChoiceField(choices=[services.APPLIED, services.UNCHANGED])


class ImportOutput(serializers.Serializer):
    created = serializers.ListField(child=serializers.CharField())
    duplicates = serializers.IntegerField()
    not_active = serializers.IntegerField()
    redacted = serializers.IntegerField(help_text="Items whose text held a secret, removed before it was stored.")
    results = serializers.ListField(child=serializers.DictField())
    notes_files = ImportNotesFileOutput(many=True)
    settings = ImportSettingOutput(many=True)
    conflicts = serializers.ListField(child=serializers.CharField(), help_text="One sentence per conflict.")


class ImportView(APIView):
    @extend_schema(
        request=ImportInput,
        responses=ImportOutput,
        description=(
            "Import an export (version 1 or 2): its user memories (at most 1000, the same limits as POST "
            "/api/users/me/memories; items whose text is already an active memory of yours are skipped), "
            "its notes files (a file holding other text is reported in conflicts, never overwritten), "
            "and the profile fields and settings it holds."
        ),
    )
    def post(self, request: AuthenticatedRequest):
        data = validated(ImportInput, request)
        report = services.home_import(actor=request.user, data=dict(data), origin=Origin.API)
        return Response(ImportOutput(report).data)
