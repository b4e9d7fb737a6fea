"""Project roles → permissions, and the one check every adapter uses."""

from django.contrib.auth.models import AbstractBaseUser, Permission
from django.db.models import Q

from config.errors import NotFound, PermissionDenied
from config.validation import is_valid_id
from identity_app.models import Membership, Project, Role

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


def role_permissions(role: str | None) -> frozenset[str]:
    return ROLE_PERMISSIONS.get(role, frozenset())


def is_service_principal(user: AbstractBaseUser) -> bool:
    """Holds an explicit ``run_agents`` grant (directly or through a group).

    Deliberately not ``has_perm``: that is True for every superuser, and an administrator
    of the console must not silently become an agent runtime that acts for every user.
    """
    if not (user and user.is_authenticated and user.is_active):
        return False
    cached = getattr(user, "_is_service_principal", None)
    if cached is None:
        app_label, codename = RUN_AGENTS_PERM.split(".")
        cached = (
            Permission.objects.filter(content_type__app_label=app_label, codename=codename)
            .filter(Q(user=user) | Q(group__user=user))
            .exists()
        )
        user._is_service_principal = cached
    return cached


def staff_may(actor: AbstractBaseUser, permission: str) -> bool:
    """Admin review: active staff holding ``permission`` (``app_label.codename``; superusers
    hold all). The one rule for every ``staff_review`` path."""
    return bool(actor and actor.is_authenticated and actor.is_active and actor.is_staff and actor.has_perm(permission))


def require_service_principal(actor: AbstractBaseUser) -> None:
    if not is_service_principal(actor):
        raise PermissionDenied("Only service principals may do this.", code="service_principal_required")


def may_write_global(actor: AbstractBaseUser) -> bool:
    """Global items reach every user's context, so writing them takes an explicit grant:
    service principals, or staff holding ``identity_app.write_global_memories``."""
    return is_service_principal(actor) or staff_may(actor, WRITE_GLOBAL_PERM)


def project_require_permission(*, user: AbstractBaseUser, project_id: str, permission: str) -> Project:
    """Return the project if ``user`` holds ``permission`` in it.

    A non-member gets NotFound (the project's existence is not revealed); a member without
    the permission gets PermissionDenied.
    """
    if not user or not user.is_authenticated or not is_valid_id(str(project_id)):
        raise NotFound("Project not found.")
    membership = Membership.objects.select_related("project").filter(project_id=str(project_id), user=user).first()
    if membership is None:
        raise NotFound("Project not found.")
    if permission not in role_permissions(membership.role):
        raise PermissionDenied(f"Your role '{membership.role}' in this project lacks the '{permission}' permission.")
    return membership.project


def project_ids_with_permission(*, user: AbstractBaseUser, permission: str = READ):
    """A queryset of project ids where ``user`` holds ``permission`` (for filters/subqueries)."""
    roles = [role for role, perms in ROLE_PERMISSIONS.items() if permission in perms]
    return Membership.objects.filter(user=user, role__in=roles).values("project_id")
