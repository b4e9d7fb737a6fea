"""The memory home over REST (docs/home.md): the overview, one search, every item with its
provenance, correcting and forgetting (one, a selection, everything of a source), export and
import. Everything is about the caller (``/users/me/…``)."""

import zoneinfo

from django.conf import settings as django_settings
from django.http import HttpResponse
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field, inline_serializer
from rest_framework import generics, serializers, status
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
from config.api.routes import api_route
from identity_app.session_keys import chat_key_pattern
from memory_app.automemory.models import AUTO_MEMORY_LIMITS, MODEL_NAME_MAX
from memory_app.automemory.services import BOOL_FIELDS, MODEL_FIELDS, THRESHOLD_FIELDS
from memory_app.home import services
from memory_app.home.export import EXPORT_FORMAT, EXPORT_ITEM_KEYS, EXPORT_READABLE_VERSIONS, home_export
from memory_app.home.items import home_items
from memory_app.home.markdown import export_markdown
from memory_app.home.overview import home_overview
from memory_app.home.provenance import AUTHORS, provenance_data
from memory_app.home.reads import item_last_read, read_data, read_views, source_reads
from memory_app.home.search import MAX_QUERY_CHARS, SEARCH_LIMIT, NotesHit, home_search
from memory_app.home.sources import (
    SOURCE_ALL,
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
from memory_app.memories.models import IDENTITY_KINDS, MAX_CONTENT_CHARS, Kind, Memory, Origin, Status
from memory_app.memories.selectors import memory_chain
from memory_app.notes.workspace import WORKSPACE_FILES
from memory_app.scoped import services as scoped_services


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
    def get(self, request):
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


class HomeSearchHitOutput(HomeItemOutput):
    score = serializers.FloatField()


class HomeSearchOutput(serializers.Serializer):
    query = serializers.CharField()
    terms = serializers.ListField(child=serializers.CharField(), help_text="The query's search terms.")
    results = HomeSearchHitOutput(many=True)
    notes = inline_serializer(
        "HomeNotesHit",
        {"line": serializers.IntegerField(), "text": serializers.CharField(), "score": serializers.FloatField()},
        many=True,
    )
    ranked = inline_serializer(
        "HomeRankedHit",
        {
            "type": serializers.ChoiceField(choices=["memory", "notes"]),
            "id": serializers.CharField(required=False, help_text="type memory: the item's id (in results)"),
            "line": serializers.IntegerField(required=False, help_text="type notes: the line (in notes)"),
            "score": serializers.FloatField(),
        },
        many=True,
        help_text="Items and notes-file lines in one list, best first.",
    )
    more = serializers.BooleanField(help_text="A higher limit would return more.")
    warnings = serializers.ListField(child=serializers.CharField())


class HomeSearchView(APIView):
    throttle_scopes = ("search",)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "q",
                {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS, "pattern": NOT_ONLY_SPACE},
                required=True,
                description="Words or a question (at most 200 characters).",
            ),
            OpenApiParameter("limit", {"type": "integer", "minimum": 1, "maximum": SEARCH_LIMIT}, required=False),
            OpenApiParameter(
                "include_paused",
                {"type": "boolean"},
                required=False,
                description="true: paused memories too (as the page shows them, marked paused). Left out by "
                "default: a program searching for an agent gets what agents may use.",
            ),
        ],
        responses=HomeSearchOutput,
    )
    def get(self, request):
        query = request.query_params.get("q", "")
        if not query.strip() or len(query) > MAX_QUERY_CHARS:
            raise serializers.ValidationError({"q": [f"Give 1 to {MAX_QUERY_CHARS} characters."]})
        limit = request.query_params.get("limit", str(SEARCH_LIMIT))
        if not limit.isascii() or not limit.isdigit() or not 1 <= int(limit) <= SEARCH_LIMIT:
            raise serializers.ValidationError({"limit": [f"Must be an integer from 1 to {SEARCH_LIMIT}."]})
        include_paused = request.query_params.get("include_paused", "false")
        if include_paused not in ("true", "false"):
            raise serializers.ValidationError({"include_paused": ["Must be true or false."]})
        found = home_search(user=request.user, query=query, limit=int(limit), for_agent=include_paused == "false")
        items = item_data([hit.memory for hit in found.hits], user=request.user)
        for item, hit in zip(items, found.hits, strict=True):
            item["score"] = round(float(hit.score), 6)
        return Response(
            {
                "query": found.query,
                "terms": found.terms,
                "results": items,
                "notes": [{"line": hit.line, "text": hit.text, "score": round(hit.score, 6)} for hit in found.notes],
                "ranked": [
                    {"type": "notes", "line": hit.line, "score": round(hit.score, 6)}
                    if isinstance(hit, NotesHit)
                    else {"type": "memory", "id": hit.memory.pk, "score": round(float(hit.score), 6)}
                    for hit in found.ranked
                ],
                "more": found.more,
                "warnings": found.warnings,
            }
        )


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
    def get(self, request):
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
    def get(self, request, memory_id):
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
    def patch(self, request, memory_id):
        memory = services.home_item_change(
            actor=request.user, memory_id=memory_id, **validated(MemoryChangeInput, request)
        )
        return Response(item_data([home_item_get(user=request.user, memory_id=memory.pk)], user=request.user)[0])

    @extend_schema(responses={204: None})
    def delete(self, request, memory_id):
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
    def post(self, request, memory_id):
        new = services.home_item_correct(
            actor=request.user, memory_id=memory_id, origin=Origin.API, **validated(HomeCorrectInput, request)
        )
        new = home_item_get(user=request.user, memory_id=new.pk)
        return Response(item_data([new], user=request.user)[0], status=status.HTTP_201_CREATED)


