"""One tool call: the tool looked up for the session, its arguments checked against the schema
(problems told without echoing values), the rate limits charged, then the handler run."""

from django.conf import settings

from config.errors import InvalidInput, NotFound
from config.throttling import RunThrottle, ScopeThrottle, SearchThrottle
from memory_app.mcp.auth import Principal
from memory_app.mcp.errors import ErrorCode
from memory_app.mcp.tools.catalog import TOOLS_BY_NAME, tools_for
from memory_app.mcp.tools.spec import RUN_TOOLS, CallContext, Throttled
from memory_app.reads import recorder as reads
from memory_app.runs import tools as agent_tools


def charge_throttles(principal: Principal, scopes: tuple[str, ...]) -> None:
    """The REST API's rate limits (``config.throttling``), counted against the same identities:
    run scope per run user, search per caller."""
    if not settings.API_THROTTLE:
        return
    for scope in scopes:
        throttle: ScopeThrottle = RunThrottle() if scope == "run" else SearchThrottle()
        ident = principal.user if scope == "run" else principal.actor
        if not throttle.charge(f"user:{ident.pk}"):
            raise Throttled(
                f"Too many requests; try again in {throttle.wait()} seconds.", details={"retry_after": throttle.wait()}
            )


MAX_ECHOED_NAME = 40
MAX_PROBLEM_CHARS = 300


def _name(value) -> str:
    """A name the client sent (an argument's key), cut to ``MAX_ECHOED_NAME`` characters."""
    text = str(value)
    return repr(text if len(text) <= MAX_ECHOED_NAME else text[:MAX_ECHOED_NAME] + "…")


def argument_problem(error) -> str:
    """What is wrong with a tool argument, from the schema's rule, never from the rejected
    value: a sentence of at most ``MAX_PROBLEM_CHARS`` characters."""
    where = ".".join(_name(part) if isinstance(part, str) else str(part) for part in list(error.path)[:5])
    rule, limit = error.validator, error.validator_value
    if rule == "required":
        missing = [name for name in limit if not isinstance(error.instance, dict) or name not in error.instance]
        text = f"{_name(missing[0]) if missing else 'an argument'} is required"
    elif rule == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))[:3]
        text = f"unknown argument(s): {', '.join(map(_name, extra))}"
    else:
        text = {
            "type": f"must be of type {limit}",
            "maxLength": f"must be at most {limit} characters",
            "minLength": f"must be at least {limit} character(s)",
            "maximum": f"must be at most {limit}",
            "minimum": f"must be at least {limit}",
            "maxItems": f"must have at most {limit} item(s)",
            "minItems": f"must have at least {limit} item(s)",
            "enum": f"must be one of {', '.join(map(str, limit))}" if isinstance(limit, list) else "is not allowed",
            "pattern": "does not have the expected form",
            "format": f"is not a valid {limit}",
        }.get(rule, f"does not satisfy {rule!s}")
    text = f"{where}: {text}" if where else text
    return text if len(text) <= MAX_PROBLEM_CHARS else text[: MAX_PROBLEM_CHARS - 1] + "…"


def tool_call(*, ctx: CallContext, name: str, arguments) -> dict:
    """Run one tool as the session's principal. Domain errors propagate (the transport turns
    them into tool errors); unknown tools, tools this session does not get and arguments that
    do not fit the schema are refused before anything runs."""
    spec = TOOLS_BY_NAME.get(name)
    if spec is None or spec not in tools_for(ctx.principal):
        if spec is not None and spec.name in RUN_TOOLS:  # offered to every session, but only while memory is on
            raise agent_tools.MemoryDisabled("Memory is turned off for this user.")
        raise NotFound(f"Unknown tool {name!r}.", code=ErrorCode.UNKNOWN_TOOL)
    arguments = {} if arguments is None else arguments
    if not isinstance(arguments, dict):
        raise InvalidInput("Tool arguments must be a JSON object.", code=ErrorCode.INVALID_ARGUMENTS)
    error = next(iter(sorted(spec.validator.iter_errors(arguments), key=lambda e: list(e.path))), None)
    if error is not None:
        raise InvalidInput(argument_problem(error), code=ErrorCode.INVALID_ARGUMENTS)
    charge_throttles(ctx.principal, spec.throttle)
    with reads.reading_as(principal_id=ctx.principal.actor.pk, token_id=ctx.principal.token_id):
        return spec.handler(ctx, **arguments)
