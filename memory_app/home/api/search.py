"""The memory home's one search over REST (memories and the notes file's lines)."""

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.inputs import (
    NOT_ONLY_SPACE,
)
from config.errors import InvalidInput
from config.http import AuthenticatedRequest
from config.validation import search_query
from memory_app.home.api.items import HomeItemOutput, item_data
from memory_app.home.search import MAX_QUERY_CHARS, SEARCH_LIMIT, NotesHit, home_search


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
    def get(self, request: AuthenticatedRequest):
        try:
            query = search_query(request.query_params.get("q", ""), max_chars=MAX_QUERY_CHARS, field="q")
        except InvalidInput as exc:
            raise serializers.ValidationError({"q": [exc.message]}) from exc
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
