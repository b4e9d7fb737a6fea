"""The notes file's REST API: the caller's workspace files, their change history (with undo) and
the memory switch (``/api/users/me/...``)."""

from typing import Any

import django_filters
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_field, inline_serializer
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.inputs import StrictBooleanField, StrictCharField, StrictInputMixin, documented, enum_schema, validated
from config.api.pagination import ListPagination
from config.api.routes import api_route
from config.api.schema import is_schema_generation
from config.http import AuthenticatedRequest
from identity_app.models import ApiToken
from memory_app.notes import history, selectors, services
from memory_app.notes.models import WorkspaceChange, WorkspaceChangeAction, WorkspaceChangeSource
from memory_app.notes.workspace import WORKSPACE_FILES, WorkspaceFile


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


def _base_sha256(request: Request, body_value: str | None) -> str | None:
    """The version an edit is based on: ``base_sha256`` in the body, else ``If-Match``."""
    if body_value is not None:
        return body_value
    header = request.headers.get("If-Match")
    if header is None:
        return None
    return header.strip().removeprefix("W/").strip('"')


class SettingsSerializer(StrictInputMixin, serializers.Serializer):
    enable_memory = StrictBooleanField()


# --- workspace and settings -----------------------------------------------------------------
class WorkspaceFileView(APIView):
    """``sha256``/``ETag`` name the version read; sending it back as ``base_sha256`` (or
    ``If-Match``) makes PUT/DELETE refuse with 409 when the file changed meanwhile."""

    @staticmethod
    def _file_response(file: WorkspaceFile) -> Response:
        return Response(WorkspaceFileOutput(file).data, headers={"ETag": f'"{file.sha256}"'})

    @extend_schema(responses=WorkspaceFileOutput)
    def get(self, request: AuthenticatedRequest, name: str) -> Response:
        return self._file_response(selectors.workspace_file_get(user=request.user, name=name))

    @extend_schema(request=WorkspaceFileInput, responses=WorkspaceFileOutput)
    def put(self, request: AuthenticatedRequest, name: str) -> Response:
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
    def delete(self, request: AuthenticatedRequest, name: str) -> Response:
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

    def _view(self, change: WorkspaceChange) -> history.DiffView:
        limits = self.context.get("diff_limits", {})
        cache = self.context.setdefault("diff_views", {})
        if change.pk not in cache:
            cache[change.pk] = history.diff_view(change, **limits)
        view: history.DiffView = cache[change.pk]
        return view

    @extend_schema_field(DiffLineOutput(many=True))
    def get_diff(self, change: WorkspaceChange) -> list[Any]:
        # many=True builds a ListSerializer, whose data is a list; the stubs type it as the Serializer's
        return DiffLineOutput(self._view(change).lines, many=True).data  # type: ignore[return-value]

    def get_diff_truncated(self, change: WorkspaceChange) -> bool:
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


def _api_author(request: AuthenticatedRequest) -> history.Author:
    token = request.auth
    client = f"API token {token.prefix}… {token.name}".strip() if isinstance(token, ApiToken) else ""
    return history.Author(WorkspaceChangeSource.API, actor=request.user, client=client)


class WorkspaceHistoryView(generics.ListAPIView):
    """Changes of the caller's workspace files, newest first, each with its line diff (at most
    80 lines and 16 KiB here; the change itself has up to 2,000 lines and 256 KiB). ``DELETE``
    forgets the history (of one file with ``name``), leaving the files as they are."""

    request: AuthenticatedRequest  # IsAuthenticated, the default permission
    serializer_class = WorkspaceChangeOutput
    pagination_class = ListPagination
    filterset_class = WorkspaceChangeFilter

    def get_queryset(self) -> QuerySet[WorkspaceChange]:
        if is_schema_generation(self):
            return WorkspaceChange.objects.none()
        return selectors.workspace_changes_visible(user=self.request.user)

    @extend_schema(
        request=WorkspaceHistoryClearInput,
        responses={200: inline_serializer("WorkspaceHistoryCleared", {"forgotten": serializers.IntegerField()})},
    )
    def delete(self, request: AuthenticatedRequest) -> Response:
        data = validated(WorkspaceHistoryClearInput, request)
        return Response({"forgotten": services.workspace_history_clear(user=request.user, name=data["name"])})


class WorkspaceChangeDetailView(APIView):
    @extend_schema(responses=WorkspaceChangeOutput)
    def get(self, request: AuthenticatedRequest, change_id: str) -> Response:
        change = selectors.workspace_change_get(user=request.user, change_id=change_id)
        limits = {"max_lines": history.DETAIL_MAX_LINES, "max_bytes": history.DETAIL_MAX_BYTES}
        return Response(WorkspaceChangeOutput(change, context={"diff_limits": limits}).data)


class WorkspaceChangeUndoView(APIView):
    """Reverse one change, keeping the changes made after it. ``base_sha256`` (or ``If-Match``):
    the version of the file the caller saw; a file changed since is ``409 conflict``. A later
    change that touched the same lines, or a file changed outside the service, is
    ``409 undo_conflict``. Either way nothing changes."""

    @extend_schema(request=WorkspaceUndoInput, responses={200: WorkspaceUndoOutput})
    def post(self, request: AuthenticatedRequest, change_id: str) -> Response:
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
    def get(self, request: AuthenticatedRequest) -> Response:
        return Response({"enable_memory": selectors.user_settings_get(user=request.user).enable_memory})

    @extend_schema(request=SettingsSerializer, responses=SettingsSerializer)
    def put(self, request: AuthenticatedRequest) -> Response:
        row = services.user_settings_update(user=request.user, **validated(SettingsSerializer, request))
        return Response({"enable_memory": row.enable_memory})


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
]
