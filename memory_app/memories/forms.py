"""Input shapes of the memory pages. The rules (length, kind per tier, who may write) are
checked by the services; these forms only read the HTML input."""

from django import forms

from identity_app.models import Project
from memory_app.memories.models import IDENTITY_KINDS, Kind

IDENTITY_KIND_CHOICES = [(value, label) for value, label in Kind.choices if value in IDENTITY_KINDS]


class MemoryCreateForm(forms.Form):
    kind = forms.ChoiceField(choices=IDENTITY_KIND_CHOICES, initial=Kind.FACT)
    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}))


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
