"""Input shapes of the memory pages. The rules (length, kind per tier, who may write) are
checked by the services; these forms only read the HTML input."""

from django import forms
from django.utils.translation import gettext_lazy as _

from identity_app.models import Project
from memory_app.memories.models import IDENTITY_KINDS, Kind

IDENTITY_KIND_CHOICES = [(value, label) for value, label in Kind.choices if value in IDENTITY_KINDS]


class ExpiresAtFormField(forms.DateTimeField):
    """Optional "true until": a local date and time in the reader's time zone (the profile's,
    activated for the request); empty means it does not expire. The services refuse a past one."""

    widget = forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M")

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("label", _("True until (optional)"))
        kwargs.setdefault("help_text", _("After this time agents no longer use or find it. Your time zone."))
        kwargs.setdefault("input_formats", ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"])
        super().__init__(**kwargs)


class MemoryCreateForm(forms.Form):
    kind = forms.ChoiceField(choices=IDENTITY_KIND_CHOICES, initial=Kind.FACT)
    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}))
    expires_at = ExpiresAtFormField()


def _max_length(model, field: str) -> int:
    return model._meta.get_field(field).max_length


class ProjectCreateForm(forms.Form):
    # The model's TextField limit is not checked by full_clean, so the form reads it here.
    name = forms.CharField()
    description = forms.CharField(
        required=False,
        max_length=_max_length(Project, "description"),
        widget=forms.Textarea(attrs={"rows": 2}),
    )
