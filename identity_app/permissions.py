"""Project roles → permissions, and the one check every adapter uses; the reach of a limited
API token (``TokenReach``), which every selector and service that acts for another user or
on a project applies through the functions below."""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db.models import Exists, OuterRef, Q, QuerySet

from config.errors import InvalidInput, NotFound, PermissionDenied
from config.validation import is_valid_id
from identity_app.errors import ErrorCode
from identity_app.models import ApiToken, Membership, Project, Role, User

READ = "read"
CREATE_TASK = "create_task"
MANAGE = "manage"

ROLE_PERMISSIONS: dict[str, frozenset[str]] = {
    Role.OWNER: frozenset({READ, CREATE_TASK, MANAGE}),
    Role.ADMIN: frozenset({READ, CREATE_TASK, MANAGE}),
    Role.MEMBER: frozenset({READ, CREATE_TASK}),
    Role.VIEWER: frozenset({READ}),
}

RUN_AGENTS_PERM = "identity_app.run_agents"
WRITE_GLOBAL_PERM = "identity_app.write_global_memories"
# ``is_service_principal``'s answer, kept on the user object for the rest of its request.
_SERVICE_PRINCIPAL_ATTR = "_is_service_principal"


def role_permissions(role: str | None) -> frozenset[str]:
    return ROLE_PERMISSIONS.get(role, frozenset()) if role else frozenset()


def is_service_principal(user: User) -> bool:
    """Holds an explicit ``run_agents`` grant (directly or through a group).

    Deliberately not ``has_perm``: that is True for every superuser, and an administrator
    of the console must not silently become an agent runtime that acts for every user.
    """
    if not (user and user.is_authenticated and user.is_active):
        return False
    cached = getattr(user, _SERVICE_PRINCIPAL_ATTR, None)
    if cached is None:
        cached = _run_agents_grants(user).exists()
        setattr(user, _SERVICE_PRINCIPAL_ATTR, cached)
    return cached


def _run_agents_grants(user_ref: object) -> QuerySet[Permission]:
    app_label, codename = RUN_AGENTS_PERM.split(".")
    return Permission.objects.filter(content_type__app_label=app_label, codename=codename).filter(
        Q(user=user_ref) | Q(group__user=user_ref)
    )


def service_principal_exists(user_field: str) -> Exists:
    """``is_service_principal`` of the row's user (``user_field``) as a query expression, so an
    authentication lookup reads it with the user; pass the value to
    ``service_principal_attach``."""
    return Exists(_run_agents_grants(OuterRef(user_field)))


def service_principal_attach(user: User, value: bool) -> None:
    """Keep the grant read with the user for ``is_service_principal`` (one request's user object)."""
    setattr(user, _SERVICE_PRINCIPAL_ATTR, bool(value))


def service_principal_ids(user_ids: Iterable[int]) -> set[int]:
    """Which of ``user_ids`` are service principals (the rule of ``is_service_principal``, for
    many users in one query)."""
    ids = {int(i) for i in user_ids if i is not None}
    if not ids:
        return set()
    app_label, codename = RUN_AGENTS_PERM.split(".")
    direct = Q(user_permissions__content_type__app_label=app_label, user_permissions__codename=codename)
    via_group = Q(groups__permissions__content_type__app_label=app_label, groups__permissions__codename=codename)
    holders = get_user_model().objects.filter(direct | via_group, pk__in=ids, is_active=True)
    return set(holders.values_list("pk", flat=True).distinct())


def staff_may(actor: User, permission: str) -> bool:
    """Admin review: active staff holding ``permission`` (``app_label.codename``; superusers
    hold all). The one rule for every ``staff_review`` path."""
    return bool(actor and actor.is_authenticated and actor.is_active and actor.is_staff and actor.has_perm(permission))


def require_service_principal(actor: User) -> None:
    if not is_service_principal(actor):
        raise PermissionDenied("Only service principals may do this.", code=ErrorCode.SERVICE_PRINCIPAL_REQUIRED)


# --- the reach of a limited token ----------------------------------------------------------
@dataclass(frozen=True)
class TokenReach:
    """Where a limited API token may act (docs/API.md, "API tokens").

    ``user_ids``: the users it may act for and whose rows it may see (their private chats
    included); ``project_ids``: the projects it may work in. ``None`` leaves that axis open;
    with both set, both hold. Anything outside is answered as if it did not exist.
    """

    token_id: int
    user_ids: frozenset[int] | None
    project_ids: frozenset[str] | None


_REACH_ATTR = "_token_reach"


def token_reach_attach(user: User, token: ApiToken) -> None:
    """Called by the token authentication: the request's user carries its token's reach."""
    if token.restricted:
        reach = TokenReach(
            token_id=token.pk,
            user_ids=None if token.only_user_ids is None else frozenset(int(i) for i in token.only_user_ids),
            project_ids=None if token.only_project_ids is None else frozenset(str(i) for i in token.only_project_ids),
        )
        setattr(user, _REACH_ATTR, reach)


def token_reach(actor: User) -> TokenReach | None:
    """The reach of the token ``actor`` authenticated with; ``None``: not limited (any
    unlimited token, a web session, a command)."""
    return getattr(actor, _REACH_ATTR, None)


