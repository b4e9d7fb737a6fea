import hashlib
import unicodedata
import zoneinfo
from datetime import datetime
from typing import TYPE_CHECKING, TypeAlias

from django.conf import settings
from django.contrib.auth.models import User as _AuthUser
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from identity_app.ids import new_id

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

# The account type every service and selector takes (`actor`, `user`): settings.AUTH_USER_MODEL,
# which is Django's own User. Named here once so a swapped account model changes one line.
User: TypeAlias = _AuthUser

SECRET_KEY_MARKERS = ("password", "secret", "token", "api_key", "credential")


def _comparable_key(key: object) -> str:
    """NFKC + casefold with invisible format characters removed, so ``ｐａｓｓｗｏｒｄ``,
    ``ſecret`` and ``pass\u200bword`` compare like the plain words."""
    text = unicodedata.normalize("NFKC", str(key))
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf").casefold()


def find_secret_key(value: object, path: str = "") -> str | None:
    """Return the path of the first key that looks like a credential, at any depth."""
    if isinstance(value, dict):
        for key, inner in value.items():
            here = f"{path}.{key}" if path else str(key)
            if any(marker in _comparable_key(key) for marker in SECRET_KEY_MARKERS):
                return here
            found = find_secret_key(inner, here)
            if found:
                return found
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found = find_secret_key(inner, f"{path}[{index}]")
            if found:
                return found
    return None


def validate_timezone(value: str) -> None:
    if not value or value not in zoneinfo.available_timezones():
        raise ValidationError(
            gettext("%(value)s is not a valid IANA time zone name.") % {"value": repr(value)}, code="invalid"
        )


def validate_language(value: str) -> None:
    """Empty (the browser's choice) or one of the interface languages (``settings.LANGUAGES``)."""
    if value and value not in {code for code, _name in settings.LANGUAGES}:
        raise ValidationError(
            gettext("%(value)s is not a language of this site.") % {"value": repr(value)}, code="invalid"
        )


def validate_preferences(value: object) -> None:
    if not isinstance(value, dict):
        # Not code="invalid": JSONField would replace the message with its own "valid JSON" text.
        raise ValidationError(gettext("preferences must be a JSON object."), code="not_object")
    found = find_secret_key(value)
    if found:
        raise ValidationError(
            gettext("preferences may not store credentials (key %(key)s).") % {"key": repr(found)}, code="secret_key"
        )


class Profile(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile", verbose_name=_("user")
    )
    display_name = models.CharField(max_length=150, blank=True, verbose_name=_("display name"))
    timezone = models.CharField(
        max_length=64, default="UTC", validators=[validate_timezone], verbose_name=_("time zone")
    )
    # The web interface's language; empty: the browser's (Accept-Language).
    language = models.CharField(
        max_length=16, blank=True, default="", validators=[validate_language], verbose_name=_("language")
    )
    preferences = models.JSONField(
        default=dict, blank=True, validators=[validate_preferences], verbose_name=_("preferences")
    )
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("profile")
        verbose_name_plural = _("profiles")
        permissions = [
            ("run_agents", "Can act as a service principal that runs agents"),
            # Global memories enter every user's context: staff need this grant, not the staff flag.
            ("write_global_memories", "Can write global memories (shared by every user)"),
        ]

    def __str__(self) -> str:
        return self.display_name or self.user.get_username()


MAX_DESCRIPTION_CHARS = 4000


def new_project_id() -> str:
    return new_id("prj")


