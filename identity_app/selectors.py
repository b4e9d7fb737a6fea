from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from identity_app.models import Membership, Profile, Project
from identity_app.permissions import READ, project_ids_with_permission


def profile_get(*, user: AbstractBaseUser) -> Profile:
    profile, _ = Profile.objects.get_or_create(user=user)
    return profile


def projects_visible(*, user: AbstractBaseUser) -> QuerySet[Project]:
    return Project.objects.filter(pk__in=project_ids_with_permission(user=user, permission=READ))


def project_members(*, project: Project) -> QuerySet[Membership]:
    return project.memberships.select_related("user").order_by("created_at", "id")


def membership_role(*, user: AbstractBaseUser, project: Project) -> str | None:
    return (
        Membership.objects.filter(user=user, project=project).values_list("role", flat=True).first()
    )
