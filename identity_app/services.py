import logging
import secrets
from collections.abc import Collection
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Permission
from django.db import IntegrityError, transaction
from django.utils import timezone

from config.errors import Conflict, DomainError, InvalidInput, NotFound, PermissionDenied, TooLarge
from config.validation import clean_text
from identity_app.errors import ErrorCode
from identity_app.models import (
    MAX_DESCRIPTION_CHARS,
    ApiToken,
    Invitation,
    InvitationStatus,
    Membership,
    Profile,
    Project,
    Role,
    SignInLink,
    User,
    hash_token,
)
from identity_app.permissions import (
    MANAGE,
    is_service_principal,
    project_require_permission,
    reach_q,
    staff_may,
    token_reach,
)
from identity_app.selectors import (
    invitation_expiry_cutoff,
    membership_role,
    token_get,
    user_find_active,
    user_get_active,
)

_UNSET = object()

logger = logging.getLogger(__name__)


def profile_update(
    *,
    user: User,
    display_name: Any = _UNSET,
    timezone: Any = _UNSET,
    language: Any = _UNSET,
    preferences: Any = _UNSET,
) -> Profile:
    with transaction.atomic():
        profile, _ = Profile.objects.select_for_update().get_or_create(user=user)
        fields = []
        for name, value in (
            ("display_name", display_name),
            ("timezone", timezone),
            ("language", language),
            ("preferences", preferences),
        ):
            if value is not _UNSET:
                setattr(profile, name, value)
                fields.append(name)
        # full_clean runs the timezone, language and credential-key validators; nothing is saved on error.
        profile.full_clean()
        profile.save(update_fields=[*fields, "updated_at"] if fields else None)
    return profile


def _check_description(description: Any) -> None:  # str, None or _UNSET
    # TextField.max_length is not enforced by full_clean(); the service enforces it for every adapter.
    if description is not _UNSET and len(description or "") > MAX_DESCRIPTION_CHARS:
        raise InvalidInput(f"description is longer than {MAX_DESCRIPTION_CHARS} characters.", code=ErrorCode.TOO_LARGE)


def project_create(*, actor: User, name: str, description: str = "") -> Project:
    _check_description(description)
    with transaction.atomic():
        project = Project(name=name, description=description, created_by=actor)
        project.full_clean()
        project.save()
        Membership.objects.create(project=project, user=actor, role=Role.OWNER)
    return project


def _project_to_manage(*, actor: User, project_id: str, staff_review: bool, admin_permission: str) -> Project:
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


def project_update(
    *, actor: User, project_id: str, name: Any = _UNSET, description: Any = _UNSET, staff_review: bool = False
) -> Project:
    _check_description(description)
    with transaction.atomic():
        project = _project_to_manage(
            actor=actor, project_id=project_id, staff_review=staff_review, admin_permission="change_project"
        )
        project = Project.objects.select_for_update().get(pk=project.pk)
        fields: list[str] = []
        if name is not _UNSET:
            project.name, fields = name, [*fields, "name"]
        if description is not _UNSET:
            project.description, fields = description, [*fields, "description"]
        project.full_clean()
        if fields:
            project.save(update_fields=fields)
    return project


def project_delete(*, actor: User, project_id: str, staff_review: bool = False) -> None:
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
        raise Conflict("A project must keep at least one owner.", code=ErrorCode.LAST_OWNER)


def _require_owner_for_owner_changes(
    *, actor: User, project: Project, roles: Collection[str], staff_review: bool = False
) -> None:
    """Granting, changing or removing the owner role takes an owner (or staff reviewing in the
    admin); a project admin must not be able to promote themselves and then remove the
    original owner."""
    if Role.OWNER in roles and not staff_review and membership_role(user=actor, project=project) != Role.OWNER:
        raise PermissionDenied(
            "Only an owner may grant, change or remove the owner role.", code=ErrorCode.OWNER_REQUIRED
        )


def membership_add(*, actor: User, project_id: str, username: str, role: str, staff_review: bool = False) -> Membership:
    if role not in Role.values:
        raise InvalidInput(f"Unknown role {role!r}.", code=ErrorCode.INVALID_ROLE)
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
            raise Conflict(f"{username!r} is already a member.", code=ErrorCode.ALREADY_MEMBER) from None


def _locked_membership(*, project: Project, user_id: int) -> Membership:
    """Lock every membership row of the project (so two demotions cannot both see an owner)
    and return the one of ``user_id``."""
    list(Membership.objects.select_for_update().filter(project=project))
    membership = Membership.objects.filter(project=project, user_id=user_id).first()
    if membership is None:
        raise NotFound("Member not found.")
    return membership


