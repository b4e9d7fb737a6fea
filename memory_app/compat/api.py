"""The mem0-compatible API (docs/integrations.md): the endpoints ``mem0ai``'s ``MemoryClient``
calls, served at the site root (``/v1/…``, ``/v2/…``, ``/v3/…``) and under ``/api/mem0/``, so that
``MemoryClient(api_key=<key>, host=<this service>)`` works unchanged.

Every answer is what mem0's client reads; every error is this API's error shape with mem0's
``detail`` beside it, at the status that makes the client raise its own typed exception (400
``ValidationError``, 401/403 ``AuthenticationError``, 404 ``MemoryNotFoundError``, 413
``MemoryQuotaExceededError``, 429 ``RateLimitError``). A field or filter this service does not
support is a 400 that names it, never ignored.
"""

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.inputs import (
    JSONObjectField,
    StrictBooleanField,
    StrictCharField,
    StrictInputMixin,
    StrictIntegerField,
    validated,
)
from config.api.pagination import DefaultPagination
from config.api.routes import compat_route
from config.errors import InvalidInput
from config.http import AuthenticatedRequest
from identity_app.authentication import ApiTokenAuthentication
from identity_app.models import ApiToken
from memory_app.compat import output, query, selectors, services
from memory_app.compat.errors import ErrorCode
from memory_app.memories.models import MAX_CONTENT_CHARS
from memory_app.memories.selectors import memory_chain, memory_of_users_get
from memory_app.reads import recorder as reads
from memory_app.reads.models import ItemKind, ReadPath
from memory_app.search.engine import default_mode

PING_ORG, PING_PROJECT = "memory-service", "default"
ENTITY = {"type": "string", "maxLength": query.MAX_VALUE_CHARS, "nullable": True}


def deployment_checked(given) -> None:
    """``org_id`` and ``project_id``: mem0's clients before 2.0 send back in every call the pair
    ``/v1/ping/`` answered. This service is one of each; another names nothing here (a 400)."""
    for name, ours in (("org_id", PING_ORG), ("project_id", PING_PROJECT)):
        value = given.get(name)
        if value is not None and value != ours:
            raise InvalidInput(
                f"{name}: this service is {name.removesuffix('_id')} {ours!r} (GET /v1/ping/), not {str(value)[:40]!r}.",
                code=ErrorCode.INVALID,
            )


def query_params_checked(request, *, allowed: tuple[str, ...]) -> None:
    """A call's query string: these parameters, each once, and the deployment's ``org_id`` and
    ``project_id`` (checked); any other, or one given twice, is a 400 that names it."""
    params = request.query_params
    unknown = sorted(set(params) - {*allowed, "org_id", "project_id"})
    if unknown:
        raise InvalidInput(
            f"Not supported by this service: {_names(unknown)} (docs/integrations.md).", code=ErrorCode.UNSUPPORTED
        )
    repeated = sorted(name for name in params if len(params.getlist(name)) > 1)
    if repeated:
        raise InvalidInput(f"Given more than once: {_names(repeated)}.", code=ErrorCode.INVALID)
    deployment_checked(params)
    if "delete_linked" in allowed and params.get("delete_linked", "true") not in ("true", "false", "True", "False"):
        raise InvalidInput("delete_linked is true or false.", code=ErrorCode.INVALID)


def _names(names: list[str]) -> str:
    """Parameter names as an error names them: at most five, each cut to 40 characters."""
    shown = ", ".join(repr(name[:40]) if len(name) > 40 else name for name in names[:5])
    return shown + (f" and {len(names) - 5} more" if len(names) > 5 else "")