class ForgetSelectedInput(StrictInputMixin, serializers.Serializer):
    ids = serializers.ListField(
        child=StrictCharField(max_length=40), allow_empty=False, max_length=services.MAX_SELECTED
    )


ForgottenOutput = inline_serializer(
    "HomeForgotten", {"forgotten": serializers.ListField(child=serializers.CharField())}
)


class ForgetSelectedView(APIView):
    @extend_schema(request=ForgetSelectedInput, responses=ForgottenOutput)
    def post(self, request):
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
    def post(self, request):
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
    def post(self, request, undo_id):
        report = scoped_services.chat_forget_undo(actor=request.user, undo_id=undo_id)
        return Response({"chat_key": report.chat_key, "restored": report.restored, "candidates": report.candidates})

    @extend_schema(responses={204: None}, description="Forget it for good now: the undo is no longer possible.")
    def delete(self, request, undo_id):
        scoped_services.chat_forget_undo_drop(actor=request.user, undo_id=undo_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ExportView(APIView):
    @extend_schema(
        responses={200: inline_serializer("MemoryExport", {"format": serializers.CharField()})},
        description="All of your memory home as versioned JSON (docs/home.md); import it with POST /api/users/me/import.",
    )
    def get(self, request):
        return Response(home_export(user=request.user, now=timezone.now()))


class ExportMarkdownView(APIView):
    @extend_schema(responses={(200, "text/markdown"): str})
    def get(self, request):
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
    def post(self, request):
        data = validated(ImportInput, request)
        report = services.home_import(actor=request.user, data=dict(data), origin=Origin.API)
        return Response(ImportOutput(report).data)


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
    def get(self, request):
        source = source_parse(request.query_params.get("source", ""))
        page = self.paginate_queryset(source_reads(user=request.user, source=source))
        views = read_views(user=request.user, reads=list(page))
        return self.get_paginated_response([read_data(view) for view in views])

    def get_queryset(self):
        return Memory.objects.none()  # the schema only; the list is read in get()


MEM = r"(?P<memory_id>[\w-]+)"

urlpatterns = [
    api_route(r"users/me/memory-home", HomeView.as_view(), "memory-home"),
    api_route(r"users/me/memory-home/search", HomeSearchView.as_view(), "memory-home-search"),
    api_route(r"users/me/memory-home/items", HomeItemListView.as_view(), "memory-home-items"),
    api_route(rf"users/me/memory-home/items/{MEM}", HomeItemView.as_view(), "memory-home-item"),
    api_route(rf"users/me/memory-home/items/{MEM}/supersede", HomeItemSupersedeView.as_view(), "memory-home-correct"),
    api_route(r"users/me/memory-home/reads", HomeReadsView.as_view(), "memory-home-reads"),
    api_route(r"users/me/memory-home/forget", ForgetSelectedView.as_view(), "memory-home-forget"),
    api_route(r"users/me/memory-home/forget-all", ForgetAllView.as_view(), "memory-home-forget-all"),
    api_route(
        r"users/me/memory-home/forget-all/undo/(?P<undo_id>[\w-]+)", ForgetUndoView.as_view(), "memory-home-forget-undo"
    ),
    api_route(r"users/me/export", ExportView.as_view(), "my-export"),
    api_route(r"users/me/export/markdown", ExportMarkdownView.as_view(), "my-export-markdown"),
    api_route(r"users/me/import", ImportView.as_view(), "my-import"),
]
