from rest_framework import serializers

from config.api import StrictCharField, StrictInputMixin
from identity_app.models import MAX_DESCRIPTION_CHARS, Membership, Profile, Project, Role


class ProfileOutput(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username")

    class Meta:
        model = Profile
        fields = ["username", "display_name", "timezone", "preferences", "updated_at"]


class ProfileInput(StrictInputMixin, serializers.Serializer):
    display_name = StrictCharField(max_length=150, allow_blank=True, required=False)
    timezone = StrictCharField(max_length=64, required=False)
    preferences = serializers.JSONField(required=False)

    def validate_preferences(self, value):
        if not isinstance(value, dict):
            raise serializers.ValidationError("preferences must be a JSON object.")
        return value


class ProjectOutput(serializers.ModelSerializer):
    role = serializers.SerializerMethodField()

    class Meta:
        model = Project
        fields = ["id", "name", "description", "created_at", "role"]

    def get_role(self, project) -> str | None:
        return getattr(project, "my_role", None)


class ProjectInput(StrictInputMixin, serializers.Serializer):
    name = StrictCharField(max_length=200)
    description = StrictCharField(max_length=MAX_DESCRIPTION_CHARS, allow_blank=True, required=False, default="")


class ProjectUpdateInput(StrictInputMixin, serializers.Serializer):
    name = StrictCharField(max_length=200, required=False)
    description = StrictCharField(max_length=MAX_DESCRIPTION_CHARS, allow_blank=True, required=False)


class MemberOutput(serializers.ModelSerializer):
    user_id = serializers.IntegerField(source="user.id")
    username = serializers.CharField(source="user.username")

    class Meta:
        model = Membership
        fields = ["user_id", "username", "role", "created_at"]


class MemberAddInput(StrictInputMixin, serializers.Serializer):
    username = StrictCharField(max_length=150)
    role = serializers.ChoiceField(choices=Role.choices, default=Role.MEMBER)


class MemberChangeInput(StrictInputMixin, serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.choices)
