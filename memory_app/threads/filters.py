"""List filters and ordering of the conversations API (docs/API.md).

A filter set only narrows the queryset its view takes from the selector (what the caller may
see); no filter value can widen it. A value that is not valid is a 400 naming the filter.
"""

import django_filters
from django.db.models import Q
from drf_spectacular.utils import extend_schema_field

from config.api.filters import InstantFilter
from identity_app.filters import MAX_TEXT_FILTER_CHARS, StableOrderingFilter
from memory_app.threads.models import Conversation, ConversationSource, ConversationStatus

BOOLEAN_CHOICES = [("true", "true"), ("false", "false")]
MAX_QUERY_WORDS = 8


class ConversationFilter(django_filters.FilterSet):
    status = django_filters.MultipleChoiceFilter(choices=ConversationStatus.choices, help_text="Repeatable.")
    source = django_filters.MultipleChoiceFilter(choices=ConversationSource.choices, help_text="Repeatable.")
    project = django_filters.CharFilter(
        field_name="project_id", max_length=40, help_text="Conversations of the project with this id."
    )
    user = django_filters.CharFilter(
        field_name="owner__username", max_length=150, help_text="Conversations of the user with this username."
    )
    external_id = django_filters.CharFilter(
        max_length=200, help_text="The conversation a runtime calls by this id (`external_id`, exact)."
    )
    no_memory = django_filters.ChoiceFilter(
        method="filter_no_memory",
        choices=BOOLEAN_CHOICES,
        help_text='`true`: chats in "don\'t remember this chat" mode; `false`: the others.',
    )
    q = django_filters.CharFilter(
        method="filter_q",
        max_length=MAX_TEXT_FILTER_CHARS,
        help_text="Conversations whose title contains every word (any letter case).",
    )
    created_after = InstantFilter(field_name="created_at", lookup_expr="gte")
    created_before = InstantFilter(field_name="created_at", lookup_expr="lt")
    updated_after = InstantFilter(field_name="updated_at", lookup_expr="gte")
    updated_before = InstantFilter(field_name="updated_at", lookup_expr="lt")
    ordering = StableOrderingFilter(fields=("updated_at", "created_at", "title"))

    class Meta:
        model = Conversation
        fields: list[str] = []

    @extend_schema_field({"type": "string", "enum": ["false", "true"]})
    def filter_no_memory(self, queryset, name, value):
        return queryset.filter(no_memory=value == "true")

    def filter_q(self, queryset, name, value):
        words = Q()
        for word in value.split()[:MAX_QUERY_WORDS]:
            words &= Q(title__icontains=word)
        return queryset.filter(words)
