"""The OpenAPI schema: the JSON error shape documented on every operation
(``schema_error_responses``, a drf-spectacular postprocessing hook), and whether a view is being
introspected for it (``is_schema_generation``)."""

from rest_framework.request import Request


def is_schema_generation(view) -> bool:
    """True while drf-spectacular introspects a view (no real request or URL kwargs)."""
    return getattr(view, "swagger_fake_view", False)


ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "details": {"description": "Field errors, for validation failures."},
                "request_id": {"type": "string", "description": "The request's id, also sent as `X-Request-ID`."},
            },
            "required": ["code", "message"],
        }
    },
    "required": ["error"],
}
_ERROR_STATUSES = {
    "400": "Invalid input (the error shape; `details` names the fields).",
    "401": "Missing, forged, expired or revoked credentials.",
    "403": "Visible but not allowed.",
    "404": "Missing, or not yours.",
    "409": "A state conflict.",
    "413": "The request body is over the size limit.",
    "415": "The request body is not JSON.",
    "429": "Throttled; retry after `Retry-After` seconds.",
}


def schema_error_responses(result, generator, request: Request | None, public):
    """Every operation documents the JSON error shape for the statuses it may answer with:
    400, 401, 403, 404 and 429 everywhere (400: every operation refuses a query parameter it does
    not take, ``config.api.query``, besides what it refuses of its body or parameters); 409 for
    writes; 413 and 415 where it takes a body."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    reference = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            statuses = ["400", "401", "403", "404", "429"]
            has_body = "requestBody" in operation
            if method in ("post", "put", "patch", "delete"):
                statuses.append("409")
            if has_body:
                statuses += ["413", "415"]
            for status in sorted(statuses):
                response = {"description": _ERROR_STATUSES[status], "content": reference}
                if status == "429":
                    response["headers"] = {"Retry-After": {"schema": {"type": "integer"}}}
                operation["responses"].setdefault(status, response)
    return result


def only_api_paths(endpoints):
    """The schema documents the API under ``/api/``: the same views mounted elsewhere (the
    mem0-compatible API at the site root) are described once, under ``/api/mem0/``."""
    return [endpoint for endpoint in endpoints if endpoint[0].startswith("/api/")]
