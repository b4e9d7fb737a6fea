import json
from typing import Any, cast

from django import forms
from django.conf import settings
from django.core.validators import MaxValueValidator
from django.utils.translation import gettext_lazy as _

from identity_app.models import Role

MAX_PREFERENCES_CHARS = 16000


class ProfileForm(forms.Form):
    """Reads the HTML input; the profile rules (IANA time zone, no credential keys) are the
    model validators that ``profile_update`` runs."""

    display_name = forms.CharField(required=False)
    timezone = forms.CharField(widget=forms.TextInput(attrs={"list": "timezones", "autocomplete": "off"}))
    language = forms.ChoiceField(required=False)
    preferences = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false"}),
        max_length=MAX_PREFERENCES_CHARS,
        help_text=_(
            "A JSON object. Keys naming credentials (password, secret, token, api_key, credential) are refused."
        ),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["language"]).choices = [
            ("", _("The browser's language")),
            *settings.LANGUAGES,
        ]

    def clean_preferences(self) -> Any:  # what the JSON holds; the model's validator checks it
        raw = self.cleaned_data["preferences"].strip()
        if not raw:
            return {}
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(
                _("Not valid JSON: %(error)s (line %(line)s, column %(column)s).")
                % {"error": exc.msg, "line": exc.lineno, "column": exc.colno}
            ) from None


def _comma_list(value: str) -> list[str] | None:
    """``"a, b"`` → ``["a", "b"]``; empty → ``None`` (no limit)."""
    names = [part.strip() for part in (value or "").split(",") if part.strip()]
    return names or None


class TokenCreateForm(forms.Form):
    """A new API token; the limits are offered to service principals only (the service refuses
    them for anyone else)."""

    name = forms.CharField(required=False, max_length=100)
    expires_in_days = forms.IntegerField(min_value=1, label=_("Expires in (days)"))
    only_users = forms.CharField(
        required=False, max_length=4000, help_text=_("Usernames, comma-separated. Empty: any user.")
    )
    only_projects = forms.CharField(
        required=False, max_length=4000, help_text=_("Project ids, comma-separated. Empty: any project.")
    )

    def __init__(self, *args: Any, max_days: int, default_days: int, limits: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        days = cast(forms.IntegerField, self.fields["expires_in_days"])
        days.max_value = max_days
        days.validators.append(MaxValueValidator(max_days))
        days.initial = default_days
        days.widget.attrs.update({"min": 1, "max": max_days})
        if not limits:
            del self.fields["only_users"], self.fields["only_projects"]

    def clean_only_users(self) -> list[str] | None:
        return _comma_list(self.cleaned_data["only_users"])

    def clean_only_projects(self) -> list[str] | None:
        return _comma_list(self.cleaned_data["only_projects"])


class InviteForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)