# The answers' shapes in the schema. mem0's paths before 2.0 (``bare_lists``) answer a bare list
# unless the call asks for ``output_format="v1.1"`` or pages: each of the views below serves
# both kinds of path, so its answer is documented as one or the other.
POSITIVE = {"type": "integer", "minimum": 1}
NAMED = {"type": "string", "minLength": 1, "maxLength": query.MAX_VALUE_CHARS}
ONE_NAME = {**NAMED, "not": {"enum": [query.WILDCARD]}}  # what a delete names: one name, never "any"
LIST_OF_OBJECTS = {"type": "array", "items": {"type": "object", "additionalProperties": {}}}
_RESULTS = {"type": "object", "properties": {"results": LIST_OF_OBJECTS}, "required": ["results"]}
_PAGE = {
    "type": "object",
    "properties": {
        "count": {"type": "integer"},
        "next": {"type": "string", "nullable": True},
        "previous": {"type": "string", "nullable": True},
        "results": LIST_OF_OBJECTS,
    },
    "required": ["count", "next", "previous", "results"],
}
_BARE = "A bare list on mem0's paths before 2.0 (`/v1/memories/`, `/v2/memories/`, `/v1/memories/search/`, `/v2/memories/search/`) unless `output_format` is `v1.1`"
RESULTS_OR_LIST = OpenApiResponse(response={"oneOf": [_RESULTS, LIST_OF_OBJECTS]}, description=f"{_BARE}.")
PAGE_OR_LIST = OpenApiResponse(
    response={"oneOf": [_PAGE, LIST_OF_OBJECTS]}, description=f"{_BARE} or the list is paged (`page`, `page_size`)."
)


class Mem0View(APIView):
    """API keys only; every error carries mem0's ``detail`` (its client's exception message).
    The query string holds only the parameters ``query_names`` gives for the method (and the
    deployment's ``org_id`` and ``project_id``, which mem0's clients before 2.0 send with every
    call), each once: ``query_params_checked``, before the method runs."""

    request: AuthenticatedRequest  # IsAuthenticated, the default permission
    authentication_classes = [ApiTokenAuthentication]
    query_names: dict[str, tuple[str, ...]] = {}
    own_query_check = True  # not config.api.query's: mem0's clients read this error's ``detail``
    # The paths of mem0's clients before 2.0: there an answer of results is a bare list (mem0's
    # "v1.0" format, which those clients' types read) unless the call asks for
    # ``output_format="v1.1"`` ({"results": [...]}).
    bare_lists = False

    def shaped(self, results: list, output_format) -> Response:
        if self.bare_lists and output_format != "v1.1":
            return Response(results)
        return Response({"results": results})

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        method = "GET" if request.method == "HEAD" else request.method
        query_params_checked(request, allowed=self.query_names.get(method, ()))

    def handle_exception(self, exc):
        response = super().handle_exception(exc)
        error = response.data.get("error") if isinstance(response.data, dict) else None
        if isinstance(error, dict):
            response.data["detail"] = error.get("message", "")
        return response

    def read(self, memories, path: str) -> None:
        """Who read what (docs/home.md): the text of ``memories`` went to this key."""
        token = self.request.auth if isinstance(self.request.auth, ApiToken) else None
        by_owner: dict[int, list[str]] = {}
        for memory in memories:
            by_owner.setdefault(memory.owner_id, []).append(memory.pk)
        for owner_id, refs in by_owner.items():
            reads.record(
                item_kind=ItemKind.MEMORY,
                refs=refs,
                path=path,
                user_id=owner_id,
                principal_id=self.request.user.pk,
                token_id=token.pk if token else None,
            )


def refuse_fields(data, unsupported: tuple[str, ...]) -> None:
    """mem0 fields this service does not do: a 400 naming them (unknown fields are refused by
    the input serializers)."""
    if isinstance(data, dict):
        named = sorted(name for name in data if name in unsupported)
        if named:
            raise InvalidInput(
                f"Not supported by this service: {', '.join(named)} (docs/integrations.md).", code=ErrorCode.UNSUPPORTED
            )


def entity_filters(data: dict) -> dict | None:
    """The filter a request means: its ``filters`` and any entity ids given beside them."""
    given = [{name: data[name]} for name in query.ENTITY_FIELDS if data.get(name) is not None]
    if data.get("metadata"):
        given.append({"metadata": data["metadata"]})
    if data.get("filters"):
        given.append(data["filters"])
    return {"AND": given} if given else None


