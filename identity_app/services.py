import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, Permission
from django.db import IntegrityError, transaction

from config.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from identity_app.models import ApiToken, Membership, Profile, Project, Role, hash_token
from identity_app.permissions import MANAGE, project_require_permission

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


MAX_DESCRIPTION_CHARS = 4000


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


def project_update(*, actor, project_id: str, name=_UNSET, description=_UNSET) -> Project:
    _check_description(description)
    with transaction.atomic():
        project = project_require_permission(user=actor, project_id=project_id, permission=MANAGE)
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


def _user_by_username(username: str) -> AbstractBaseUser:
    user = get_user_model().objects.filter(username=username, is_active=True).first()
    if user is None:
        raise InvalidInput(f"No active user named {username!r}.", code="unknown_user")
    return user


def ensure_an_owner_remains(project: Project) -> None:
    if not Membership.objects.filter(project=project, role=Role.OWNER).exists():
        raise Conflict("A project must keep at least one owner.", code="last_owner")


def _require_owner_for_owner_changes(*, actor, project: Project, roles) -> None:
    """Granting, changing or removing the owner role takes an owner; a project admin must not
    be able to promote themselves and then remove the original owner."""
    if Role.OWNER in roles and actor_role(actor, project) != Role.OWNER:
        raise PermissionDenied("Only an owner may grant, change or remove the owner role.", code="owner_required")


def membership_add(*, actor, project_id: str, username: str, role: str) -> Membership:
    if role not in Role.values:
        raise InvalidInput(f"Unknown role {role!r}.", code="invalid_role")
    with transaction.atomic():
        project = project_require_permission(user=actor, project_id=project_id, permission=MANAGE)
        _require_owner_for_owner_changes(actor=actor, project=project, roles=(role,))
        user = _user_by_username(username)
        try:
            with transaction.atomic():
                return Membership.objects.create(project=project, user=user, role=role)
        except IntegrityError:
            raise Conflict(f"{username!r} is already a member.", code="already_member") from None


def membership_change(*, actor, project_id: str, user_id: int, role: str) -> Membership:
    if role not in Role.values:
        raise InvalidInput(f"Unknown role {role!r}.", code="invalid_role")
    with transaction.atomic():
        project = project_require_permission(user=actor, project_id=project_id, permission=MANAGE)
        # Lock every membership row of the project so two demotions cannot both see an owner.
        list(Membership.objects.select_for_update().filter(project=project))
        membership = Membership.objects.filter(project=project, user_id=user_id).first()
        if membership is None:
            raise NotFound("Member not found.")
        _require_owner_for_owner_changes(actor=actor, project=project, roles=(role, membership.role))
        membership.role = role
        membership.save(update_fields=["role"])
        ensure_an_owner_remains(project)
    return membership


def membership_remove(*, actor, project_id: str, user_id: int) -> None:
    with transaction.atomic():
        project = project_require_permission(user=actor, project_id=project_id, permission=MANAGE)
        list(Membership.objects.select_for_update().filter(project=project))
        membership = Membership.objects.filter(project=project, user_id=user_id).first()
        if membership is None:
            raise NotFound("Member not found.")
        _require_owner_for_owner_changes(actor=actor, project=project, roles=(membership.role,))
        membership.delete()
        ensure_an_owner_remains(project)


def actor_role(actor, project: Project) -> str | None:
    return Membership.objects.filter(project=project, user=actor).values_list("role", flat=True).first()


TOKEN_PREFIX = "mk_"


def token_issue(*, user: AbstractBaseUser, name: str = "") -> tuple[ApiToken, str]:
    """Create a token and return it with its plain key; the key is not recoverable later."""
    key = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, key_hash=hash_token(key), prefix=key[:10], name=name
    )
    return token, key


def user_grant_service(*, user: AbstractBaseUser) -> None:
    perm = Permission.objects.get(codename="run_agents", content_type__app_label="identity_app")
    user.user_permissions.add(perm)
    user.__dict__.pop("_is_service_principal", None)  # drop the cached answer

