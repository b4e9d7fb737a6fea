"""A history search's question given to the model while its request is still authenticated.

Most of a ``search_thread_messages`` call is the model embedding the question (about 20 ms on
one core); checking the run token before it is one statement and ~3 ms of Python. For a run
token with a credit (``memory_app.search.credits``: one per search of it answered in this
process), the next tool call's question is handed to the model (on a helper thread) *before*
the token is checked, so the two overlap; the search then takes the vector under way
(``history.history_search_early``). The credit module says what this may cost and why it is
bounded.
"""

import json

from django.core.exceptions import SuspiciousOperation
from django.http import RawPostDataException
from rest_framework import authentication
from rest_framework.request import Request

from memory_app.runs.leases import hash_run_token
from memory_app.search.credits import EarlyCredits
from memory_app.threads import history

_credits: EarlyCredits[int] = EarlyCredits()  # SHA-256 of a run token -> its run's user id


def grant(*, token_hash: str, user_id: int) -> None:
    """A search of this token was answered: its next request may start early."""
    _credits.grant(token_hash, user_id)


def start(request: Request) -> bool:
    """Hand the question of this not yet authenticated ``search_thread_messages`` request to the
    model if its token has a credit (spent now); never raises, never refuses: whatever is wrong
    with the request is found, and answered, by the normal checks after this."""
    header = authentication.get_authorization_header(request).split()
    if len(header) != 2 or header[0].lower() != b"run" or len(header[1]) > 300:
        return False
    user_id = _credits.spend(hash_run_token(header[1].decode("ascii", "replace")))
    if user_id is None:
        return False
    try:
        arguments = json.loads(request.body)
    except (ValueError, RecursionError, OSError, SuspiciousOperation, RawPostDataException):
        return False  # not JSON, too deep, unreadable or too large: the normal path says which
    if not isinstance(arguments, dict):
        return False
    return history.history_search_early(user_id=user_id, query=arguments.get("query"))
