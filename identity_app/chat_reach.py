"""Chat reach: the one rule that decides whether a principal may use a chat key
(docs/API.md, "Chat reach").

Every path that takes a chat or session key asks it — conversations (``session_key``), starting
or taking over a run in such a conversation, a run's context (the scoped section), chat bindings, ``/api/memory/*``, the MCP chat search, background
jobs that act on a session — and a chat out of reach is answered exactly like a chat that does
not exist: 404 ``not_found`` (``chat_require_reach``), or no items.

A session key names its chat by its first three parts: ``milky:private:10001:cron:abc`` is the
chat ``milky:private:10001``. A legacy key (``milky:10001``) names no chat (its scope is
global, under the global tier's own rules) and a malformed key is a 400
``invalid_session_key`` before any reach is looked at.

The rule (``_decide``), for the user ``B`` a chat is bound to (``None``: bound to nobody — every
group chat, and a private chat not bound yet):

1. Work done for a user (a conversation, a run, an MCP session acting for someone) never
   reaches a private chat bound to another user, whoever asks: ``B`` is that user or nobody.
2. A user who is not a service principal reaches the chats bound to them, and nothing else.
3. A service principal reaches every chat with an unlimited token (or a session, a command).
4. A limited service token reaches the chats bound to users in its user limit; limited to
   projects, it reaches no chat (chats belong to no project). A chat bound to nobody is never
   in a limited token's reach.
5. A run reaches what rule 1 leaves for its user (the chats bound to its user or to nobody):
   the authority of whoever gave its conversation the key was checked then (rules 1–4), and
   the key never changes afterwards. A chat since bound to someone else drops out at once.

Binding a chat to a user widens what that user and the tokens limited to them reach, so only a
principal whose reach already covers every chat may bind (``may_bind_chats``): a service
principal with an unlimited token, or staff holding ``identity_app.add_chatbinding``.
"""

from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.db.models import QuerySet

from config.errors import NotFound
from identity_app.models import ChatBinding, User
from identity_app.permissions import TokenReach, is_service_principal, reach_q, token_reach
from identity_app.session_keys import SessionKey

ALL_CHATS = None  # what ``chat_keys_reachable`` returns for a principal that reaches every chat

CHAT_NOT_FOUND = "Chat not found."


def _reach_covers_binding(reach: TokenReach | None, bound_to: int | None) -> bool:
    """A limited token covers a chat bound to a user in its user limit, and only outside a
    project limit (the ``reach_q`` of a binding's user, with no project)."""
    if reach is None:
        return True
    if bound_to is None or reach.project_ids is not None:
        return False
    return reach.user_ids is None or bound_to in reach.user_ids


def _decide(
    *, bound_to: int | None, actor_id: int | None, service: bool, reach: TokenReach | None, acting_for_id: int | None
) -> bool:
    """The rule of the module docstring; ``bound_to``: the user the chat is bound to."""
    if acting_for_id is not None and bound_to is not None and bound_to != acting_for_id:
        return False  # 1: someone else's private chat
    if not service:
        return bound_to is not None and bound_to == actor_id and _reach_covers_binding(reach, bound_to)  # 2
    return _reach_covers_binding(reach, bound_to)  # 3, 4 (5: a run is an unlimited service acting for its user)


def _bound_to(chat_key: str) -> int | None:
    """The user the chat is bound to (one indexed lookup; ``chat_key`` is unique)."""
    rows = list(ChatBinding.objects.filter(chat_key=chat_key).values_list("user_id", flat=True)[:1])
    return rows[0] if rows else None


def _authenticated(user: User | AnonymousUser | None) -> bool:
    return bool(user is not None and user.is_authenticated and user.is_active)


def chat_of_session(session_key: str) -> str | None:
    """The chat key a session key names (lanes dropped); ``None`` for a legacy key. A
    malformed key raises ``InvalidSessionKey`` (400)."""
    address = SessionKey.parse(session_key).address
    return address.chat_key if address.is_typed else None


def chat_in_reach(*, actor: User, chat_key: str, acting_for_id: int | None = None) -> bool:
    """May ``actor`` (with its token's limits) use the chat ``chat_key``, working for the user
    ``acting_for_id`` if given? At most one query with token authentication (the binding), two
    with a session (the ``run_agents`` grant, then cached on the user)."""
    if not _authenticated(actor):
        return False
    service = is_service_principal(actor)
    reach = token_reach(actor)
    if service and reach is None and acting_for_id is None:
        return True  # 3: nothing to look up
    return _decide(
        bound_to=_bound_to(chat_key), actor_id=actor.pk, service=service, reach=reach, acting_for_id=acting_for_id
    )


def chat_in_reach_of_run(*, user_id: int, chat_key: str) -> bool:
    """Rule 5: may a run of the user ``user_id`` use the chat ``chat_key``? One query."""
    return _decide(bound_to=_bound_to(chat_key), actor_id=None, service=True, reach=None, acting_for_id=user_id)


def chat_require_reach(*, actor: User, session_key: str, acting_for_id: int | None = None) -> str | None:
    """The chat ``session_key`` names if ``actor`` may use it (``None`` for a legacy key, which
    names no chat); a chat out of reach raises NotFound exactly as a chat that does not exist;
    a malformed key raises ``InvalidSessionKey``."""
    chat_key = chat_of_session(session_key)
    if chat_key is not None and not chat_in_reach(actor=actor, chat_key=chat_key, acting_for_id=acting_for_id):
        raise NotFound(CHAT_NOT_FOUND)
    return chat_key


def chat_keys_reachable(*, actor: User) -> QuerySet[ChatBinding, Any] | None:
    """The same rule for lists (chat memories, bindings): ``ALL_CHATS`` when ``actor`` reaches
    every chat, else a values queryset of the chat keys it reaches (usable as a subquery).
    ``chat_in_reach(actor=a, chat_key=k)`` holds exactly for the keys listed here."""
    if not _authenticated(actor):
        return ChatBinding.objects.none().values("chat_key")
    within = reach_q(actor, user_field="user_id", project_field=None)
    if is_service_principal(actor):
        return ALL_CHATS if token_reach(actor) is None else ChatBinding.objects.filter(within).values("chat_key")
    return ChatBinding.objects.filter(within, user=actor).values("chat_key")


def manages_chat_bindings(actor: User) -> bool:
    """Who manages chat bindings: service principals, and staff explicitly allowed to. The bare
    staff flag is not enough: a binding grants read access to a private chat's memories, so it
    takes the ``identity_app.add_chatbinding`` permission (superusers hold it)."""
    if not _authenticated(actor):
        return False
    return is_service_principal(actor) or (actor.is_staff and actor.has_perm("identity_app.add_chatbinding"))


def may_bind_chats(actor: User) -> bool:
    """Who may bind a chat to a user: a manager (``manages_chat_bindings``) whose reach already
    covers every chat, since a binding widens what the user and the tokens limited to them
    reach — so never through a limited token."""
    return manages_chat_bindings(actor) and token_reach(actor) is None
