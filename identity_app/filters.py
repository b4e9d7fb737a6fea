"""List filters and ordering of the projects and chat bindings APIs (docs/API.md), and the
ordering filter every API list shares.

A filter set only narrows the queryset its view takes from the selector (what the caller may
see); no filter value can widen it. A value that is not valid is a 400 naming the filter.
"""

from typing import Any

import django_filters
from django.core.validators import RegexValidator
from django.db.models import QuerySet

from config.api.filters import InstantFilter
from identity_app.chat_bindings import BINDABLE_TARGET_TYPES
from identity_app.models import ChatBinding, Project, Role

MAX_TEXT_FILTER_CHARS = 200


class StableOrderingFilter(django_filters.OrderingFilter):
    """``ordering``: one or more of the allowed fields, comma separated, ``-`` before a field for
    descending; a field named again later is ignored (its first mention decides). The row id
    breaks ties (in the direction of the last field), so pages never overlap or skip rows.
    Without ``ordering`` the list keeps its default order."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = kwargs.get("fields", ())
        names = ", ".join(f"`{name}`" for name in (fields.values() if isinstance(fields, dict) else fields))
        kwargs.setdefault(
            "help_text",
            f"Comma-separated, `-` for descending; of {names}. A field named again is ignored. Ties go by id.",
        )
        super().__init__(*args, **kwargs)

    def filter(self, qs: QuerySet[Any], value: list[str] | None) -> QuerySet[Any]:
        if not value:
            return qs
        first: dict[str, str] = {}
        for param in value:
            first.setdefault(param.lstrip("-"), param)
        ordering = [self.get_ordering_value(param) for param in first.values()]
        return qs.order_by(*ordering, "-id" if ordering[-1].startswith("-") else "id")


class ProjectFilter(django_filters.FilterSet):
    """Projects the caller may read; ``role``: the caller's role in them."""

    name = django_filters.CharFilter(
        field_name="name",
        lookup_expr="icontains",
        max_length=MAX_TEXT_FILTER_CHARS,
        help_text="Projects whose name contains this text (any letter case).",
    )
    role = django_filters.MultipleChoiceFilter(
        field_name="my_role", choices=Role.choices, help_text="Your role in the project (repeatable)."
    )
    created_after = InstantFilter(field_name="created_at", lookup_expr="gte")
    created_before = InstantFilter(field_name="created_at", lookup_expr="lt")
    ordering = StableOrderingFilter(fields=("name", "created_at"))

    class Meta:
        model = Project
        fields: list[str] = []


class ChatBindingFilter(django_filters.FilterSet):
    """Chat bindings the caller may see (their own; managers: all in their reach)."""

    platform = django_filters.CharFilter(
        method="filter_platform",
        max_length=32,
        validators=[RegexValidator(r"^[a-z][a-z0-9_-]{0,31}\Z", "Enter a platform name, such as milky.")],
        help_text="Chats of this platform (the first part of the chat key).",
    )
    target_type = django_filters.ChoiceFilter(
        method="filter_target_type",
        choices=[(name, name) for name in sorted(BINDABLE_TARGET_TYPES)],
        help_text="Chats of this target type (the second part of the chat key).",
    )
    user = django_filters.CharFilter(
        field_name="user__username",
        max_length=150,
        help_text="Bindings to the user with this username (managers see others' bindings).",
    )
    created_after = InstantFilter(field_name="created_at", lookup_expr="gte")
    created_before = InstantFilter(field_name="created_at", lookup_expr="lt")
    ordering = StableOrderingFilter(fields=("chat_key", "created_at"))

    class Meta:
        model = ChatBinding
        fields: list[str] = []

    # A chat key is ``platform:target_type:target_id`` and no part holds a colon.
    def filter_platform(self, queryset: QuerySet[ChatBinding], name: str, value: str) -> QuerySet[ChatBinding]:
        return queryset.filter(chat_key__startswith=f"{value}:") if value else queryset

    def filter_target_type(self, queryset: QuerySet[ChatBinding], name: str, value: str) -> QuerySet[ChatBinding]:
        return queryset.filter(chat_key__contains=f":{value}:")