@extend_schema_field({"type": "string", "enum": [PING_ORG], "nullable": True, "description": "As /v1/ping/ answers."})
class _OrgField(StrictCharField):
    """``org_id``: this deployment's (``deployment_checked``)."""


@extend_schema_field(
    {"type": "string", "enum": [PING_PROJECT], "nullable": True, "description": "As /v1/ping/ answers."}
)
class _ProjectField(StrictCharField):
    """``project_id``: this deployment's (``deployment_checked``)."""


@extend_schema_field({"type": "string", "format": "date-time", "nullable": True, "description": "Or a date."})
class _InstantField(StrictCharField):
    """An ISO 8601 date or date-time (``query._instant``)."""


_TEXT_PART = {
    "type": "object",
    "properties": {"type": {"type": "string", "enum": ["text"]}, "text": {"type": "string"}},
    "required": ["type", "text"],
}
_MESSAGE = {
    "type": "object",
    "properties": {
        "role": {"type": "string"},
        "content": {  # text, text parts (OpenAI's format), or null (a turn of tool calls: left out)
            "oneOf": [{"type": "string", "minLength": 1}, {"type": "array", "items": _TEXT_PART}],
            "nullable": True,
        },
    },
    "required": ["role"],
}


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "minLength": 1},
            _MESSAGE,
            {"type": "array", "items": _MESSAGE, "minItems": 1, "maxItems": services.MAX_MESSAGES},
        ],
        "description": "A string, a message {role, content}, or a list of messages (``services.messages_text``).",
    }
)
class _MessagesField(serializers.JSONField):
    pass


class Mem0Input(StrictInputMixin, serializers.Serializer):
    user_id = StrictCharField(max_length=query.MAX_VALUE_CHARS, required=False, allow_null=True)
    agent_id = StrictCharField(max_length=query.MAX_VALUE_CHARS, required=False, allow_null=True)
    run_id = StrictCharField(max_length=query.MAX_VALUE_CHARS, required=False, allow_null=True)
    app_id = StrictCharField(max_length=query.MAX_VALUE_CHARS, required=False, allow_null=True)
    filters = JSONObjectField(required=False, allow_null=True)
    version = StrictCharField(max_length=10, required=False)
    api_version = StrictCharField(
        max_length=10, required=False, help_text="mem0's JavaScript client 2.x's name of version."
    )
    output_format = StrictCharField(max_length=10, required=False)
    org_id = _OrgField(max_length=100, required=False, allow_null=True)
    project_id = _ProjectField(max_length=100, required=False, allow_null=True)

    def validate(self, attrs):
        deployment_checked(attrs)
        return attrs


# --- who is calling ----------------------------------------------------------------------
class PingView(Mem0View):
    @extend_schema(
        tags=["mem0-compatible"],
        responses=inline_serializer(
            "Mem0Ping",
            {
                "status": serializers.CharField(),
                "user_id": serializers.CharField(),
                "user_email": serializers.CharField(allow_null=True),
                "org_id": serializers.CharField(),
                "project_id": serializers.CharField(),
            },
        ),
    )
    def get(self, request: AuthenticatedRequest):
        # mem0's client needs an organisation and a project to start; this service has one of
        # each per deployment (its project operations answer 400, unsupported).
        return Response(
            {
                "status": "ok",
                "user_id": request.user.get_username(),
                "user_email": request.user.email or None,
                "org_id": PING_ORG,
                "project_id": PING_PROJECT,
            }
        )


# --- add -----------------------------------------------------------------------------------
ADD_UNSUPPORTED = (
    "custom_categories",
    "custom_instructions",
    "agent_custom_instructions",
    "structured_data_schema",
    "timestamp",
    "includes",
    "excludes",
    "enable_graph",
    "categories",
)


class Mem0AddInput(Mem0Input):
    messages = _MessagesField()
    metadata = JSONObjectField(required=False, allow_null=True)
    infer = StrictBooleanField(required=False, default=True)
    expiration_date = StrictCharField(max_length=40, required=False, allow_null=True)
    async_mode = StrictBooleanField(required=False, help_text="Accepted; every add is done before it answers.")
    immutable = StrictBooleanField(required=False)


