"""Admin helpers shared by every app."""

from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.http import HttpRequest, HttpResponseRedirect
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.translation import gettext_noop

from config.errors import DomainError
from config.instants import in_utc

# Words of Django's admin templates that Django's own zh_Hans catalog does not translate yet:
# named here so that makemessages keeps them in ours (which the admin reads first).
DJANGO_ADMIN_WORDS = (gettext_noop("Model name"), gettext_noop("Add link"), gettext_noop("Change or view list link"))


# What the mixin below is mixed into, for mypy only.
if TYPE_CHECKING:
    _ModelAdmin = admin.ModelAdmin
else:
    _ModelAdmin = object


class WideListMixin(_ModelAdmin):
    """A list an operator works in gets the page's whole width for its columns: no navigation
    sidebar beside it (the breadcrumbs lead back), so the filter panel hides no column at 1280 px."""

    def changelist_view(self, request: HttpRequest, extra_context=None):
        return super().changelist_view(request, {**(extra_context or {}), "is_nav_sidebar_enabled": False})


class ServiceModelAdmin(admin.ModelAdmin):
    """A model admin whose ``save_model``/``delete_model`` call the domain services.

    A change the service refuses (any ``DomainError``: the last-owner rule, a chat key that
    cannot be bound …) rolls back the admin view's transaction and comes back to the page
    the user was on with the service's message, so the admin never holds a copy of a rule.
    Bulk delete is off: it would bypass ``delete_model``.
    """

    def changeform_view(self, request: HttpRequest, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except DomainError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def delete_view(self, request: HttpRequest, object_id, extra_context=None):
        try:
            return super().delete_view(request, object_id, extra_context)
        except DomainError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def get_actions(self, request: HttpRequest):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows written only by their services (conversation history: by agent runtimes); the admin
    shows them."""

    def has_add_permission(self, request: HttpRequest, obj=None):
        return False

    def has_change_permission(self, request: HttpRequest, obj=None):
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None):
        return False


class InstantListFilter(admin.DateFieldListFilter):
    """The admin's date filter, its bounds read as the API reads date-times (config/instants.py):
    a bound written with an offset PostgreSQL refuses, or whose instant UTC cannot hold, was a
    500 once typed into the address; now it is the instant, or the admin's "incorrect lookup"."""

    def queryset(self, request, queryset):
        read: dict[str, Any] = {}  # each parameter's values, as a list (as Django keeps them)
        for name, given in self.used_parameters.items():
            read[name] = [_instant(value) for value in (given if isinstance(given, list) else [given])]
        self.used_parameters = read
        return super().queryset(request, queryset)


def _instant(value):
    text = str(value).strip()
    try:
        moment = parse_datetime(text)
        if moment is None:
            day = parse_date(text)
            if day is None:
                raise IncorrectLookupParameters(f"Not a date: {text[:40]!r}")
            return day
        return in_utc(moment) if moment.tzinfo is not None else moment
    except ValueError as error:  # an impossible date, or one UTC cannot hold (OutOfRange)
        raise IncorrectLookupParameters(str(error)) from None
