"""List filters of identity memories (API and web), also used by the chat memories page.

``status``: ``active`` (the default) lists rows that are active and not expired (``live_q``);
``expired`` the active rows whose expiry has passed (until the purge deletes them);
``superseded``, ``archived``; ``all`` every row.

``q`` (alias ``search``) ranks with the retrieval engine: active memories in the scopes of the
listed rows, best first, the list's own queryset (visibility and the other filters) applied in
the same SQL query. Rows of other statuses, which are not indexed, match when they contain every
word (only when the ``status`` filter asks for them), after the ranked ones.
"""

import django_filters
from django.db.models import Q, Value
from django.db.models.functions import Concat, NullIf, StrIndex

from config.api.filters import InstantFilter
from config.api.pagination import counted_on_rows
from memory_app.memories.derived import scope_key
from memory_app.memories.models import Kind, Memory, Origin, Status, expired_q, live_q
from memory_app.search import engine

SEARCH_DEPTH = 100
SEARCH_PARAMS = ("q", "search")  # the same filter under two names
SEARCH_MAX_CHARS = 200
FLOORED = True  # a list's search filters: only what matches (engine.search's ``floor``)
EXPIRED = "expired"
STATUS_FILTER_CHOICES = [*Status.choices, (EXPIRED, "expired"), ("all", "all")]
MAX_SCOPES = 50


class MemoryFilter(django_filters.FilterSet):
    """List filters. Without ``status`` only active, unexpired memories are listed;
    ``status=expired`` the expired ones; ``status=all`` every row."""

    kind = django_filters.MultipleChoiceFilter(choices=Kind.choices)
    status = django_filters.ChoiceFilter(choices=STATUS_FILTER_CHOICES, method="filter_status", empty_label=None)
    origin = django_filters.ChoiceFilter(choices=Origin.choices)
    q = django_filters.CharFilter(method="filter_q", max_length=SEARCH_MAX_CHARS)
    search = django_filters.CharFilter(method="filter_q", max_length=SEARCH_MAX_CHARS)
    created_after = InstantFilter(field_name="created_at", lookup_expr="gte")
    created_before = InstantFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = Memory
        fields = ["kind", "status", "origin"]

    @staticmethod
    def unfiltered(queryset):
        """The list without any filter: active, unexpired memories only (``ApiFilterBackend``
        uses this instead of building the set when a request has no filter)."""
        return queryset.filter(live_q())

    def filter_queryset(self, queryset):
        if not self.form.cleaned_data.get("status"):
            queryset = self.unfiltered(queryset)
        return super().filter_queryset(queryset)

    def filter_status(self, queryset, name, value):
        return status_filter(queryset, value)

    def filter_q(self, queryset, name, value):
        value = value.strip()
        if not value:
            return queryset
        scopes = [
            scope_key(t, i)
            for t, i in queryset.order_by().values_list("scope_type", "scope_id").distinct()[:MAX_SCOPES]
        ]
        found = engine.search(scopes=scopes, query=value, limit=SEARCH_DEPTH, depth=SEARCH_DEPTH, floor=FLOORED)
        self.search_result = found
        live = live_q()
        ranked = Q(pk__in=found.refs) & live
        status = self.form.cleaned_data.get("status")
        if status and status != Status.ACTIVE:
            words = Q()
            for word in value.split()[:8]:
                words &= Q(content__icontains=word)
            ranked |= ~live & words
        # The first page carries the count (no ``COUNT`` statement after it): a hundred ranked
        # rows at most, and the rows of other statuses that hold every word, which the ranked
        # order sorts whole anyway.
        return counted_on_rows(queryset.filter(ranked)).order_by(ranked_first(found.refs), "-created_at", "-id")


def ranked_first(refs: list[str]):
    """The rows in the order of ``refs`` (the engine's ranking), any other row after them: the
    position of the row's id in one string parameter. A ``CASE`` of one ``WHEN`` per ranked id
    cost ~8 ms of Python to compile per statement at a hundred ids; this costs under one."""
    joined = "|" + "|".join(refs) + "|"  # ids hold no "|" (``new_id``)
    position = StrIndex(Value(joined), Concat(Value("|"), "pk", Value("|")))
    return NullIf(position, Value(0)).asc(nulls_last=True)


def status_filter(queryset, value: str):
    """One ``status`` value of the lists (API, web, home) applied to ``queryset``."""
    if value == "all":
        return queryset
    if value == Status.ACTIVE:
        return queryset.filter(live_q())
    if value == EXPIRED:
        return queryset.filter(expired_q())
    return queryset.filter(status=value)
