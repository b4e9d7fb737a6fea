"""Scoped items for bots (docs/scoped-memory.md): items, search, consolidation; and chat bindings."""

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.inputs import JSONObjectField, StrictCharField, StrictInputMixin, validated
from config.api.routes import api_route
from config.api.schema import is_schema_generation
from config.http import AuthenticatedRequest
from identity_app import chat_bindings
from identity_app.filters import ChatBindingFilter
from identity_app.models import ApiToken, ChatBinding
from identity_app.permissions import is_service_principal
from identity_app.session_keys import MAX_SESSION_KEY_LENGTH, SESSION_KEY_PATTERN, chat_key_pattern
from memory_app.memories.api import ExpiresAtField, MemoryChangeInput
from memory_app.memories.models import MAX_CONTENT_CHARS, Kind, Memory
from memory_app.ops.api import JobOutput, job_accepted
from memory_app.reads import recorder as reads
from memory_app.reads.models import ItemKind, ReadPath
from memory_app.scoped import consolidation, search
from memory_app.scoped import services as items
from memory_app.scoped.consolidation import MAX_TURN_MESSAGES
from memory_app.scoped.selectors import searchable_scopes


@extend_schema_field({"type": "string", "pattern": SESSION_KEY_PATTERN, "maxLength": MAX_SESSION_KEY_LENGTH})
class SessionKeyField(StrictCharField):
    """A session key; the services parse it and refuse a malformed one (400 invalid_session_key)."""


@extend_schema_field(
    {
        "type": "string",
        "pattern": chat_key_pattern(chat_bindings.BINDABLE_TARGET_TYPES),
        "maxLength": MAX_SESSION_KEY_LENGTH,
    }
)
class BindableChatKeyField(StrictCharField):
    """The key of a chat that can be bound to a user; the binding service refuses any other
    (400 invalid_chat_key)."""


class ItemCreateInput(StrictInputMixin, serializers.Serializer):
    # The scope follows the session; without one, only an explicit (staff) global write.
    schema_required_any_of = (("session_id",), ("scope_type",))

    content = StrictCharField(max_length=MAX_CONTENT_CHARS)
    kind = serializers.ChoiceField(choices=Kind.choices)
    session_id = SessionKeyField(max_length=MAX_SESSION_KEY_LENGTH, required=False, trim_whitespace=False)
    metadata = JSONObjectField(required=False, default=dict)
    evidence = JSONObjectField(required=False, default=dict)
    scope_type = serializers.ChoiceField(choices=["global"], required=False)
    expires_at = ExpiresAtField()


class ItemOutput(serializers.ModelSerializer):
    class Meta:
        model = Memory
        fields = [
            "id",
            "scope_type",
            "scope_id",
            "kind",
            "content",
            "status",
            "origin",
            "metadata",
            "evidence",
            "created_at",
            "expires_at",
            "paused",
        ]


class ItemCreateOutput(ItemOutput):
    deduplicated = serializers.BooleanField()
    pending_review = serializers.BooleanField(
        help_text="Written to its chat, to be shared with everyone (global) once an operator approves it."
    )
    candidate_id = serializers.CharField(allow_null=True, help_text="The pending candidate the admin reviews.")

    class Meta(ItemOutput.Meta):
        fields = [*ItemOutput.Meta.fields, "deduplicated", "pending_review", "candidate_id"]


