"""Reads of identity data: profiles, projects, memberships, users looked up by name, the
caller's API tokens, and project invitations."""

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, TypedDict

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import OuterRef, QuerySet, Subquery
from django.utils import timezone

from config.errors import InvalidInput, NotFound
from identity_app.errors import ErrorCode
from identity_app.models import ApiToken, Invitation, InvitationStatus, Membership, Profile, Project, User
from identity_app.permissions import (
    MANAGE,
    READ,
    may_act_for_user,
    project_ids_with_permission,
    project_require_permission,
    reach_allows_user,
    reach_q,
    token_reach,
)

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


class MyRole(TypedDict):
    """What ``projects_with_my_role`` adds to each project: the user's role in it."""

    my_role: str | None


def profile_get(*, user: User) -> Profile:
    profile, _ = Profile.objects.get_or_create(user=user)
    return profile


def projects_visible(*, user: User) -> QuerySet[Project]:
    return Project.objects.filter(pk__in=project_ids_with_permission(user=user, permission=READ))


def projects_with_my_role(*, user: User) -> "QuerySet[WithAnnotations[Project, MyRole]]":
    """``projects_visible`` with ``my_role``: the user's role in each, in the same query."""
    role = Membership.objects.filter(project=OuterRef("pk"), user=user).values("role")[:1]
    return projects_visible(user=user).annotate(my_role=Subquery(role))


def project_members(*, project: Project) -> QuerySet[Membership]:
    return project.memberships.select_related("user").order_by("created_at", "id")


def membership_role(*, user: User, project: Project) -> str | None:
    return Membership.objects.filter(user=user, project=project).values_list("role", flat=True).first()


def _unknown_user(username: object) -> NotFound:
    # Like every other id a body names that does not exist (a conversation, a project): 404.
    return NotFound(f"No active user named {username!r}.", code=ErrorCode.UNKNOWN_USER)


def user_find_active(*, username: object) -> User | None:
    if not isinstance(username, str) or not username:
        return None
    return get_user_model().objects.filter(username=username, is_active=True).first()


def user_get_active(*, username: object) -> User:
    """The active user called ``username``: unknown or inactive is a 404 ``unknown_user``, not a
    string a 400."""
    if not isinstance(username, str) or not username:
        raise InvalidInput("user must be a username.", code=ErrorCode.UNKNOWN_USER)
    user = user_find_active(username=username)
    if user is None:
        raise _unknown_user(username)
    return user


def user_get_acting(*, actor: User, username: object) -> User:
    """The user a service principal acts for: an active user within the reach of its token.
    A user outside that reach gets exactly the answer of one who does not exist."""
    user = user_get_active(username=username)
    if not reach_allows_user(actor, user.pk):
        raise _unknown_user(username)
    return user


def user_get_subject(*, actor: User, username: object) -> User:
    """The user whose own memories a call is about (the mem0-compatible API's ``user_id``, the
    ``("users", <name>)`` namespace of the store): the caller itself, named by its own username,
    or a user a service principal may act for (``may_act_for_user``). Any other name is answered
    exactly like a user that does not exist: 404 ``unknown_user``."""
    if not isinstance(username, str) or not username:
        raise InvalidInput("user_id must be a username.", code=ErrorCode.UNKNOWN_USER)
    user = actor if username == actor.get_username() else user_find_active(username=username)
    if user is None or not user.is_active or not may_act_for_user(actor, user.pk):
        raise _unknown_user(username)
    return user


# --- API tokens ----------------------------------------------------------------------------
def tokens_visible(*, user: User) -> QuerySet[ApiToken]:
    """The caller's own tokens, newest first; a limited token sees only itself (so it cannot
    rotate its way to a wider key)."""
    qs = ApiToken.objects.filter(user=user).order_by("-created_at", "-id")
    reach = token_reach(user)
    return qs if reach is None else qs.filter(pk=reach.token_id)


def token_get(*, user: User, token_id: int | str) -> ApiToken:
    token = tokens_visible(user=user).filter(pk=token_id).first() if str(token_id).isdigit() else None
    if token is None:
        raise NotFound("Token not found.")
    return token


def usernames_by_id(user_ids: Iterable[int]) -> dict[int, str]:
    """Usernames of the given ids in one query (for showing token limits)."""
    return dict(get_user_model().objects.filter(pk__in=list(user_ids)).values_list("pk", "username"))


# --- invitations ---------------------------------------------------------------------------
def invitation_expiry_cutoff(now: datetime | None = None) -> datetime:
    """Pending invitations created before this moment have expired."""
    return (now or timezone.now()) - timedelta(days=settings.INVITATION_EXPIRY_DAYS)


def invitations_pending_for(*, user: User) -> QuerySet[Invitation]:
    """Invitations waiting for ``user`` to accept or decline (not expired): only the invitee
    ever sees them."""
    return (
        Invitation.objects.filter(
            invitee=user, status=InvitationStatus.PENDING, created_at__gt=invitation_expiry_cutoff()
        )
        .filter(reach_q(user, user_field="invitee_id", project_field="project_id"))
        .select_related("project", "invited_by")
        .order_by("-created_at", "-id")
    )


def project_invitations(*, user: User, project_id: str) -> QuerySet[Invitation]:
    """A project's invitations, for its managers; whether a username exists does not show."""
    project = project_require_permission(user=user, project_id=project_id, permission=MANAGE)
    return project.invitations.select_related("invited_by").order_by("-created_at", "-id")