class AddView(Mem0View):
    @extend_schema(
        tags=["mem0-compatible"],
        request=Mem0AddInput,
        responses={200: RESULTS_OR_LIST},
    )
    def post(self, request: AuthenticatedRequest):
        refuse_fields(request.data, ADD_UNSUPPORTED)
        data = validated(Mem0AddInput, request)
        if data.get("immutable"):
            raise InvalidInput(
                "Not supported by this service: immutable (docs/integrations.md).", code=ErrorCode.UNSUPPORTED
            )
        named = query.parse(entity_filters({k: data.get(k) for k in (*query.ENTITY_FIELDS, "filters")}))
        given_tags = {name: services.tag_text(name, data.get(name)) for name in services.ENTITY_TAGS}
        tags = {**_equal_tags(data.get("filters")), **{k: v for k, v in given_tags.items() if v}}
        subjects = services.subjects_for(actor=request.user, named=named.user_ids)
        if len(subjects) != 1:
            raise InvalidInput("An add is for one user.", code=ErrorCode.INVALID)
        events = services.memories_add(
            actor=request.user,
            subject=subjects[0],
            messages=services.messages_text(data["messages"]),
            tags=tags,
            metadata=data.get("metadata"),
            infer=data["infer"],
            expires_at=services.expiry_of(data.get("expiration_date")),
        )
        return self.shaped([output.event_out(event) for event in events], data.get("output_format"))


def _equal_tags(given) -> dict:
    """The entity tags an add's ``filters`` gives (equalities only: an add writes one set)."""
    tags: dict = {}
    for name, value in (given or {}).items():
        if name == "user_id":
            continue
        if name not in services.ENTITY_TAGS or not isinstance(value, str) or value == query.WILDCARD:
            raise InvalidInput(
                "filters of an add name user_id, agent_id, run_id and app_id, each equal to one string.",
                code=ErrorCode.UNSUPPORTED_FILTER,
            )
        tags[name] = services.tag_text(name, value)
    return tags


# --- read ----------------------------------------------------------------------------------
READ_UNSUPPORTED = ("categories", "reference_date", "enable_graph")


class Mem0ListInput(Mem0Input):
    fields = serializers.ListField(  # type: ignore[assignment]  # mem0's name for the output fields wanted
        child=serializers.ChoiceField(choices=output.MEMORY_FIELDS),
        required=False,
        max_length=len(output.MEMORY_FIELDS),
    )
    start_date = _InstantField(max_length=40, required=False, allow_null=True)
    end_date = _InstantField(max_length=40, required=False, allow_null=True)
    show_expired = StrictBooleanField(required=False, default=False)
    latest_only = StrictBooleanField(required=False, help_text="Accepted: only the current versions are ever listed.")
    metadata = JSONObjectField(required=False, allow_null=True)


class Mem0SearchInput(Mem0ListInput):
    query = StrictCharField(max_length=1000)
    top_k = StrictIntegerField(min_value=1, max_value=100, required=False, default=10)
    limit = StrictIntegerField(min_value=1, max_value=100, required=False)
    threshold = serializers.FloatField(min_value=0, max_value=1, required=False, allow_null=True)
    rerank = StrictBooleanField(required=False, help_text="Accepted; the ranking is always hybrid (words and meaning).")
    keyword_search = StrictBooleanField(required=False, default=False)
    source = StrictCharField(
        max_length=40, required=False, help_text="Accepted: the surface that made the call (mem0's JavaScript client)."
    )


def _read_scope(request: AuthenticatedRequest, data: dict) -> tuple[list, query.Parsed]:
    if data.get("show_expired"):
        raise InvalidInput(
            "show_expired: expired memories leave every agent's reads here (docs/tiers.md, Expiry).",
            code=ErrorCode.UNSUPPORTED,
        )
    wanted = entity_filters(data)
    dates = [
        {"created_at": {op: data[key]}} for key, op in (("start_date", "gte"), ("end_date", "lte")) if data.get(key)
    ]
    if dates:
        wanted = {"AND": [*(wanted["AND"] if wanted else []), *dates]}
    parsed = query.parse(wanted)
    return services.subjects_for(actor=request.user, named=parsed.user_ids), parsed