class ItemCreateView(APIView):
    @extend_schema(request=ItemCreateInput, responses={201: ItemCreateOutput, 200: ItemCreateOutput})
    def post(self, request: AuthenticatedRequest):
        memory, created = items.scoped_item_create(actor=request.user, **validated(ItemCreateInput, request))
        pending = items.pending_candidate_for(memory) if memory.scope_type == "chat" else None
        body = {
            **ItemOutput(memory).data,
            "deduplicated": not created,
            "pending_review": pending is not None,
            "candidate_id": pending.pk if pending else None,
        }
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class ItemDetailView(APIView):
    @extend_schema(
        request=MemoryChangeInput,
        responses=ItemOutput,
        description="Change a chat or global item in place: its expiry, or pause/resume it (a paused item "
        "stays listed but no search, context or tool returns it). Same id, no new version; the change is "
        "recorded in the item's provenance. Service principals within their reach; the user a private chat "
        "is bound to, for its items.",
    )
    def patch(self, request: AuthenticatedRequest, memory_id):
        memory = items.scoped_item_change(
            actor=request.user, memory_id=memory_id, **validated(MemoryChangeInput, request)
        )
        return Response(ItemOutput(memory).data)


class SearchInput(StrictInputMixin, serializers.Serializer):
    query = StrictCharField(max_length=search.MAX_QUERY_CHARS)
    session_id = SessionKeyField(max_length=MAX_SESSION_KEY_LENGTH, trim_whitespace=False)
    limit = serializers.IntegerField(min_value=1, max_value=search.MAX_LIMIT, default=10)
    mode = serializers.ChoiceField(choices=search.MODES, default="hybrid")
    keep_best = serializers.BooleanField(
        default=False,
        help_text="When no item matches the query, return the closest items anyway (`matched` is then false).",
    )


class SearchHitOutput(serializers.Serializer):
    id = serializers.CharField()
    content = serializers.CharField()
    kind = serializers.CharField()
    scope_type = serializers.CharField()
    scope_id = serializers.CharField()
    score = serializers.FloatField()
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True)


class SearchOutput(serializers.Serializer):
    results = SearchHitOutput(many=True)
    mode = serializers.CharField()
    warnings = serializers.ListField(
        child=serializers.CharField(), help_text="e.g. items not embedded yet, ranked by their words only"
    )
    matched = serializers.BooleanField(
        help_text="False when the results match nothing: the closest items, returned because `keep_best` asked."
    )


class SearchView(APIView):
    throttle_scopes = ("search",)

    @extend_schema(request=SearchInput, responses=SearchOutput)
    def post(self, request: AuthenticatedRequest):
        data = validated(SearchInput, request)
        scopes = searchable_scopes(user=request.user, session_id=data["session_id"])
        warnings: list[str] = []
        hits = search.cascade_search(
            scopes=scopes,
            query=data["query"],
            limit=data["limit"],
            mode=data["mode"],
            warnings=warnings,
            keep_best=data["keep_best"],
        )
        matched = all(hit.matched for hit in hits)
        if not matched:
            warnings.append("Nothing matches the query: these are the closest items (keep_best).")
        body = {
            "results": [hit.as_dict() for hit in hits],
            "mode": data["mode"],
            "warnings": warnings,
            "matched": matched,
        }
        token = request.auth if isinstance(request.auth, ApiToken) else None
        reads.record(  # who read what (docs/home.md); written after the response
            item_kind=ItemKind.MEMORY,
            refs=[hit.id for hit in hits],
            path=ReadPath.API_SEARCH,
            user_id=None if is_service_principal(request.user) else request.user.pk,
            principal_id=request.user.pk,
            token_id=token.pk if token else None,
        )
        return Response(body)


class TurnMessageInput(StrictInputMixin, serializers.Serializer):
    role = serializers.ChoiceField(choices=["user", "assistant", "system", "tool"])
    content = StrictCharField(max_length=consolidation.MAX_TURN_CHARS, allow_blank=True, trim_whitespace=False)


class ConsolidateInput(StrictInputMixin, serializers.Serializer):
    session_id = SessionKeyField(max_length=MAX_SESSION_KEY_LENGTH, trim_whitespace=False)
    # many=True hands max_length to the ListSerializer; the stubs' Serializer.__init__ does not list it
    messages = TurnMessageInput(many=True, allow_empty=False, max_length=MAX_TURN_MESSAGES)  # type: ignore[call-arg]


