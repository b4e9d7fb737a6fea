import secrets

from django.contrib.auth.models import AbstractBaseUser, Permission
from django.db import IntegrityError, transaction

from config.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from identity_app.models import MAX_DESCRIPTION_CHARS, ApiToken, Membership, Profile, Project, Role, hash_token
from identity_app.permissions import MANAGE, project_require_permission, staff_may
from identity_app.selectors import membership_role, user_get_active

_UNSET = object()


def profile_update(
    *,
    user: AbstractBaseUser,
    display_name=_UNSET,
    timezone=_UNSET,
    preferences=_UNSET,
) -> Profile:
    with transaction.atomic():
        profile, _ = Profile.objects.select_for_update().get_or_create(user=user)
        fields = []
        for name, value in (
            ("display_name", display_name),
            ("timezone", timezone),
            ("preferences", preferences),
        ):
            if value is not _UNSET:
                setattr(profile, name, value)
                fields.append(name)
        # full_clean runs the timezone and credential-key validators; nothing is saved on error.
        profile.full_clean()
        profile.save(update_fields=[*fields, "updated_at"] if fields else None)
    return profile


def _check_description(description) -> None:
    # TextField.max_length is not enforced by full_clean(); the service enforces it for every adapter.
    if description is not _UNSET and len(description or "") > MAX_DESCRIPTION_CHARS:
        raise InvalidInput(f"description is longer than {MAX_DESCRIPTION_CHARS} characters.", code="too_large")


def project_create(*, actor: AbstractBaseUser, name: str, description: str = "") -> Project:
    _check_description(description)
    with transaction.atomic():
        project = Project(name=name, description=description, created_by=actor)
        project.full_clean()
        project.save()
        Membership.objects.create(project=project, user=actor, role=Role.OWNER)
    return project


def _project_to_manage(*, actor, project_id: str, staff_review: bool, admin_permission: str) -> Project:
    """The project ``actor`` may manage: as a member with ``manage`` or, in the admin
    (``staff_review``), as active staff holding ``admin_permission`` (``change_project`` …)."""
    if not staff_review:
        return project_require_permission(user=actor, project_id=project_id, permission=MANAGE)
    if not staff_may(actor, f"identity_app.{admin_permission}"):
        raise PermissionDenied(f"This needs the identity_app.{admin_permission} permission.")
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        raise NotFound("Project not found.")
    return project


def project_update(*, actor, project_id: str, name=_UNSET, description=_UNSET, staff_review: bool = False) -> Project:
    _check_description(description)
    with transaction.atomic():
        project = _project_to_manage(
            actor=actor, project_id=project_id, staff_review=staff_review, admin_permission="change_project"
        )
        project = Project.objects.select_for_update().get(pk=project.pk)
        fields = []
        if name is not _UNSET:
            project.name, fields = name, [*fields, "name"]
        if description is not _UNSET:
            project.description, fields = description, [*fields, "description"]
        project.full_clean()
        if fields:
            project.save(update_fields=fields)
    return project


def project_delete(*, actor, project_id: str, staff_review: bool = False) -> None:
    """Delete a project with its memberships and memories (cascade); owners only, or staff
    reviewing in the admin."""
    with transaction.atomic():
        project = _project_to_manage(
            actor=actor, project_id=project_id, staff_review=staff_review, admin_permission="delete_project"
        )
        if not staff_review:
            _require_owner_for_owner_changes(actor=actor, project=project, roles=(Role.OWNER,))
        project.delete()


def ensure_an_owner_remains(project: Project) -> None:
    if not Membership.objects.filter(project=project, role=Role.OWNER).exists():
        raise Conflict("A project must keep at least one owner.", code="last_owner")


def _require_owner_for_owner_changes(*, actor, project: Project, roles, staff_review: bool = False) -> None:
    """Granting, changing or removing the owner role takes an owner (or staff reviewing in the
    admin); a project admin must not be able to promote themselves and then remove the
    original owner."""
    if Role.OWNER in roles and not staff_review and membership_role(user=actor, project=project) != Role.OWNER:
        raise PermissionDenied("Only an owner may grant, change or remove the owner role.", code="owner_required")


def membership_add(*, actor, project_id: str, username: str, role: str, staff_review: bool = False) -> Membership:
    if role not in Role.values:
        raise InvalidInput(f"Unknown role {role!r}.", code="invalid_role")
    with transaction.atomic():
        project = _project_to_manage(
            actor=actor, project_id=project_id, staff_review=staff_review, admin_permission="add_membership"
        )
        _require_owner_for_owner_changes(actor=actor, project=project, roles=(role,), staff_review=staff_review)
        user = user_get_active(username=username)
        try:
            with transaction.atomic():
                return Membership.objects.create(project=project, user=user, role=role)
        except IntegrityError:
            raise Conflict(f"{username!r} is already a member.", code="already_member") from None


def _locked_membership(*, project: Project, user_id: int) -> Membership:
    """Lock every membership row of the project (so two demotions cannot both see an owner)
    and return the one of ``user_id``."""
    list(Membership.objects.select_for_update().filter(project=project))
    membership = Membership.objects.filter(project=project, user_id=user_id).first()
    if membership is None:
        raise NotFound("Member not found.")
    return membership


def membership_change(*, actor, project_id: str, user_id: int, role: str, staff_review: bool = False) -> Membership:
    if role not in Role.values:
        raise InvalidInput(f"Unknown role {role!r}.", code="invalid_role")
    with transaction.atomic():
        project = _project_to_manage(
            actor=actor, project_id=project_id, staff_review=staff_review, admin_permission="change_membership"
        )
        membership = _locked_membership(project=project, user_id=user_id)
        _require_owner_for_owner_changes(
            actor=actor, project=project, roles=(role, membership.role), staff_review=staff_review
        )
        membership.role = role
        membership.save(update_fields=["role"])
        ensure_an_owner_remains(project)
    return membership


def membership_remove(*, actor, project_id: str, user_id: int, staff_review: bool = False) -> None:
    with transaction.atomic():
        project = _project_to_manage(
            actor=actor, project_id=project_id, staff_review=staff_review, admin_permission="delete_membership"
        )
        membership = _locked_membership(project=project, user_id=user_id)
        _require_owner_for_owner_changes(
            actor=actor, project=project, roles=(membership.role,), staff_review=staff_review
        )
        membership.delete()
        ensure_an_owner_remains(project)


TOKEN_PREFIX = "mk_"


def token_issue(*, user: AbstractBaseUser, name: str = "") -> tuple[ApiToken, str]:
    """Create a token and return it with its plain key; the key is not recoverable later."""
    key = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, key_hash=hash_token(key), prefix=key[:10], name=name)
    return token, key


def user_grant_service(*, user: AbstractBaseUser) -> None:
    perm = Permission.objects.get(codename="run_agents", content_type__app_label="identity_app")
    user.user_permissions.add(perm)
    user.__dict__.pop("_is_service_principal", None)  # drop the cached answer