class ListView(Mem0View):
    pagination_class = DefaultPagination
    query_names = {"POST": ("page", "page_size")}

    @extend_schema(
        tags=["mem0-compatible"],
        request=Mem0ListInput,
        parameters=[OpenApiParameter("page", POSITIVE), OpenApiParameter("page_size", POSITIVE)],
        responses={200: PAGE_OR_LIST},
    )
    def post(self, request: AuthenticatedRequest):
        refuse_fields(request.data, READ_UNSUPPORTED)
        return self.listed(validated(Mem0ListInput, request))

    def listed(self, data: dict):
        request = self.request
        subjects, parsed = _read_scope(request, data)
        rows = selectors.memories_listed(actor=request.user, subjects=subjects, condition=parsed.q)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(rows, request, view=self) or []
        self.read(page, ReadPath.MEM0)
        results = [output.memory_out(m, fields=data.get("fields")) for m in page]
        paged = bool({"page", "page_size"} & set(request.query_params))
        if not paged and self.bare_lists and data.get("output_format") != "v1.1":
            return Response(results)  # not paged by the caller: the older clients' shape (``shaped``)
        return paginator.get_paginated_response(results)


class SearchView(Mem0View):
    throttle_scopes = ("search",)

    @extend_schema(
        tags=["mem0-compatible"],
        request=Mem0SearchInput,
        responses={200: RESULTS_OR_LIST},
    )
    def post(self, request: AuthenticatedRequest):
        refuse_fields(request.data, READ_UNSUPPORTED)
        data = validated(Mem0SearchInput, request)
        subjects, parsed = _read_scope(request, data)
        hits = selectors.memories_searched(
            actor=request.user,
            subjects=subjects,
            query=data["query"].strip(),
            condition=parsed.q,
            narrowed=parsed.conditions > len(parsed.user_ids),
            top_k=data.get("limit") or data["top_k"],
            threshold=data.get("threshold"),
            mode="lexical" if data["keyword_search"] else default_mode(),
        )
        self.read([hit.memory for hit in hits], ReadPath.MEM0)
        return self.shaped(
            [output.memory_out(hit.memory, score=hit.score, fields=data.get("fields")) for hit in hits],
            data.get("output_format"),
        )


class Mem0UpdateInput(StrictInputMixin, serializers.Serializer):
    text = StrictCharField(max_length=MAX_CONTENT_CHARS, required=False)
    data = StrictCharField(max_length=MAX_CONTENT_CHARS, required=False, help_text="mem0's older name of text.")
    metadata = JSONObjectField(required=False, allow_null=True)
    expiration_date = StrictCharField(max_length=40, required=False, allow_null=True)


class MemoryView(Mem0View):
    query_names = {"DELETE": ("delete_linked",)}

    @extend_schema(tags=["mem0-compatible"], responses=OpenApiTypes.OBJECT)
    def get(self, request: AuthenticatedRequest, memory_id):
        memory = memory_of_users_get(actor=request.user, memory_id=memory_id)
        self.read([memory], ReadPath.MEM0)
        return Response(output.memory_out(memory))

    @extend_schema(tags=["mem0-compatible"], request=Mem0UpdateInput, responses=OpenApiTypes.OBJECT)
    def put(self, request: AuthenticatedRequest, memory_id):
        refuse_fields(request.data, ("timestamp", "immutable"))
        data = validated(Mem0UpdateInput, request)
        expiry = (
            services.expiry_of(data["expiration_date"])
            if "expiration_date" in data
            else services.memory_services.KEEP_EXPIRY
        )
        old, new = services.memory_update(
            actor=request.user,
            memory_id=memory_id,
            text=data.get("text", data.get("data")),
            metadata=data.get("metadata"),
            expires_at=expiry,
        )
        return Response({**output.memory_out(new), "previous_id": old.pk, "message": "Memory updated successfully!"})

    @extend_schema(
        tags=["mem0-compatible"],
        parameters=[OpenApiParameter("delete_linked", bool)],
        responses={200: OpenApiTypes.OBJECT},
    )
    def delete(self, request: AuthenticatedRequest, memory_id):
        forgotten = services.memory_delete(actor=request.user, memory_id=memory_id)
        return Response({"message": "Memory deleted successfully!", "deleted": forgotten})


