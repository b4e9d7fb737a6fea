"""A list search's question given to the model while its request is still authenticated.

``GET /api/users/me/memories?q=…`` (and a project's list) with ``Authorization: Token …``: for
an API token with a credit (``memory_app.search.credits``: one per list search of it answered
in this process), the question is handed to the model (on a helper thread) *before* the token
is checked, the filters are read and the words are ranked, so the embedding overlaps them; the
search then takes the vector under way (``engine.search_early``). The credit module says what
this may cost and why it is bounded. Session-authenticated pages do not start early.
"""

from rest_framework import authentication
from rest_framework.request import Request

from identity_app.models import ApiToken, hash_token
from memory_app.memories.filters import FLOORED, SEARCH_MAX_CHARS, SEARCH_PARAMS
from memory_app.search import engine
from memory_app.search.credits import EarlyCredits

_credits: EarlyCredits[bool] = EarlyCredits()  # SHA-256 of an API token -> True


def _question(request: Request) -> str:
    """The list's search as the filter reads it (the first of ``q``, ``search`` that is given),
    or "" for none or one the filter refuses (too long)."""
    params = request.query_params
    value = next((params.get(name) for name in SEARCH_PARAMS if params.get(name)), "") or ""
    value = value.strip()
    return value if len(value) <= SEARCH_MAX_CHARS else ""


def start(request: Request) -> bool:
    """Hand this not yet authenticated list request's question to the model if it has one and
    its API token has a credit (spent now); never raises, never refuses: whatever is wrong with
    the request is found, and answered, by the normal checks after this."""
    question = _question(request) if request.method == "GET" else ""
    if not question:
        return False
    header = authentication.get_authorization_header(request).split()
    if len(header) != 2 or header[0].lower() != b"token" or len(header[1]) > 300:
        return False
    if _credits.spend(hash_token(header[1].decode("ascii", "replace"))) is None:
        return False
    return engine.search_early(question, floor=FLOORED)


def grant(request: Request) -> None:
    """This list request, authenticated with an API token, was answered: if it searched, the
    token's next list request may start early."""
    if request.method == "GET" and isinstance(request.auth, ApiToken) and _question(request):
        _credits.grant(request.auth.key_hash, True)
