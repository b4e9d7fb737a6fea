"""The API's query filters (``DEFAULT_FILTER_BACKENDS``) and their schema."""

import django_filters
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django_filters.fields import IsoDateTimeField
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.contrib.django_filters import DjangoFilterExtension
from rest_framework import exceptions as drf_exceptions

from config.instants import OutOfRange, in_utc


class ApiFilterBackend(DjangoFilterBackend):
    """django-filter for the API: a filter sent with an empty value is a 400 (the schema
    documents its dates and choices), unless it takes free text, where empty means no search.
    The web pages' forms send empty values and use the filter sets directly.

    A request with no parameter but the page's does not build the filter set (deep copies of
    every filter and form field, most of a list's filtering cost): every filter leaves the rows
    alone without a value, so the rows are the set's ``unfiltered(queryset)`` when it has a
    default of its own (the memories' active-only), else the queryset as it is. A set with its
    own ``__init__``, ``qs`` or ``filter_queryset`` and no ``unfiltered`` is always built."""

    def filter_queryset(self, request, queryset, view):
        filterset_class = self.get_filterset_class(view, queryset)
        paginator = getattr(view, "paginator", None)
        page_params = {paginator.page_query_param, paginator.page_size_query_param} if paginator else set()
        if filterset_class is not None and not set(request.query_params) - page_params:
            if hasattr(filterset_class, "unfiltered"):
                return filterset_class.unfiltered(queryset)
            if all(
                getattr(filterset_class, name) is getattr(django_filters.FilterSet, name)
                for name in ("__init__", "qs", "filter_queryset")
            ):
                return queryset
        return super().filter_queryset(request, queryset, view)

    def get_filterset(self, request, queryset, view):
        filterset = super().get_filterset(request, queryset, view)
        if filterset is not None:
            empty = [
                name
                for name, declared in filterset.filters.items()
                if not isinstance(declared, django_filters.CharFilter) and "" in request.query_params.getlist(name)
            ]
            if empty:
                raise drf_exceptions.ValidationError({name: ["May not be empty."] for name in empty})
        return filterset


class ApiFilterBackendSchema(DjangoFilterExtension):
    """The query parameters of ``ApiFilterBackend`` as the server reads them: a free-text filter
    with a pattern validator documents the pattern (``\\Z`` read as ``$``), and a repeatable one
    at least one item, so the schema refuses what the filter refuses."""

    target_class = "config.api.filters.ApiFilterBackend"
    match_subclasses = True
    priority = 1

    def resolve_filter_field(self, auto_schema, model, filterset_class, field_name, filter_field):
        parameters = super().resolve_filter_field(auto_schema, model, filterset_class, field_name, filter_field)
        patterns = [
            # A validator's regex is compiled in __init__; the stub also allows the class's str.
            v.regex.pattern.replace("\\Z", "$")  # type: ignore[union-attr]
            for v in filter_field.extra.get("validators", ())
            if isinstance(v, RegexValidator) and not v.inverse_match and not v.flags
        ]
        for parameter in parameters:
            if patterns and parameter["schema"].get("type") == "string":
                parameter["schema"]["pattern"] = patterns[0]
            if parameter["schema"].get("type") == "array":  # sent empty, it is "May not be empty."
                parameter["schema"]["minItems"] = 1
        return parameters


class InstantField(IsoDateTimeField):
    """An ISO 8601 date-time, as the instant it names in UTC (``config.instants``): written with
    any offset Python reads, it filters as that instant; one UTC cannot hold is refused."""

    default_error_messages = {"out_of_range": "Enter a date-time that lies between the years 1 and 9999 in UTC."}

    def to_python(self, value):
        moment = super().to_python(value)
        if moment is None:
            return None
        try:
            return in_utc(moment)
        except OutOfRange:
            raise ValidationError(self.error_messages["out_of_range"], code="out_of_range") from None


class InstantFilter(django_filters.IsoDateTimeFilter):
    """The API's date-time filters (``created_after``, ``updated_before``, …)."""

    field_class = InstantField
