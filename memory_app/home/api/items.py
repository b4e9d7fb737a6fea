"""The memory home's items over REST: one item as the API shows it (``HomeItemOutput``), the
list per source, one item with its provenance and reads, correcting it, and who read what."""

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.inputs import (
    StrictCharField,
    StrictInputMixin,
    validated,
)
from config.http import AuthenticatedRequest
from identity_app.session_keys import chat_key_pattern
from memory_app.home import services
from memory_app.home.items import home_items
from memory_app.home.provenance import AUTHORS, provenance_data
from memory_app.home.reads import item_last_read, read_data, read_views, source_reads
from memory_app.home.sources import (
    SOURCE_AUTO,
    SOURCE_NOTES,
    SOURCE_SHARED,
    SOURCE_USER,
    home_item_get,
    source_memories,
    source_parse,
)
from memory_app.memories.api import ExpiresAtField, MemoryChangeInput
from memory_app.memories.filters import EXPIRED, status_filter
from memory_app.memories.models import MAX_CONTENT_CHARS, Kind, Memory, Origin, Status
from memory_app.memories.selectors import memory_chain


def source_schema(*names: str) -> dict:
    """A source as ``source_parse`` takes it, for the schema: one of ``names``,
    ``project:<id>`` or ``chat:<key>``."""
    chat = chat_key_pattern()[1:-1]
    return {"type": "string", "pattern": rf"^(?:{'|'.join(names)}|project:[A-Za-z0-9_-]{{1,40}}|chat:{chat})$"}


ProvenanceOutput = inline_serializer(
    "HomeProvenance",
    {
        "sentence": serializers.CharField(help_text="Who or what wrote it, how, and its place in the chain."),
        "created_at": serializers.DateTimeField(),
        "author": serializers.ChoiceField(choices=AUTHORS),
        "author_name": serializers.CharField(),
        "thread": inline_serializer(
            "HomeProvenanceThread", {"id": serializers.CharField(), "title": serializers.CharField()}, allow_null=True
        ),
        "run_id": serializers.CharField(allow_null=True),
        "auto_memory_log_entry": serializers.DictField(allow_null=True),
        "chat_key": serializers.CharField(allow_null=True),
        "consolidation": serializers.DictField(allow_null=True),
        "scope_migration": serializers.DictField(allow_null=True),
        "imported": serializers.DictField(allow_null=True),
        "replaces": serializers.CharField(allow_null=True),
        "replaced_by": serializers.CharField(allow_null=True),
        "shared": inline_serializer(
            "HomeProvenanceShared",
            {
                "chat_key": serializers.CharField(help_text="The chat of yours it was learned in."),
                "approved_by": serializers.CharField(allow_null=True, help_text="null: shared without review."),
                "approved_at": serializers.DateTimeField(allow_null=True),
            },
            allow_null=True,
            help_text="A global item shared with everyone from one of your chats.",
        ),
        "pending_review": serializers.BooleanField(
            help_text="A chat item that waits for an operator's review before it is shared with everyone."
        ),
        "paused": serializers.BooleanField(help_text="Paused: no agent uses it until it is resumed."),
        "changes": inline_serializer(
            "HomeProvenanceChange",
            {
                "field": serializers.ChoiceField(choices=["paused", "expires_at"]),
                "old": serializers.JSONField(help_text="true/false for paused; an ISO 8601 time or null."),
                "new": serializers.JSONField(),
                "at": serializers.DateTimeField(),
                "by": serializers.ChoiceField(choices=AUTHORS),
                "by_name": serializers.CharField(),
            },
            many=True,
            help_text="Changes made in place (no new version), newest first, the latest 5.",
        ),
        "changes_total": serializers.IntegerField(help_text="How many changes in place there were in all."),
    },
)


class HomeItemOutput(serializers.Serializer):
    id = serializers.CharField()
    source = serializers.CharField(source="source_key", help_text="user, project:<id>, chat:<key> or shared")  # type: ignore[assignment]  # a declared field, not Field.source: stubs miss the metaclass
    source_title = serializers.CharField()
    tier = serializers.CharField(source="scope_type")
    project_id = serializers.CharField(allow_null=True)
    kind = serializers.CharField()
    content = serializers.CharField()
    status = serializers.CharField()
    origin = serializers.CharField()
    origin_label = serializers.CharField()
    superseded_by = serializers.CharField(source="superseded_by_id", allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True, help_text="When it stops being true; null: never.")
    expired = serializers.BooleanField(help_text="expires_at has passed: agents no longer see it.")
    paused = serializers.BooleanField(help_text="Paused: listed here, used by no agent until resumed.")
    can_change = serializers.BooleanField(help_text="Whether you may forget it (and correct it, see can_correct).")
    can_correct = serializers.BooleanField(
        help_text="Whether you may correct it: not an item shared with everyone, which you may only forget."
    )
    provenance = ProvenanceOutput


def item_data(memories: list[Memory], *, user) -> list[dict]:
    """Home items (``home_items``) in their JSON form."""
    out: list[dict] = []
    for memory in home_items(user=user, memories=memories):
        vars(memory)["provenance"] = provenance_data(vars(memory)["prov"])
        out.append(HomeItemOutput(memory).data)
    return out


STATUS_CHOICES = [*Status.values, EXPIRED, "all"]