def membership_change(
    *, actor: User, project_id: str, user_id: int, role: str, staff_review: bool = False
) -> Membership:
    if role not in Role.values:
        raise InvalidInput(f"Unknown role {role!r}.", code=ErrorCode.INVALID_ROLE)
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


def membership_remove(*, actor: User, project_id: str, user_id: int, staff_review: bool = False) -> None:
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
MAX_TOKEN_LIMIT_ENTRIES = 100


def _token_lifetime(expires_in_days: object) -> timedelta:
    if expires_in_days is None:
        return timedelta(days=settings.API_TOKEN_DEFAULT_DAYS)
    if isinstance(expires_in_days, bool) or not isinstance(expires_in_days, int):
        raise InvalidInput("expires_in_days must be a whole number of days.", code=ErrorCode.INVALID_EXPIRY)
    if not 1 <= expires_in_days <= settings.API_TOKEN_MAX_DAYS:
        raise InvalidInput(
            f"expires_in_days must be between 1 and {settings.API_TOKEN_MAX_DAYS}.", code=ErrorCode.INVALID_EXPIRY
        )
    return timedelta(days=expires_in_days)


def _limit_list(values: object, *, field: str) -> list[str] | None:
    if values is None:
        return None
    if not isinstance(values, list | tuple) or not all(isinstance(v, str) and v for v in values):
        raise InvalidInput(f"{field} must be a list of names.", code=ErrorCode.INVALID_LIMITS)
    if not values:
        raise InvalidInput(f"{field} may not be empty; leave it out for no limit.", code=ErrorCode.INVALID_LIMITS)
    if len(values) > MAX_TOKEN_LIMIT_ENTRIES:
        raise TooLarge(f"{field} may list at most {MAX_TOKEN_LIMIT_ENTRIES} entries.")
    return list(dict.fromkeys(values))


def _token_limits(
    *, user: User, only_users: object, only_projects: object
) -> tuple[list[int] | None, list[str] | None]:
    """Usernames and project ids → the stored id lists. Only a service principal's key can be
    limited: it is the only kind that acts for other users or in projects it is not a member of."""
    usernames = _limit_list(only_users, field="only_users")
    project_ids = _limit_list(only_projects, field="only_projects")
    if usernames is None and project_ids is None:
        return None, None
    if not is_service_principal(user):
        raise PermissionDenied(
            "Only a service principal's token can be limited to users or projects.", code=ErrorCode.LIMITS_NOT_ALLOWED
        )
    user_ids = None
    if usernames is not None:
        user_ids = sorted(user_get_active(username=name).pk for name in usernames)
    if project_ids is not None:
        found = set(Project.objects.filter(pk__in=project_ids).values_list("pk", flat=True))
        missing = [pid for pid in project_ids if pid not in found]
        if missing:
            raise NotFound(f"No project {missing[0]!r}.", code=ErrorCode.UNKNOWN_PROJECT)
        project_ids = sorted(found)
    return user_ids, project_ids


def _new_key() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_issue(
    *,
    user: User,
    name: str = "",
    expires_in_days: int | None = None,
    only_users: list[str] | None = None,
    only_projects: list[str] | None = None,
) -> tuple[ApiToken, str]:
    """Create a token and return it with its plain key; the key is not recoverable later.

    It expires after ``expires_in_days`` (default ``API_TOKEN_DEFAULT_DAYS``, at most
    ``API_TOKEN_MAX_DAYS``); ``only_users`` (usernames) and ``only_projects`` (ids) limit a
    service principal's token (docs/API.md)."""
    if not isinstance(name, str) or len(name) > 100:
        raise InvalidInput("name must be a string of at most 100 characters.", code=ErrorCode.INVALID_NAME)
    clean_text(name, field="name")
    lifetime = _token_lifetime(expires_in_days)
    user_ids, project_ids = _token_limits(user=user, only_users=only_users, only_projects=only_projects)
    key = _new_key()
    token = ApiToken.objects.create(
        user=user,
        key_hash=hash_token(key),
        prefix=key[:10],
        name=name.strip(),
        expires_at=timezone.now() + lifetime,
        only_user_ids=user_ids,
        only_project_ids=project_ids,
    )
    return token, key


