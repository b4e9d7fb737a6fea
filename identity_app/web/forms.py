import json

from django import forms

MAX_PREFERENCES_CHARS = 16000


class ProfileForm(forms.Form):
    """Reads the HTML input; the profile rules (IANA time zone, no credential keys) are the
    model validators that ``profile_update`` runs."""

    display_name = forms.CharField(required=False)
    timezone = forms.CharField(widget=forms.TextInput(attrs={"list": "timezones", "autocomplete": "off"}))
    preferences = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false"}),
        max_length=MAX_PREFERENCES_CHARS,
        help_text="A JSON object. Keys naming credentials (password, secret, token, api_key, credential) are refused.",
    )

    def clean_preferences(self):
        raw = self.cleaned_data["preferences"].strip()
        if not raw:
            return {}
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"Not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).") from None
