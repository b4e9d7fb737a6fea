import zoneinfo
from typing import Any

from django.conf import settings
from django.utils import timezone
from rest_framework import serializers

from config.api.inputs import StrictCharField, StrictInputMixin, StrictIntegerField, documented
from identity_app.models import MAX_DESCRIPTION_CHARS, ApiToken, Invitation, Membership, Profile, Project, Role
from identity_app.services import MAX_TOKEN_LIMIT_ENTRIES


class ProfileOutput(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username")

    class Meta:
        model = Profile
        fields = ["username", "display_name", "timezone", "language", "preferences", "updated_at"]


class ProfileInput(StrictInputMixin, serializers.Serializer):
    display_name = StrictCharField(max_length=150, allow_blank=True, required=False)
    timezone = documented(
        StrictCharField, {"type": "string", "enum": sorted(zoneinfo.available_timezones())}, required=False
    )
    language = documented(
        StrictCharField,
        {"type": "string", "enum": ["", *(code for code, _name in settings.LANGUAGES)]},
        required=False,
        allow_blank=True,
    )
    preferences = documented(serializers.JSONField, {"type": "object", "additionalProperties": {}}, required=False)

    def validate_preferences(self, value: object) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise serializers.ValidationError("preferences must be a JSON object.")
        return value


class ProjectOutput(serializers.ModelSerializer):
    role = serializers.SerializerMethodField()

    class Meta:
        model = Project
        fields = ["id", "name", "description", "created_at", "role"]

    def get_role(self, project: Project) -> str | None:
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


class MemberInvitedOutput(serializers.Serializer):
    """The same answer whether or not the username exists (or is already a member)."""

    status = serializers.CharField()
    message = serializers.CharField()


class ProjectInvitationOutput(serializers.ModelSerializer):
    """A project's invitation as its managers see it; nothing tells whether the account exists."""

    invited_by = serializers.CharField(source="invited_by.username", allow_null=True, default=None)

    class Meta:
        model = Invitation
        fields = ["id", "username", "role", "status", "invited_by", "created_at", "responded_at"]


class MyInvitationOutput(serializers.ModelSerializer):
    project_id = serializers.CharField()
    project_name = serializers.CharField(source="project.name")
    invited_by = serializers.CharField(source="invited_by.username", allow_null=True, default=None)

    class Meta:
        model = Invitation
        fields = ["id", "project_id", "project_name", "role", "invited_by", "created_at"]


class InvitationAcceptedOutput(serializers.ModelSerializer):
    project_id = serializers.CharField()
    project_name = serializers.CharField(source="project.name")

    class Meta:
        model = Membership
        fields = ["project_id", "project_name", "role", "created_at"]


class TokenOutput(serializers.ModelSerializer):
    """A token without its key. ``only_users`` are usernames (from ``context["usernames"]``),
    ``only_projects`` project ids; ``null`` means no limit."""

    state = serializers.SerializerMethodField()
    only_users = serializers.SerializerMethodField()
    only_projects = serializers.ListField(source="only_project_ids", child=serializers.CharField(), allow_null=True)

    class Meta:
        model = ApiToken
        fields = [
            "id",
            "name",
            "prefix",
            "state",
            "created_at",
            "expires_at",
            "last_used_at",
            "revoked_at",
            "only_users",
            "only_projects",
        ]

    def get_state(self, token: ApiToken) -> str:
        return token.state(timezone.now())

    def get_only_users(self, token: ApiToken) -> list[str] | None:
        if token.only_user_ids is None:
            return None
        names = self.context.get("usernames", {})
        return [names.get(user_id, f"#{user_id}") for user_id in token.only_user_ids]


class TokenIssuedOutput(TokenOutput):
    """A new token with its key: the only time the key is ever shown."""

    key = serializers.SerializerMethodField()

    class Meta(TokenOutput.Meta):
        fields = [*TokenOutput.Meta.fields, "key"]

    def get_key(self, token: ApiToken) -> str:
        key: str = self.context["key"]
        return key


class TokenCreateInput(StrictInputMixin, serializers.Serializer):
    name = StrictCharField(max_length=100, allow_blank=True, required=False, default="")
    expires_in_days = StrictIntegerField(min_value=1, max_value=settings.API_TOKEN_MAX_DAYS, required=False)
    only_users = serializers.ListField(
        child=StrictCharField(max_length=150), allow_empty=False, max_length=MAX_TOKEN_LIMIT_ENTRIES, required=False
    )
    only_projects = serializers.ListField(
        child=StrictCharField(max_length=40), allow_empty=False, max_length=MAX_TOKEN_LIMIT_ENTRIES, required=False
    )
