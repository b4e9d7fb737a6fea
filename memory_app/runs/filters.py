"""List filters and ordering of the runs API (docs/API.md), under the same rule as the
conversations' (``threads.filters``)."""

import django_filters
from drf_spectacular.utils import extend_schema_field

from config.api.filters import InstantFilter
from identity_app.filters import StableOrderingFilter
from memory_app.runs import selectors
from memory_app.runs.models import AgentRun, RunKind, RunStatus, top_level_runs_q
from memory_app.threads.filters import BOOLEAN_CHOICES


class RunFilter(django_filters.FilterSet):
    status = django_filters.MultipleChoiceFilter(choices=RunStatus.choices, help_text="Repeatable.")
    kind = django_filters.MultipleChoiceFilter(choices=RunKind.choices, help_text="Repeatable.")
    lease_state = django_filters.ChoiceFilter(
        method="filter_lease_state",
        choices=[("held", "held"), ("expired", "expired"), ("released", "released")],
        help_text="As `lease_state` in the run.",
    )
    conversation = django_filters.CharFilter(
        field_name="conversation_id", max_length=40, help_text="Runs of the conversation with this id."
    )
    project = django_filters.CharFilter(field_name="project_id", max_length=40, help_text="Runs of this project.")
    parent_run = django_filters.CharFilter(
        field_name="parent_run_id", max_length=40, help_text="Runs started by the run with this id."
    )
    top_level = django_filters.ChoiceFilter(
        method="filter_top_level",
        choices=BOOLEAN_CHOICES,
        help_text="`true`: main-agent runs (chat or resume, no parent run); `false`: all others.",
    )
    user = django_filters.CharFilter(
        field_name="user__username", max_length=150, help_text="Runs of the user with this username."
    )
    created_after = InstantFilter(field_name="created_at", lookup_expr="gte")
    created_before = InstantFilter(field_name="created_at", lookup_expr="lt")
    ordering = StableOrderingFilter(fields=("created_at", "updated_at"))

    class Meta:
        model = AgentRun
        fields: list[str] = []

    def filter_lease_state(self, queryset, name, value):
        return selectors.runs_with_lease_state(queryset, value)

    @extend_schema_field({"type": "string", "enum": ["false", "true"]})
    def filter_top_level(self, queryset, name, value):
        top_level = top_level_runs_q()
        return queryset.filter(top_level if value == "true" else ~top_level)