class Project(models.Model):
    id = models.CharField(primary_key=True, max_length=40, default=new_project_id, editable=False)
    name = models.CharField(max_length=200, verbose_name=_("name"))
    description = models.TextField(blank=True, max_length=MAX_DESCRIPTION_CHARS, verbose_name=_("description"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("project")
        verbose_name_plural = _("projects")
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class Role(models.TextChoices):
    OWNER = "owner", pgettext_lazy("project role", "Owner")
    ADMIN = "admin", pgettext_lazy("project role", "Admin")
    MEMBER = "member", pgettext_lazy("project role", "Member")
    VIEWER = "viewer", pgettext_lazy("project role", "Viewer")


class Membership(models.Model):
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="memberships", verbose_name=_("project")
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships", verbose_name=_("user")
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER, verbose_name=_("role"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("membership")
        verbose_name_plural = _("memberships")
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="membership_unique_user"),
            models.CheckConstraint(condition=models.Q(role__in=Role.values), name="membership_role_valid"),
        ]
        indexes = [models.Index(fields=["user", "project"], name="membership_user_idx")]

    def __str__(self) -> str:
        return f"{self.user_id}@{self.project_id}:{self.get_role_display()}"


def hash_token(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


class ApiToken(models.Model):
    """An API key. Only its SHA-256 is stored; the key itself is shown once at issue time.

    Every key expires (``expires_at``). A service principal's key may be limited to some users
    and/or projects (``only_user_ids`` / ``only_project_ids``; ``None`` = no limit on that axis,
    an empty list = nothing); ``identity_app.permissions`` applies the limit everywhere. Ids
    rather than many-to-many rows, so that deleting the last listed project leaves an empty
    list (reaches nothing) instead of no list (reaches everything); ids are never reused.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens", verbose_name=_("user")
    )
    key_hash = models.CharField(max_length=64, unique=True, editable=False, verbose_name=_("key hash"))
    prefix = models.CharField(max_length=12, editable=False, verbose_name=_("prefix"))
    name = models.CharField(max_length=100, blank=True, verbose_name=_("name"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    expires_at = models.DateTimeField(verbose_name=_("expires at"))
    last_used_at = models.DateTimeField(null=True, blank=True, verbose_name=_("last used at"))
    revoked_at = models.DateTimeField(null=True, blank=True, verbose_name=_("revoked at"))
    only_user_ids = models.JSONField(null=True, blank=True, default=None, verbose_name=_("only these users"))
    only_project_ids = models.JSONField(null=True, blank=True, default=None, verbose_name=_("only these projects"))

    # Not stored: what the tokens page (identity_app/web/views.py) shows beside each key.
    state_now: str
    state_label: "StrOrPromise"
    only_usernames: list[str]

    class Meta:
        verbose_name = _("API token")
        verbose_name_plural = _("API tokens")
        indexes = [models.Index(fields=["user", "-created_at"], name="apitoken_user_idx")]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user_id})"

    @property
    def restricted(self) -> bool:
        return self.only_user_ids is not None or self.only_project_ids is not None

    def state(self, now: datetime) -> str:
        """``active``, ``expired`` or ``revoked``."""
        if self.revoked_at is not None:
            return "revoked"
        return "active" if now < self.expires_at else "expired"


TOKEN_STATE_LABELS = {"active": _("active"), "expired": _("expired"), "revoked": _("revoked")}


def new_invitation_id() -> str:
    return new_id("inv")


class InvitationStatus(models.TextChoices):
    PENDING = "pending", _("pending")
    ACCEPTED = "accepted", _("accepted")
    DECLINED = "declined", _("declined")
    CANCELLED = "cancelled", _("cancelled")


class Invitation(models.Model):
    """An invitation to join a project, which only the invitee can turn into a membership.

    ``username`` is what the inviter typed; ``invitee`` is that account if an active one existed
    at the time, else ``None``. Both kinds look the same to the project's managers, so inviting
    does not tell them whether a username exists; only the invitee ever sees the invitation.

    A pending invitation expires ``INVITATION_EXPIRY_DAYS`` after ``created_at`` (sending it
    again starts that time again): it is then never listed to the invitee, cannot be accepted,
    and ``invitations_expire`` deletes it.
    """

    id = models.CharField(primary_key=True, max_length=40, default=new_invitation_id, editable=False)
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="invitations", verbose_name=_("project")
    )
    username = models.CharField(max_length=150, verbose_name=_("username"))
    invitee = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="invitations",
        verbose_name=_("invitee"),
    )
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("invited by"),
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER, verbose_name=_("role"))
    status = models.CharField(
        max_length=16, choices=InvitationStatus.choices, default=InvitationStatus.PENDING, verbose_name=_("status")
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    responded_at = models.DateTimeField(null=True, blank=True, verbose_name=_("answered at"))

    class Meta:
        verbose_name = _("invitation")
        verbose_name_plural = _("invitations")
        constraints = [
            models.UniqueConstraint(
                fields=["project", "username"],
                condition=models.Q(status="pending"),
                name="invitation_one_pending_per_username",
            ),
            models.CheckConstraint(condition=models.Q(role__in=Role.values), name="invitation_role_valid"),
            models.CheckConstraint(
                condition=models.Q(status__in=InvitationStatus.values), name="invitation_status_valid"
            ),
        ]
        indexes = [
            models.Index(fields=["invitee", "status"], name="invitation_invitee_idx"),
            models.Index(fields=["status", "created_at"], name="invitation_expiry_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.username}@{self.project_id}:{self.get_role_display()} ({self.get_status_display()})"


class ChatBinding(models.Model):
    """A private chat address (e.g. ``milky:private:10001``) that belongs to a user.

    The bound user may read that chat's memories in the UI; service principals act for
    any chat regardless of bindings.
    """

    chat_key = models.CharField(max_length=200, unique=True, verbose_name=_("chat key"))
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_bindings", verbose_name=_("user")
    )
    # What the pages call the chat ("Family group"); the key stays the address. Set by the user
    # on the chats page or by an operator in the admin.
    display_name = models.CharField(max_length=100, blank=True, default="", verbose_name=_("display name"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    # Not stored: what the chats page (memory_app/scoped/web.py) shows beside each chat.
    active_count: int
    items_url: str

    class Meta:
        verbose_name = _("chat binding")
        verbose_name_plural = _("chat bindings")
        indexes = [models.Index(fields=["user", "chat_key"], name="chatbinding_user_idx")]

    def __str__(self) -> str:
        return f"{self.chat_key} → {self.user_id}"

    @property
    def name(self) -> str:
        return self.display_name or self.chat_key


class SignInLink(models.Model):
    """A one-time link that signs a user in so they can set a password (users created for an
    API token have none). Only a hash of its secret is stored; it works once, until it expires."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sign_in_links")
    secret_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("sign-in link")
        verbose_name_plural = _("sign-in links")
        indexes = [models.Index(fields=["user", "created_at"], name="signinlink_user_idx")]

    def __str__(self) -> str:
        return _("sign-in link #%(id)s for %(user)s") % {"id": self.pk, "user": self.user_id}

    @staticmethod
    def hash_secret(secret: str) -> str:
        return hashlib.sha256(secret.encode()).hexdigest()