def token_create(*, actor: User, **options: Any) -> tuple[ApiToken, str]:
    """Self-service: a new token for ``actor``. A request made with a limited token may not
    create keys (the new key could be wider); it can rotate or revoke itself."""
    if token_reach(actor) is not None:
        raise PermissionDenied("A limited token cannot create tokens; use an unlimited one or the web UI.")
    return token_issue(user=actor, **options)


def token_revoke(*, actor: User, token_id: int | str) -> ApiToken:
    """Revoke one of ``actor``'s tokens (another user's: 404). Revoking twice is a no-op."""
    with transaction.atomic():
        token = token_get(user=actor, token_id=token_id)
        token = ApiToken.objects.select_for_update().get(pk=token.pk)
        if token.revoked_at is None:
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])
    return token


def token_rotate(*, actor: User, token_id: int | str) -> tuple[ApiToken, str]:
    """Replace an active token by a new key with the same name, limits and lifetime, and
    revoke the old one, in one transaction. Returns the new token and its key (shown once)."""
    now = timezone.now()
    with transaction.atomic():
        token = token_get(user=actor, token_id=token_id)
        token = ApiToken.objects.select_for_update().get(pk=token.pk)
        if token.state(now) != "active":
            raise Conflict(
                f"This token is {token.state(now)}; create a new one instead.", code=ErrorCode.TOKEN_NOT_ACTIVE
            )
        lifetime = min(token.expires_at - token.created_at, timedelta(days=settings.API_TOKEN_MAX_DAYS))
        key = _new_key()
        new = ApiToken.objects.create(
            user=token.user,
            key_hash=hash_token(key),
            prefix=key[:10],
            name=token.name,
            expires_at=now + lifetime,
            only_user_ids=token.only_user_ids,
            only_project_ids=token.only_project_ids,
        )
        token.revoked_at = now
        token.save(update_fields=["revoked_at"])
    return new, key


# --- invitations ---------------------------------------------------------------------------
def invitation_create(*, actor: User, project_id: str, username: str, role: str = Role.MEMBER) -> None:
    """Invite ``username`` to a project (managers; the owner role takes an owner).

    Returns nothing and behaves the same whether or not the username exists, is active or is
    already a member, so the answer reveals none of that; only an existing invitee can see
    and accept the invitation. Inviting the same username again updates the pending one.
    """
    if role not in Role.values:
        raise InvalidInput(f"Unknown role {role!r}.", code=ErrorCode.INVALID_ROLE)
    if not isinstance(username, str) or not username.strip() or len(username) > 150:
        raise InvalidInput(
            "username must be a non-empty string of at most 150 characters.", code=ErrorCode.INVALID_USERNAME
        )
    username = username.strip()
    with transaction.atomic():
        project = project_require_permission(user=actor, project_id=project_id, permission=MANAGE)
        _require_owner_for_owner_changes(actor=actor, project=project, roles=(role,))
        invitee = user_find_active(username=username)
        if invitee is not None and Membership.objects.filter(project=project, user=invitee).exists():
            return
        pending = (
            Invitation.objects.select_for_update()
            .filter(project=project, username=username, status=InvitationStatus.PENDING)
            .first()
        )
        if pending is not None:  # sent again: its expiry time starts again too
            pending.role, pending.invited_by, pending.invitee = role, actor, invitee
            pending.created_at = timezone.now()
            pending.save(update_fields=["role", "invited_by", "invitee", "created_at"])
            return
        try:
            with transaction.atomic():
                Invitation.objects.create(
                    project=project, username=username, invitee=invitee, invited_by=actor, role=role
                )
        except IntegrityError:
            pass  # a concurrent invitation of the same username: one pending invitation either way


def invitation_cancel(*, actor: User, project_id: str, invitation_id: str) -> None:
    with transaction.atomic():
        project = project_require_permission(user=actor, project_id=project_id, permission=MANAGE)
        invitation = Invitation.objects.select_for_update().filter(pk=str(invitation_id)[:40], project=project).first()
        if invitation is None:
            raise NotFound("Invitation not found.")
        if invitation.status != InvitationStatus.PENDING:
            raise Conflict(f"The invitation is {invitation.status}.", code=ErrorCode.INVITATION_CLOSED)
        invitation.status, invitation.responded_at = InvitationStatus.CANCELLED, timezone.now()
        invitation.save(update_fields=["status", "responded_at"])


