"""The page parameters of every API list (``DEFAULT_PAGINATION_CLASS``)."""

from django.core.paginator import Page, Paginator
from django.db.models import Count, QuerySet, Window
from rest_framework import exceptions as drf_exceptions
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request

# The count of a list's rows carried on each of them (``counted_on_rows``).
ROW_COUNT = "list_row_count"


def counted_on_rows(queryset: QuerySet) -> QuerySet:
    """``queryset`` with the count of its rows on each row (``COUNT(*) OVER ()``): its first
    page, when full, is counted by the statement that reads it, not by a ``COUNT`` statement of
    its own (one round trip and one compiled statement less). For lists that are few rows by
    construction, such as a search's ranked rows: the database reads every row of the list
    before it cuts the page. A ``DISTINCT`` queryset is returned as it is (the window would
    count the rows before they are made distinct)."""
    if queryset.query.distinct:
        return queryset
    return queryset.annotate(**{ROW_COUNT: Window(Count("pk"))})


class FirstPageCounts(Paginator):
    """The first page is read before anything is counted: if it is not full it holds every row
    there is, and no ``COUNT`` statement is sent (a search's list, a short list); if it is full
    and its rows carry their count (``counted_on_rows``), that is the count; else the rows are
    counted as Django does. Other pages as Django does."""

    def page(self, number) -> Page:
        if number != 1 or self.orphans or not self.allow_empty_first_page:
            return super().page(number)
        rows = list(self.object_list[: self.per_page])
        if len(rows) < self.per_page:
            self.__dict__.setdefault("count", len(rows))  # ``count`` is a cached_property
        elif (carried := getattr(rows[0], ROW_COUNT, None)) is not None:
            self.__dict__.setdefault("count", carried)
        return Page(rows, 1, self)


class DefaultPagination(PageNumberPagination):
    """``?page=N&page_size=M``: positive integers (anything else is a 400, not ignored); a
    page size over the maximum is cut to it; a page past the last one is a 404."""

    django_paginator_class = FirstPageCounts
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200

    def get_page_size(self, request: Request):
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        return min(_positive_query_int(self.page_size_query_param, raw), self.max_page_size)

    def get_page_number(self, request: Request, paginator):
        raw = request.query_params.get(self.page_query_param)
        if raw is None:
            return 1
        if raw in self.last_page_strings:
            return paginator.num_pages
        return _positive_query_int(self.page_query_param, raw)

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1
            if parameter["name"] == self.page_size_query_param:
                parameter["description"] = (
                    f"Results per page (default {self.page_size}; larger values are cut to {self.max_page_size})."
                )
        return parameters


# The lists of the agent runtime's API (conversations, messages, runs, the notes file's changes)
# are bounded: at most LIST_MAX_PAGE_SIZE items, their large text fields cut (marked); the detail
# endpoints return the full text.
LIST_MAX_PAGE_SIZE = 50


class ListPagination(DefaultPagination):
    page_size = LIST_MAX_PAGE_SIZE
    max_page_size = LIST_MAX_PAGE_SIZE


def _positive_query_int(name: str, raw: str) -> int:
    if not raw.isascii() or not raw.isdigit() or int(raw) < 1:
        raise drf_exceptions.ValidationError({name: ["Must be a positive integer."]})
    return int(raw)
