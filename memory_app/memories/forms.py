"""Input shapes of the memory pages. The rules (length, kind per tier, who may write) are
checked by the services; these forms only read the HTML input."""

from django import forms
from django.utils.translation import gettext_lazy as _

from identity_app.models import Project
from memory_app.memories.models import IDENTITY_KINDS, Kind, Status

IDENTITY_KIND_CHOICES = [(value, label) for value, label in Kind.choices if value in IDENTITY_KINDS]
STATUS_FILTER_CHOICES = [*Status.choices, ("all", _("All"))]


class MemoryCreateForm(forms.Form):
    kind = forms.ChoiceField(choices=IDENTITY_KIND_CHOICES, initial=Kind.FACT)
    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}))


class MemoryCorrectForm(forms.Form):
    kind = forms.ChoiceField(choices=IDENTITY_KIND_CHOICES)
    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), label=_("Corrected content"))


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