def _my_pending_invitation(*, actor: User, invitation_id: str) -> Invitation:
    """The pending, unexpired invitation ``invitation_id`` of ``actor``, locked; anything else
    is 404."""
    invitation = None
    if actor and actor.is_authenticated:
        invitation = (
            Invitation.objects.select_for_update()
            .filter(reach_q(actor, user_field="invitee_id", project_field="project_id"))
            .filter(pk=str(invitation_id)[:40], invitee=actor, status=InvitationStatus.PENDING)
            .filter(created_at__gt=invitation_expiry_cutoff())
            .first()
        )
    if invitation is None:
        raise NotFound("Invitation not found.")
    return invitation


def invitation_accept(*, actor: User, invitation_id: str) -> Membership:
    """Join the project with the invited role. The inviter's rights are checked again now
    (through ``membership_add``): an invitation from someone who has since lost them is void."""
    with transaction.atomic():
        invitation = _my_pending_invitation(actor=actor, invitation_id=invitation_id)
        inviter = invitation.invited_by
        if inviter is None or not inviter.is_active:
            raise Conflict("This invitation is no longer valid; ask for a new one.", code=ErrorCode.INVITATION_STALE)
        try:
            membership = membership_add(
                actor=inviter, project_id=invitation.project_id, username=actor.get_username(), role=invitation.role
            )
        except Conflict:
            raise  # already a member: said as it is
        except DomainError:  # the inviter may no longer manage the project (or grant owner)
            raise Conflict(
                "This invitation is no longer valid; ask for a new one.", code=ErrorCode.INVITATION_STALE
            ) from None
        invitation.status, invitation.responded_at = InvitationStatus.ACCEPTED, timezone.now()
        invitation.save(update_fields=["status", "responded_at"])
    return membership


def invitation_decline(*, actor: User, invitation_id: str) -> None:
    with transaction.atomic():
        invitation = _my_pending_invitation(actor=actor, invitation_id=invitation_id)
        invitation.status, invitation.responded_at = InvitationStatus.DECLINED, timezone.now()
        invitation.save(update_fields=["status", "responded_at"])


def invitations_expire(*, now: datetime | None = None, batch: int = 1000) -> int:
    """Delete pending invitations past their expiry time (docs/API.md), at most ``batch`` per
    statement until none is left; returns how many were deleted."""
    cutoff = invitation_expiry_cutoff(now)
    deleted = 0
    while True:
        ids = list(
            Invitation.objects.filter(status=InvitationStatus.PENDING, created_at__lte=cutoff)
            .order_by("created_at")
            .values_list("pk", flat=True)[:batch]
        )
        if not ids:
            break
        deleted += Invitation.objects.filter(pk__in=ids, status=InvitationStatus.PENDING).delete()[0]
    if deleted:
        logger.info("expired invitations deleted", extra={"invitations": deleted})
    return deleted


def user_grant_service(*, user: User) -> None:
    perm = Permission.objects.get(codename="run_agents", content_type__app_label="identity_app")
    user.user_permissions.add(perm)
    user.__dict__.pop("_is_service_principal", None)  # drop the cached answer


# --- one-time sign-in links ----------------------------------------------------------------
def sign_in_link_issue(*, user: User) -> tuple[SignInLink, str]:
    """A link that signs ``user`` in once, within ``SIGN_IN_LINK_HOURS``, to set a password.
    Returns the row and the secret (shown once; only its hash is stored). Older unused links of
    the user stop working: only the newest one is valid."""
    if not (user and user.is_active):
        raise InvalidInput("This account is not active.", code=ErrorCode.INACTIVE_USER)
    secret = secrets.token_urlsafe(32)
    now = timezone.now()
    with transaction.atomic():
        SignInLink.objects.filter(user=user, used_at__isnull=True).update(used_at=now)
        link = SignInLink.objects.create(
            user=user,
            secret_hash=SignInLink.hash_secret(secret),
            expires_at=now + timedelta(hours=settings.SIGN_IN_LINK_HOURS),
        )
    return link, secret


def sign_in_link_redeem(*, secret: str) -> User:
    """The user of a valid link, marking it used by a conditional UPDATE (two clicks at once: one
    wins). Unknown, used and expired links are the same 404."""
    if not isinstance(secret, str) or not 20 <= len(secret) <= 100:
        raise NotFound("This sign-in link is not valid.")
    now = timezone.now()
    hashed = SignInLink.hash_secret(secret)
    with transaction.atomic():
        claimed = SignInLink.objects.filter(
            secret_hash=hashed, used_at__isnull=True, expires_at__gt=now, user__is_active=True
        ).update(used_at=now)
        if claimed != 1:
            raise NotFound("This sign-in link is not valid.")
        return SignInLink.objects.select_related("user").get(secret_hash=hashed).user
