"""The store over REST (docs/integrations.md, "The store"): one request runs a batch of
operations — what ``memsvc.integrations.langgraph.MemoryStore.batch`` sends."""

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.inputs import StrictInputMixin, validated
from config.api.routes import api_route
from config.http import AuthenticatedRequest
from identity_app.models import ApiToken
from memory_app.reads import recorder as reads
from memory_app.reads.models import ItemKind, ReadPath
from memory_app.store import services

OP_HELP = (
    "Operations, each one of: get {namespace, key, refresh_ttl?}, put {namespace, key, value (null: delete), "
    "text?, ttl? (minutes), index? (false)}, search {namespace_prefix, query?, filter?, limit?, offset?, "
    "refresh_ttl?}, list_namespaces {prefix?, suffix?, max_depth?, limit?, offset?} (docs/integrations.md)."
)


class StoreBatchInput(StrictInputMixin, serializers.Serializer):
    ops = serializers.ListField(
        child=serializers.DictField(), min_length=1, max_length=services.MAX_OPS, help_text=OP_HELP
    )


class BatchView(APIView):
    def get_throttle_scopes(self, request: AuthenticatedRequest) -> tuple[str, ...]:
        ops = request.data.get("ops") if isinstance(request.data, dict) else None
        searching = isinstance(ops, list) and any(
            isinstance(op, dict) and op.get("op") == "search" and op.get("query") for op in ops
        )
        return ("search",) if searching else ()

    @extend_schema(
        request=StoreBatchInput,
        responses=inline_serializer(
            "StoreBatchOutput", {"results": serializers.ListField(child=serializers.JSONField())}
        ),
    )
    def post(self, request: AuthenticatedRequest) -> Response:
        report = services.batch_run(actor=request.user, ops=validated(StoreBatchInput, request)["ops"])
        token = request.auth if isinstance(request.auth, ApiToken) else None
        by_owner: dict[int | None, list[str]] = {}
        for memory in report.read:
            by_owner.setdefault(memory.owner_id, []).append(memory.pk)
        for owner_id, refs in by_owner.items():  # who read what (docs/home.md), after the response
            reads.record(
                item_kind=ItemKind.MEMORY,
                refs=refs,
                path=ReadPath.STORE,
                user_id=owner_id,
                principal_id=request.user.pk,
                token_id=token.pk if token else None,
            )
        return Response({"results": report.results})


urlpatterns = [api_route(r"store/batch", BatchView.as_view(), "store-batch")]
