"""List filters of identity memories (API and web), also used by the chat memories page.

``q`` (alias ``search``) ranks with the retrieval engine: active memories in the scopes of the
listed rows, best first, the list's own queryset (visibility and the other filters) applied in
the same SQL query. Rows of other statuses, which are not indexed, match when they contain every
word (only when the ``status`` filter asks for them), after the ranked ones.
"""

import django_filters
from django.db.models import Case, IntegerField, Q, Value, When

from memory_app.memories.derived import scope_key
from memory_app.memories.models import Kind, Memory, Origin, Status
from memory_app.search import engine

SEARCH_DEPTH = 100
MAX_SCOPES = 50


class MemoryFilter(django_filters.FilterSet):
    """List filters. Without ``status`` only active memories are listed; ``status=all`` lists every row."""

    kind = django_filters.MultipleChoiceFilter(choices=Kind.choices)
    status = django_filters.ChoiceFilter(
        choices=[*Status.choices, ("all", "all")], method="filter_status", empty_label=None
    )
    origin = django_filters.ChoiceFilter(choices=Origin.choices)
    q = django_filters.CharFilter(method="filter_q", max_length=200)
    search = django_filters.CharFilter(method="filter_q", max_length=200)
    created_after = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = Memory
        fields = ["kind", "status", "origin"]

    @staticmethod
    def unfiltered(queryset):
        """The list without any filter: active memories only (``ApiFilterBackend`` uses this
        instead of building the set when a request has no filter)."""
        return queryset.filter(status=Status.ACTIVE)

    def filter_queryset(self, queryset):
        if not self.form.cleaned_data.get("status"):
            queryset = self.unfiltered(queryset)
        return super().filter_queryset(queryset)

    def filter_status(self, queryset, name, value):
        if value == "all":
            return queryset
        return queryset.filter(status=value)

    def filter_q(self, queryset, name, value):
        value = value.strip()
        if not value:
            return queryset
        scopes = [
            scope_key(t, i)
            for t, i in queryset.order_by().values_list("scope_type", "scope_id").distinct()[:MAX_SCOPES]
        ]
        found = engine.search(scopes=scopes, query=value, limit=SEARCH_DEPTH, depth=SEARCH_DEPTH, floor=True)
        self.search_result = found
        ranked = Q(pk__in=found.refs, status=Status.ACTIVE)
        status = self.form.cleaned_data.get("status")
        if status and status != Status.ACTIVE:
            words = Q()
            for word in value.split()[:8]:
                words &= Q(content__icontains=word)
            ranked |= ~Q(status=Status.ACTIVE) & words
        order = Case(
            *[When(pk=ref, then=Value(position)) for position, ref in enumerate(found.refs)],
            default=Value(len(found.refs)),
            output_field=IntegerField(),
        )
        return queryset.filter(ranked).order_by(order, "-created_at", "-id")
