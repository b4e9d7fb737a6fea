"""List filters of identity memories (API and web), also used by the chat memories page."""

import django_filters
from django.db.models import Q

from memory_app.memories.models import Kind, Memory, Origin, Status


class MemoryFilter(django_filters.FilterSet):
    """List filters. Without ``status`` only active memories are listed; ``status=all`` lists every row."""

    kind = django_filters.MultipleChoiceFilter(choices=Kind.choices)
    status = django_filters.ChoiceFilter(
        choices=[*Status.choices, ("all", "all")], method="filter_status", empty_label=None
    )
    origin = django_filters.ChoiceFilter(choices=Origin.choices)
    q = django_filters.CharFilter(method="filter_q", max_length=200)
    created_after = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = Memory
        fields = ["kind", "status", "origin"]

    def filter_queryset(self, queryset):
        if not self.form.cleaned_data.get("status"):
            queryset = queryset.filter(status=Status.ACTIVE)
        return super().filter_queryset(queryset)

    def filter_status(self, queryset, name, value):
        if value == "all":
            return queryset
        return queryset.filter(status=value)

    def filter_q(self, queryset, name, value):
        terms = value.split()[:8]
        condition = Q()
        for term in terms:
            condition &= Q(content__icontains=term)
        return queryset.filter(condition)
