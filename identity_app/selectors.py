"""Reads of identity data: profiles, projects, memberships, and users looked up by name."""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import OuterRef, QuerySet, Subquery

from config.errors import InvalidInput
from identity_app.models import Membership, Profile, Project
from identity_app.permissions import READ, project_ids_with_permission


def profile_get(*, user: AbstractBaseUser) -> Profile:
    profile, _ = Profile.objects.get_or_create(user=user)
    return profile


def projects_visible(*, user: AbstractBaseUser) -> QuerySet[Project]:
    return Project.objects.filter(pk__in=project_ids_with_permission(user=user, permission=READ))


def projects_with_my_role(*, user: AbstractBaseUser) -> QuerySet[Project]:
    """``projects_visible`` with ``my_role``: the user's role in each, in the same query."""
    role = Membership.objects.filter(project=OuterRef("pk"), user=user).values("role")[:1]
    return projects_visible(user=user).annotate(my_role=Subquery(role))


def project_members(*, project: Project) -> QuerySet[Membership]:
    return project.memberships.select_related("user").order_by("created_at", "id")


def membership_role(*, user: AbstractBaseUser, project: Project) -> str | None:
    return Membership.objects.filter(user=user, project=project).values_list("role", flat=True).first()


def user_get_active(*, username) -> AbstractBaseUser:
    """The active user called ``username``; anything else (unknown, inactive, not a string) is
    a 400 ``unknown_user``."""
    if not isinstance(username, str) or not username:
        raise InvalidInput("user must be a username.", code="unknown_user")
    user = get_user_model().objects.filter(username=username, is_active=True).first()
    if user is None:
        raise InvalidInput(f"No active user named {username!r}.", code="unknown_user")
    return user