class HomeItemListView(generics.GenericAPIView):
    serializer_class = HomeItemOutput

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "source",
                source_schema(SOURCE_USER, SOURCE_AUTO, SOURCE_SHARED),
                required=True,
                description="user, auto, project:<id> or chat:<key>",
            ),
            OpenApiParameter(
                "status",
                str,
                enum=STATUS_CHOICES,
                required=False,
                description="active (and not expired) by default; expired: those whose expires_at has passed",
            ),
        ],
        responses=HomeItemOutput(many=True),
    )
    def get(self, request: AuthenticatedRequest):
        source = source_parse(request.query_params.get("source", ""))
        if source.kind == SOURCE_NOTES:
            raise serializers.ValidationError(
                {"source": ["The notes file is read at /api/users/me/workspace/MEMORY.md."]}
            )
        wanted = request.query_params.get("status", Status.ACTIVE)
        if wanted not in STATUS_CHOICES:
            raise serializers.ValidationError({"status": ["Unknown status."]})
        qs = status_filter(source_memories(user=request.user, source=source).order_by("-created_at", "-id"), wanted)
        page = self.paginate_queryset(qs)
        assert page is not None  # the view has a pagination class
        return self.get_paginated_response(item_data(list(page), user=request.user))

    def get_queryset(self):
        return Memory.objects.none()  # the schema only; the list is read in get()


class ReadOutput(serializers.Serializer):
    at = serializers.DateTimeField()
    path = serializers.CharField(help_text="How the text went out: context_notes, context_identity, api_search…")
    principal = serializers.CharField(allow_null=True, help_text="The username of the identity that got it.")
    token_name = serializers.CharField(
        allow_null=True, help_text="The API token's name (your own tokens and services' only)."
    )
    run_id = serializers.CharField(allow_null=True)
    run_generation = serializers.IntegerField(allow_null=True, help_text="The lease generation of the run token.")
    item = serializers.CharField(help_text="The memory id, or the SHA-256 of the notes-file text shown.")
    details_hidden = serializers.BooleanField(
        help_text=(
            "A project memory read by another member's agent: principal, token_name and run are shown only to the "
            "memory's author, the project's owners and admins, and that member."
        )
    )


class HomeItemDetailOutput(HomeItemOutput):
    chain = serializers.ListField(child=serializers.DictField(), help_text="The correction chain, oldest first.")
    last_read = ReadOutput(allow_null=True, help_text="When an agent last got this item, how and by whom.")


class HomeItemView(APIView):
    @extend_schema(responses=HomeItemDetailOutput)
    def get(self, request: AuthenticatedRequest, memory_id):
        memory = home_item_get(user=request.user, memory_id=memory_id)
        data = item_data([memory], user=request.user)[0]
        data["chain"] = [
            {"id": m.pk, "kind": m.kind, "content": m.content, "status": m.status, "created_at": m.created_at}
            for m in memory_chain(memory=memory)
        ]
        last = item_last_read(user=request.user, memory=memory)
        data["last_read"] = read_data(last) if last is not None else None
        return Response(data)

    @extend_schema(
        request=MemoryChangeInput,
        responses=HomeItemOutput,
        description="Change the expiry or pause/resume the item in place: same id, no new version, the "
        "change recorded in its provenance (provenance.changes). The write rule is the one of correcting.",
    )
    def patch(self, request: AuthenticatedRequest, memory_id):
        memory = services.home_item_change(
            actor=request.user, memory_id=memory_id, **validated(MemoryChangeInput, request)
        )
        return Response(item_data([home_item_get(user=request.user, memory_id=memory.pk)], user=request.user)[0])

    @extend_schema(responses={204: None})
    def delete(self, request: AuthenticatedRequest, memory_id):
        services.home_item_forget(actor=request.user, memory_id=memory_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class HomeCorrectInput(StrictInputMixin, serializers.Serializer):
    content = StrictCharField(max_length=MAX_CONTENT_CHARS, trim_whitespace=True)
    kind = serializers.ChoiceField(choices=Kind.choices, required=False, help_text="Defaults to the current kind.")
    expires_at = ExpiresAtField(
        help_text="The new version's expiry (ISO 8601 with a time zone, in the future; null: none). "
        "Left out: the corrected item's."
    )


class HomeItemSupersedeView(APIView):
    @extend_schema(request=HomeCorrectInput, responses={201: HomeItemOutput})
    def post(self, request: AuthenticatedRequest, memory_id):
        new = services.home_item_correct(
            actor=request.user, memory_id=memory_id, origin=Origin.API, **validated(HomeCorrectInput, request)
        )
        new = home_item_get(user=request.user, memory_id=new.pk)
        return Response(item_data([new], user=request.user)[0], status=status.HTTP_201_CREATED)


class HomeReadsView(generics.GenericAPIView):
    serializer_class = ReadOutput

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "source",
                source_schema(SOURCE_USER, SOURCE_AUTO, SOURCE_SHARED, SOURCE_NOTES),
                required=True,
                description="user, notes, auto, shared, project:<id> or chat:<key>",
            ),
        ],
        responses=ReadOutput(many=True),
        description="Who read this source's items (or notes-file versions), newest first, kept "
        "MEMORY_READS_RETENTION_DAYS days.",
    )
    def get(self, request: AuthenticatedRequest):
        source = source_parse(request.query_params.get("source", ""))
        page = self.paginate_queryset(source_reads(user=request.user, source=source))
        assert page is not None  # the view has a pagination class
        views = read_views(user=request.user, reads=list(page))
        return self.get_paginated_response([read_data(view) for view in views])

    def get_queryset(self):
        return Memory.objects.none()  # the schema only; the list is read in get()
