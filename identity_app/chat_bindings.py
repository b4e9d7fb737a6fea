"""Chat bindings: which user a private chat address belongs to (docs/tiers.md).

A bound user may read that chat's memories; service principals act for every chat without
one. Bindings are made by a service principal with an unlimited token (a bot knows whose
private chat it is talking in) or by staff holding the ``add_chatbinding`` permission: a
binding widens what its user and the tokens limited to them reach, so a limited token never
makes one (``identity_app.chat_reach.may_bind_chats``). A user may remove their own binding.
"""

from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from config.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from config.validation import clean_text
from identity_app.chat_reach import manages_chat_bindings, may_bind_chats
from identity_app.errors import ErrorCode
from identity_app.models import ChatBinding, User
from identity_app.permissions import reach_q
from identity_app.selectors import user_get_acting
from identity_app.session_keys import ChatAddress

BINDABLE_TARGET_TYPES = frozenset({"private", "dm"})


def chat_bindings_visible(*, user: User) -> QuerySet[ChatBinding]:
    """Managers see every binding (a limited service token: those of users in its reach);
    anyone else their own."""
    qs = ChatBinding.objects.select_related("user").order_by("chat_key")
    qs = qs if manages_chat_bindings(user) else qs.filter(user=user)
    return qs.filter(reach_q(user, user_field="user", project_field=None))


def chat_binding_create(*, actor: User, chat_key: str, username: str) -> ChatBinding:
    if not manages_chat_bindings(actor):
        raise PermissionDenied("Only service principals and staff allowed to manage chat bindings may bind chats.")
    address = ChatAddress.parse(chat_key)
    if address.target_type not in BINDABLE_TARGET_TYPES:
        raise InvalidInput("Only private chats can be bound to a user.", code=ErrorCode.INVALID_CHAT_KEY)
    # A user outside a limited token's reach first, answered like a user who does not exist;
    # then the same refusal for every chat and every user in reach, so it reveals nothing.
    user = user_get_acting(actor=actor, username=username)
    if not may_bind_chats(actor):
        raise PermissionDenied(
            "A limited token cannot bind chats: a binding widens what tokens reach.", code=ErrorCode.TOKEN_LIMITED
        )
    try:
        with transaction.atomic():
            return ChatBinding.objects.create(chat_key=address.chat_key, user=user)
    except IntegrityError:
        raise Conflict(f"{address.chat_key} is already bound.", code=ErrorCode.ALREADY_BOUND) from None


def chat_binding_delete(*, actor: User, binding_id: int) -> None:
    with transaction.atomic():
        binding = chat_bindings_visible(user=actor).select_for_update().filter(pk=binding_id).first()
        if binding is None:
            raise NotFound("Chat binding not found.")
        binding.delete()


MAX_DISPLAY_NAME = 100


def chat_binding_rename(*, actor: User, chat_key: str, display_name: str, own_only: bool = True) -> ChatBinding:
    """Give a bound chat a readable name (empty: show its key). The bound user renames their own
    chats; with ``own_only=False`` (the admin) managers any chat they see."""
    display_name = clean_text((display_name or "").strip(), field="display_name")
    if len(display_name) > MAX_DISPLAY_NAME:
        raise InvalidInput(f"display_name is longer than {MAX_DISPLAY_NAME} characters.", code=ErrorCode.INVALID_TEXT)
    with transaction.atomic():
        bindings = chat_bindings_visible(user=actor).select_for_update().filter(chat_key=str(chat_key)[:200])
        binding = (bindings.filter(user=actor) if own_only else bindings).first()
        if binding is None:
            raise NotFound("Chat not found.")
        binding.display_name = display_name
        binding.full_clean()
        binding.save(update_fields=["display_name"])
    return binding
