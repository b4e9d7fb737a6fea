"""Forgetting over REST: a selection, everything of a source, and the undo of a forget-all."""

from django.urls import reverse
from drf_spectacular.utils import extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.inputs import (
    StrictCharField,
    StrictInputMixin,
    documented,
    validated,
)
from config.http import AuthenticatedRequest
from memory_app.home import services
from memory_app.home.api.items import source_schema
from memory_app.home.sources import (
    SOURCE_ALL,
    SOURCE_AUTO,
    SOURCE_NOTES,
    SOURCE_SHARED,
    SOURCE_USER,
)
from memory_app.scoped import services as scoped_services


class ForgetSelectedInput(StrictInputMixin, serializers.Serializer):
    ids = serializers.ListField(
        child=StrictCharField(max_length=40), allow_empty=False, max_length=services.MAX_SELECTED
    )


ForgottenOutput = inline_serializer(
    "HomeForgotten", {"forgotten": serializers.ListField(child=serializers.CharField())}
)


class ForgetSelectedView(APIView):
    @extend_schema(request=ForgetSelectedInput, responses=ForgottenOutput)
    def post(self, request: AuthenticatedRequest):
        ids = validated(ForgetSelectedInput, request)["ids"]
        return Response({"forgotten": services.home_forget_selected(actor=request.user, memory_ids=ids)})


class ForgetAllInput(StrictInputMixin, serializers.Serializer):
    source = documented(
        StrictCharField,
        source_schema(
            SOURCE_ALL,
            SOURCE_USER,
            SOURCE_NOTES,
            SOURCE_AUTO,
            SOURCE_SHARED,
        ),
        max_length=250,
        help_text="all, user, notes, auto, project:<id> (what you wrote there) or chat:<key>",
    )
    confirm = documented(
        StrictCharField,
        {"type": "string", "enum": [services.CONFIRM_WORD]},
        max_length=20,
        allow_blank=True,
        trim_whitespace=False,
        help_text=f"Must be {services.CONFIRM_WORD!r}.",
    )


class ForgetAllOutput(serializers.Serializer):
    source = serializers.CharField()  # type: ignore[assignment]  # a declared field, not Field.source: stubs miss the metaclass
    forgotten = serializers.ListField(child=serializers.CharField())
    candidates = serializers.IntegerField(help_text="Consolidation records of the chats deleted with them.")
    notes_deleted = serializers.BooleanField()
    remaining = serializers.IntegerField(help_text="Memories left for another call (more than one call's limit).")
    kept_read_only = serializers.IntegerField(
        help_text="Auto-extracted memories kept because you may no longer write in their project."
    )
    undo = serializers.SerializerMethodField(
        help_text="Forgetting one chat can be undone until `until` (POST to `url`; DELETE forgets it for good now); "
        "null: no undo (another source, MEMORY_FORGET_UNDO_MINUTES=0, or a chat too large to keep)."
    )

    @extend_schema_field(
        inline_serializer(
            "HomeForgetUndo",
            {
                "id": serializers.CharField(),
                "until": serializers.DateTimeField(),
                "url": serializers.CharField(),
                "items": serializers.IntegerField(),
                "pending_reviews": serializers.IntegerField(),
            },
            allow_null=True,
        )
    )
    def get_undo(self, report) -> dict | None:
        undo = report.undo
        if undo is None:
            return None
        return {
            "id": undo.pk,
            "until": undo.expires_at.isoformat(),
            "url": reverse("memory-home-forget-undo", kwargs={"undo_id": undo.pk}),
            "items": undo.item_count,
            "pending_reviews": undo.pending_count,
        }


class ForgetAllView(APIView):
    @extend_schema(request=ForgetAllInput, responses=ForgetAllOutput)
    def post(self, request: AuthenticatedRequest):
        data = validated(ForgetAllInput, request)
        report = services.home_forget_source(actor=request.user, source=data["source"], confirm=data["confirm"])
        return Response(ForgetAllOutput(report).data)


UndoOutput = inline_serializer(
    "HomeForgetUndone",
    {
        "chat_key": serializers.CharField(),
        "restored": serializers.ListField(child=serializers.CharField(), help_text="The memories back, same ids."),
        "candidates": serializers.IntegerField(help_text="The chat's consolidation records back (reviews too)."),
    },
)


class ForgetUndoView(APIView):
    @extend_schema(
        request=None,
        responses=UndoOutput,
        description="Undo forgetting a whole chat (forget-all with chat:<key>) within its time: its memories "
        "come back with the same ids, with their changes and the chat's records. 409 undo_expired after.",
    )
    def post(self, request: AuthenticatedRequest, undo_id):
        report = scoped_services.chat_forget_undo(actor=request.user, undo_id=undo_id)
        return Response({"chat_key": report.chat_key, "restored": report.restored, "candidates": report.candidates})

    @extend_schema(responses={204: None}, description="Forget it for good now: the undo is no longer possible.")
    def delete(self, request: AuthenticatedRequest, undo_id):
        scoped_services.chat_forget_undo_drop(actor=request.user, undo_id=undo_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
