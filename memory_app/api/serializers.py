from rest_framework import serializers

from config.api import StrictCharField, StrictInputMixin
from memory_app.models import Kind, Memory
from memory_app.models.memory import MAX_CONTENT_CHARS


class MemoryOutput(serializers.ModelSerializer):
    class Meta:
        model = Memory
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
        ]


class JSONObjectField(serializers.JSONField):
    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not isinstance(value, dict):
            raise serializers.ValidationError("Must be a JSON object.")
        return value


class MemoryCreateInput(StrictInputMixin, serializers.Serializer):
    kind = serializers.ChoiceField(choices=Kind.choices)
    content = StrictCharField(max_length=MAX_CONTENT_CHARS, trim_whitespace=True)
    metadata = JSONObjectField(required=False, default=dict)
    evidence = JSONObjectField(required=False, default=dict)
    source_thread_id = StrictCharField(max_length=64, required=False, allow_blank=True, default="")


class MemorySupersedeInput(StrictInputMixin, serializers.Serializer):
    content = StrictCharField(max_length=MAX_CONTENT_CHARS, trim_whitespace=True)
    kind = serializers.ChoiceField(choices=Kind.choices, required=False)
    metadata = JSONObjectField(required=False)
    evidence = JSONObjectField(required=False)
    source_thread_id = StrictCharField(max_length=64, required=False, allow_blank=True)


class IdentityContextOutput(serializers.Serializer):
    profile = serializers.DictField()
    memories = serializers.DictField(child=MemoryOutput(many=True))
    identity_context = StrictCharField()
    project_summary_context = StrictCharField()