class HistoryView(Mem0View):
    @extend_schema(tags=["mem0-compatible"], responses={200: LIST_OF_OBJECTS})
    def get(self, request: AuthenticatedRequest, memory_id):
        memory = memory_of_users_get(actor=request.user, memory_id=memory_id)
        chain = memory_chain(memory=memory)
        self.read(chain, ReadPath.MEM0)
        return Response(output.history_out(chain))


class DeleteAllView(Mem0View):
    query_names = {"DELETE": (*query.ENTITY_FIELDS, "filters")}

    @extend_schema(
        tags=["mem0-compatible"],
        operation_id="mem0_memories_delete_all",
        parameters=[
            *(OpenApiParameter(name, ONE_NAME) for name in query.ENTITY_FIELDS),
            OpenApiParameter(
                "filters",
                NAMED,
                description="The entity fields as one object, as mem0's client sends delete_all(filters={...}).",
            ),
        ],
        description="Names at least one entity, in its own parameter or in `filters`; a delete naming nobody is a 400.",
        responses={200: OpenApiTypes.OBJECT},
    )
    def delete(self, request: AuthenticatedRequest):
        params = request.query_params
        # Each given field must hold a name: an empty one or "*" is refused, never read as "any".
        wanted = {name: _deleted_name(name, params[name]) for name in query.ENTITY_FIELDS if name in params}
        for name, given in query.entities_param(params["filters"]).items() if "filters" in params else ():
            value = _deleted_name(name, given)
            if wanted.setdefault(name, value) != value:
                raise query.unsupported(f"{name} is given twice, as {wanted[name]!r} and {value!r}")
        if not wanted:
            # mem0's clients leave out an argument that is None: a delete naming nobody is refused,
            # never read as "every memory" (mem0's own asks for reset() there; delete_users() is it).
            raise InvalidInput(
                "delete_all names at least one of user_id, agent_id, run_id, app_id (delete_users() deletes them all).",
                code=ErrorCode.INVALID,
            )
        subjects = services.subjects_for(actor=request.user, named=[wanted["user_id"]] if "user_id" in wanted else [])
        tags = {name: wanted.get(name) for name in services.ENTITY_TAGS}
        forgotten, left = services.memories_delete_all(actor=request.user, subjects=subjects, tags=tags)
        return Response({"message": "Memories deleted successfully!", "deleted": len(forgotten), "remaining": left})


def _deleted_name(name: str, value: str) -> str | None:
    if value == query.WILDCARD:
        raise query.unsupported(f"{name} in a delete is one name, not {query.WILDCARD!r}")
    return services.tag_text(name, value)


class MemoriesV1View(DeleteAllView, AddView, ListView):
    """``/v1/memories/``: ``DELETE`` is ``delete_all`` (every client); ``POST`` is ``add`` and
    ``GET`` is ``get_all`` (mem0's clients before 2.0 and before 1.0)."""

    query_names = {
        **DeleteAllView.query_names,
        "GET": (*query.ENTITY_FIELDS, "page", "page_size", "version", "api_version", "output_format"),
    }
    bare_lists = True

    @extend_schema(
        tags=["mem0-compatible"],
        operation_id="mem0_memories_v1_list",
        parameters=[
            *(OpenApiParameter(name, NAMED) for name in query.ENTITY_FIELDS),
            OpenApiParameter("page", POSITIVE),
            OpenApiParameter("page_size", POSITIVE),
            OpenApiParameter("output_format", str, description="`v1.1`: {results} instead of a bare list."),
            OpenApiParameter("version", str, description="Accepted (mem0's clients send it)."),
            OpenApiParameter("api_version", str, description="Accepted (mem0's JavaScript client 2.x sends it)."),
        ],
        responses={200: PAGE_OR_LIST},
    )
    def get(self, request: AuthenticatedRequest):
        params = request.query_params
        wanted = {name: params[name] for name in (*query.ENTITY_FIELDS, "output_format") if name in params}
        return self.listed(wanted)


