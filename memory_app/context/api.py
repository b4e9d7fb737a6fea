"""``GET /api/runs/{id}/context``: what a run sees, authenticated by the run's own token."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from config.api.routes import api_route
from memory_app.context import assembly as context
from memory_app.runs.api import RUN, RunTokenView


class RunContextView(RunTokenView):
    throttle_scopes = ("run",)

    @extend_schema(
        parameters=[
            OpenApiParameter("query", str, required=False),
            OpenApiParameter(
                "round",
                {"type": "integer", "minimum": 1, "maximum": context.MAX_ROUND},
                required=False,
                description="Optional: the server counts the run's context rounds itself (docs/runs.md, Context).",
            ),
        ],
        responses={200: dict},
    )
    def get(self, request: Request, run_id: str) -> Response:
        credential = self.credential(request, run_id)
        return Response(
            context.run_context_build(
                credential=credential,
                query=request.query_params.get("query", ""),
                round_number=context.context_round(request.query_params.get("round")),
                run=credential.run,  # read by this request's authentication
            )
        )


urlpatterns = [
    api_route(rf"runs/{RUN}/context", RunContextView.as_view(), "run-context"),
]
