"""Input shapes of the memory pages. The rules (length, kind per tier, who may write) are
checked by the services; these forms only read the HTML input."""

from django import forms
from django.utils.translation import gettext_lazy as _

from identity_app.models import Project
from memory_app.memories.models import IDENTITY_KINDS, Kind, Status

IDENTITY_KIND_CHOICES = [(value, label) for value, label in Kind.choices if value in IDENTITY_KINDS]
STATUS_FILTER_CHOICES = [*Status.choices, ("expired", _("Expired")), ("all", _("All"))]


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


class MemoryCorrectForm(forms.Form):
    kind = forms.ChoiceField(choices=IDENTITY_KIND_CHOICES)
    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), label=_("Corrected content"))
    expires_at = ExpiresAtFormField()


class MemoryFilterForm(forms.Form):
    """The list's search box and filters; only read to render them back."""

    q = forms.CharField(required=False, max_length=200, label=_("Search"))
    kind = forms.ChoiceField(required=False, choices=[("", _("Any kind")), *IDENTITY_KIND_CHOICES])
    status = forms.ChoiceField(required=False, choices=STATUS_FILTER_CHOICES, initial=Status.ACTIVE)


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