class CandidateOutput(serializers.Serializer):
    id = serializers.CharField()
    decision = serializers.CharField()
    reason = serializers.CharField()
    kind = serializers.CharField()
    content = serializers.CharField()
    scope_type = serializers.CharField()
    scope_id = serializers.CharField()
    memory_id = serializers.CharField(allow_null=True)


class ConsolidateOutput(serializers.Serializer):
    session_id = serializers.CharField()
    candidates = CandidateOutput(many=True)
    counts = serializers.DictField(child=serializers.IntegerField())


class ConsolidateView(APIView):
    @extend_schema(request=ConsolidateInput, responses=ConsolidateOutput)
    def post(self, request: AuthenticatedRequest):
        data = validated(ConsolidateInput, request)
        report = consolidation.consolidate_turn(
            actor=request.user, session_id=data["session_id"], messages=[dict(m) for m in data["messages"]]
        )
        return Response(
            {
                "session_id": report.session_id,
                "candidates": CandidateOutput(report.candidates, many=True).data,
                "counts": report.counts(),
            }
        )


class DreamInput(StrictInputMixin, serializers.Serializer):
    session_id = SessionKeyField(max_length=MAX_SESSION_KEY_LENGTH, trim_whitespace=False)


class DreamView(APIView):
    @extend_schema(
        request=DreamInput,
        responses={202: JobOutput},
        description=(
            "Queue a dreaming pass over the session's recent history (service principals); poll "
            "`status_url`. When done, `result` holds the counts and each candidate's decision."
        ),
    )
    def post(self, request: AuthenticatedRequest):
        data = validated(DreamInput, request)
        return job_accepted(consolidation.dream_request(actor=request.user, session_id=data["session_id"]))


class ChatBindingOutput(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = ChatBinding
        fields = ["id", "chat_key", "username", "created_at"]


class ChatBindingInput(StrictInputMixin, serializers.Serializer):
    chat_key = BindableChatKeyField(max_length=MAX_SESSION_KEY_LENGTH, trim_whitespace=False)
    user = StrictCharField(max_length=150)


class ChatBindingListView(generics.ListAPIView):
    request: AuthenticatedRequest  # IsAuthenticated, the default permission
    serializer_class = ChatBindingOutput
    filterset_class = ChatBindingFilter

    def get_queryset(self):
        if is_schema_generation(self):
            return ChatBinding.objects.none()
        return chat_bindings.chat_bindings_visible(user=self.request.user)

    @extend_schema(request=ChatBindingInput, responses={201: ChatBindingOutput})
    def post(self, request: AuthenticatedRequest):
        data = validated(ChatBindingInput, request)
        binding = chat_bindings.chat_binding_create(
            actor=request.user, chat_key=data["chat_key"], username=data["user"]
        )
        return Response(ChatBindingOutput(binding).data, status=status.HTTP_201_CREATED)


class ChatBindingDetailView(APIView):
    @extend_schema(responses={204: None})
    def delete(self, request: AuthenticatedRequest, binding_id):
        chat_bindings.chat_binding_delete(actor=request.user, binding_id=int(binding_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


urlpatterns = [
    api_route(r"memory/items", ItemCreateView.as_view(), "memory-items"),
    api_route(r"memory/items/(?P<memory_id>[\w-]+)", ItemDetailView.as_view(), "memory-item-detail"),
    api_route(r"memory/search", SearchView.as_view(), "memory-search"),
    api_route(r"memory/consolidate", ConsolidateView.as_view(), "memory-consolidate"),
    api_route(r"memory/dream", DreamView.as_view(), "memory-dream"),
    api_route(r"chat-bindings", ChatBindingListView.as_view(), "chat-bindings"),
    api_route(r"chat-bindings/(?P<binding_id>[0-9]{1,18})", ChatBindingDetailView.as_view(), "chat-binding-detail"),
]