def reach_allows_user(actor: User, user_id: int) -> bool:
    """May ``actor`` act for (or as) the user ``user_id``?"""
    reach = token_reach(actor)
    return reach is None or reach.user_ids is None or user_id in reach.user_ids


def reach_allows_project(actor: User, project_id: str | None) -> bool:
    """May ``actor`` work in the project ``project_id`` (``None``: outside any project)?"""
    reach = token_reach(actor)
    return (
        reach is None or reach.project_ids is None or (project_id is not None and str(project_id) in reach.project_ids)
    )


def may_act_for_user(actor: User, user_id: int) -> bool:
    """May ``actor`` read and write the own memories (the user tier) of the user ``user_id``?
    The user itself, through a key within its own reach; or a service principal whose token
    may act for that user (``reach_allows_user``) and carries no project limit: a user's own
    memories belong to no project, as a chat belongs to none (docs/integrations.md)."""
    if not (actor and actor.is_authenticated and actor.is_active) or user_id is None:
        return False
    if not reach_allows_user(actor, user_id):
        return False
    if actor.pk == user_id:
        return True
    reach = token_reach(actor)
    return is_service_principal(actor) and (reach is None or reach.project_ids is None)


def acting_for_users_q(actor: User, *, user_field: str) -> Q:
    """``may_act_for_user`` as a filter: the rows (of users, ``user_field``) whose user ``actor``
    may act for."""
    if not (actor and actor.is_authenticated and actor.is_active):
        return Q(pk__in=[])
    reach = token_reach(actor)
    itself = Q(**{user_field: actor.pk}) if reach_allows_user(actor, actor.pk) else Q(pk__in=[])
    if not is_service_principal(actor) or (reach is not None and reach.project_ids is not None):
        return itself
    if reach is None or reach.user_ids is None:
        return Q()
    return Q(**{f"{user_field}__in": sorted(reach.user_ids)})


def reach_require_project(actor: User, project_id: str | None) -> None:
    """For work that a service principal starts for a user (a conversation, a run): inside a
    project of the token's reach. A project outside it is answered like a missing one."""
    if reach_allows_project(actor, project_id):
        return
    if project_id is None:
        raise InvalidInput(
            "This token works only inside its projects; give project_id.", code=ErrorCode.PROJECT_REQUIRED
        )
    raise NotFound("Project not found.")


def reach_q(actor: User, *, user_field: str, project_field: str | None) -> Q:
    """Rows within reach: those of a user in its reach (``user_field``) and in a project in its
    reach (``project_field``; ``None``: rows of that kind belong to no project)."""
    reach = token_reach(actor)
    rule = Q()
    if reach is None:
        return rule
    if reach.user_ids is not None:
        rule &= Q(**{f"{user_field}__in": reach.user_ids})
    if reach.project_ids is not None:
        rule &= Q(**{f"{project_field}__in": reach.project_ids}) if project_field else Q(pk__in=[])
    return rule


GLOBAL_WRITE_REFUSED = (
    "Global memories reach everyone: writing them takes the identity_app.write_global_memories permission."
)


def may_write_global(actor: User, *, operator: bool = False) -> bool:
    """The global-write rule (docs/tiers.md). Global items reach every user's context, so
    writing them takes an explicit grant: staff holding ``identity_app.write_global_memories``,
    or a service principal with an unlimited token (its consolidation, its migrations).

    ``operator``: the write is an operator's decision — a global scope chosen explicitly instead
    of the one a chat's kind leads to, or the approval of a global candidate. Staff only: what a
    chat's bots learn reaches everyone through that review, never because a token asked."""
    if not operator and is_service_principal(actor):
        return token_reach(actor) is None
    return staff_may(actor, WRITE_GLOBAL_PERM)


def global_write_require(actor: User, *, operator: bool = False) -> None:
    """``may_write_global``, or 403 with the one message that names the permission."""
    if not may_write_global(actor, operator=operator):
        raise PermissionDenied(GLOBAL_WRITE_REFUSED)


def project_require_permission(*, user: User, project_id: str, permission: str) -> Project:
    """Return the project if ``user`` holds ``permission`` in it.

    A non-member gets NotFound (the project's existence is not revealed); a member without
    the permission gets PermissionDenied.
    """
    if not user or not user.is_authenticated or not is_valid_id(str(project_id)):
        raise NotFound("Project not found.")
    if not reach_allows_project(user, project_id):  # outside a limited token's projects
        raise NotFound("Project not found.")
    membership = Membership.objects.select_related("project").filter(project_id=str(project_id), user=user).first()
    if membership is None:
        raise NotFound("Project not found.")
    if permission not in role_permissions(membership.role):
        raise PermissionDenied(f"Your role '{membership.role}' in this project lacks the '{permission}' permission.")
    return membership.project


def project_ids_with_permission(*, user: User, permission: str = READ) -> QuerySet[Membership, Any]:
    """A queryset of project ids where ``user`` holds ``permission`` (for filters/subqueries)."""
    roles = [role for role, perms in ROLE_PERMISSIONS.items() if permission in perms]
    reach = token_reach(user)
    memberships = Membership.objects.filter(user=user, role__in=roles)
    if reach is not None and reach.project_ids is not None:
        memberships = memberships.filter(project_id__in=reach.project_ids)
    return memberships.values("project_id")