class EntitiesView(Mem0View):
    query_names = {"GET": ("page", "page_size")}

    @extend_schema(
        tags=["mem0-compatible"],
        parameters=[OpenApiParameter("page", POSITIVE), OpenApiParameter("page_size", POSITIVE)],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: AuthenticatedRequest):
        """Every entity at once (mem0's Python client asks so, and deletes each for ``reset()``),
        or a page of them when ``page`` or ``page_size`` is given (its JavaScript client)."""
        params = request.query_params
        found = selectors.entities(actor=request.user)
        if "page" not in params and "page_size" not in params:
            return Response({"count": len(found), "next": None, "previous": None, "results": found})
        paginator = DefaultPagination()
        page: list[dict] = paginator.paginate_queryset(found, request, view=self) or []  # type: ignore[arg-type]  # a list pages as a queryset does
        return paginator.get_paginated_response(page)


class EntityView(Mem0View):
    @extend_schema(
        tags=["mem0-compatible"],
        parameters=[OpenApiParameter("entity_type", str, OpenApiParameter.PATH, enum=["user", "agent", "run", "app"])],
        responses={200: OpenApiTypes.OBJECT},
    )
    def delete(self, request: AuthenticatedRequest, entity_type, name):
        forgotten, left = services.entity_delete(actor=request.user, kind=entity_type, name=name)
        return Response({"message": "Entity deleted successfully.", "deleted": len(forgotten), "remaining": left})


_MEMORY_ID = {"type": "string", "minLength": 1}


@extend_schema_field(
    {
        "type": "object",
        "properties": {"memory_id": _MEMORY_ID, "text": {"type": "string"}, "metadata": {"type": "object"}},
        "required": ["memory_id"],
        "additionalProperties": False,
    }
)
class _ChangeField(serializers.DictField):
    pass


@extend_schema_field(
    {
        "type": "object",
        "properties": {"memory_id": _MEMORY_ID},
        "required": ["memory_id"],
        "additionalProperties": False,
    }
)
class _DeletedField(serializers.DictField):
    pass


class Mem0BatchInput(StrictInputMixin, serializers.Serializer):
    memories = serializers.ListField(child=_ChangeField(), min_length=1, max_length=services.MAX_BATCH)


class Mem0BatchDeleteInput(StrictInputMixin, serializers.Serializer):
    memories = serializers.ListField(child=_DeletedField(), min_length=1, max_length=services.MAX_BATCH)


class _DeleteWithBodySchema(AutoSchema):
    """mem0's batch delete sends its ids as a DELETE's JSON body; the schema documents it (the
    generator documents a body for PUT, PATCH and POST only)."""

    def _get_request_body(self, direction="request"):
        if self.method != "DELETE":
            return super()._get_request_body(direction)
        self.method = "POST"
        try:
            return super()._get_request_body(direction)
        finally:
            self.method = "DELETE"


class BatchView(Mem0View):
    schema = _DeleteWithBodySchema()

    @extend_schema(tags=["mem0-compatible"], request=Mem0BatchInput, responses=OpenApiTypes.OBJECT)
    def put(self, request: AuthenticatedRequest):
        changes = validated(Mem0BatchInput, request)["memories"]
        for change in changes:
            refuse_fields(change, ("timestamp", "immutable"))
            unknown = set(change) - {"memory_id", "text", "metadata"}
            if unknown or not isinstance(change.get("memory_id"), str):
                raise InvalidInput("Each change is {memory_id, text?, metadata?}.", code=ErrorCode.INVALID)
        done = services.memories_batch_update(actor=request.user, changes=changes)
        return Response(
            {
                "message": f"Successfully updated {len(done)} memories",
                "results": [output.memory_out(new) for _, new in done],
            }
        )

    @extend_schema(tags=["mem0-compatible"], request=Mem0BatchDeleteInput, responses={200: OpenApiTypes.OBJECT})
    def delete(self, request: AuthenticatedRequest):
        items = validated(Mem0BatchDeleteInput, request)["memories"]
        if not all(set(item) == {"memory_id"} and isinstance(item["memory_id"], str) for item in items):
            raise InvalidInput("Each item is {memory_id}.", code=ErrorCode.INVALID)
        forgotten = services.memories_batch_delete(actor=request.user, memory_ids=[item["memory_id"] for item in items])
        return Response({"message": f"Successfully deleted {len(items)} memories", "deleted": forgotten})


@extend_schema(exclude=True)
class UnsupportedView(Mem0View):
    """mem0 endpoints this service does not offer: a 400 that says so (mem0's client raises its
    ``ValidationError`` with this message), not a 404 that reads like a missing memory."""

    def _refuse(self, request: AuthenticatedRequest, *args, **kwargs):
        raise InvalidInput(
            f"{request.path} is not supported by this service (docs/integrations.md).", code=ErrorCode.UNSUPPORTED
        )

    def initial(self, request, *args, **kwargs):
        APIView.initial(self, request, *args, **kwargs)  # whatever the query string: the path is refused

    get = post = put = patch = delete = _refuse


MEM = r"(?P<memory_id>[\w-]{1,40})"

urlpatterns = [
    compat_route(r"v1/ping", PingView.as_view(), "mem0-ping"),
    compat_route(r"v3/memories/add", AddView.as_view(), "mem0-add"),
    compat_route(r"v3/memories", ListView.as_view(), "mem0-list"),
    compat_route(r"v3/memories/search", SearchView.as_view(), "mem0-search"),
    # The paths of mem0's clients before 2.0 (1.0: add at v1, list and search at v2; before
    # 1.0: list and search at v1 by default).
    compat_route(r"v1/memories", MemoriesV1View.as_view(), "mem0-delete-all"),
    compat_route(r"v2/memories", ListView.as_view(bare_lists=True), "mem0-list-v2"),
    compat_route(r"v1/memories/search", SearchView.as_view(bare_lists=True), "mem0-search-v1"),
    compat_route(r"v2/memories/search", SearchView.as_view(bare_lists=True), "mem0-search-v2"),
    compat_route(rf"v1/memories/{MEM}", MemoryView.as_view(), "mem0-memory"),
    compat_route(rf"v1/memories/{MEM}/history", HistoryView.as_view(), "mem0-history"),
    compat_route(r"v1/entities", EntitiesView.as_view(), "mem0-entities"),
    compat_route(r"v2/(?:profiles/.*|entities/user/[^/]+/profile)", UnsupportedView.as_view(), "mem0-unsupported-v2"),
    # A name may hold "/" (a run id "chat/42"): mem0's client sends it encoded, and the path
    # arrives decoded. The shortest name that leaves at most the trailing slash.
    compat_route(r"v2/entities/(?P<entity_type>[a-z]{1,10})/(?P<name>.{1,200}?)", EntityView.as_view(), "mem0-entity"),
    compat_route(r"v1/batch", BatchView.as_view(), "mem0-batch"),
    # v1/entities/{type}/{id}: the JavaScript client's deprecated deleteUser, by an entity's id
    # (entities here are names, with no id: v2/entities/{type}/{name} deletes one).
    compat_route(
        r"v1/(?:exports(?:/get)?|summary|feedback|events?(?:/[^/]+)?|entities/[^/]+/.+)",
        UnsupportedView.as_view(),
        "mem0-unsupported-v1",
    ),
    compat_route(r"api/v1/(?:orgs|webhooks)/.*", UnsupportedView.as_view(), "mem0-unsupported-orgs"),
]
