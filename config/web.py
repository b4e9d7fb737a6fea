"""The one way domain errors (``config.errors``) surface in the server-rendered pages.

- ``DomainErrorMiddleware``: an error a page view does not handle becomes the matching page,
  exactly as in the API — hidden things 404, forbidden things 403, anything else the error
  page with the error's status. Views need no decorator for this.
- ``service_call(form)``: a service call made for a submitted form; a refused input (a 400
  or 409 domain error, or a model ``ValidationError``) is shown on the form with its status,
  while 403/404 still go to the middleware.
"""

from collections.abc import Iterable
from dataclasses import dataclass

from django import forms
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.handlers.exception import response_for_exception
from django.http import Http404, HttpRequest
from django.shortcuts import render

from config.api.routes import is_api_request
from config.errors import DomainError, NotFound, PermissionDenied

# Error codes of the services that are about one form field (None: the form as a whole).
FIELD_OF_CODE = {
    "invalid_content": "content",
    "too_large": "content",
    "invalid_kind": "kind",
    "invalid_expires_at": "expires_at",
    "unknown_user": "only_users",
    "unknown_project": "only_projects",
}


class DomainErrorMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception):
        if not isinstance(exception, DomainError) or is_api_request(request):
            return None  # the API's exception handler answers in JSON
        if isinstance(exception, NotFound):
            return response_for_exception(request, Http404(exception.message))
        if isinstance(exception, PermissionDenied):
            return response_for_exception(request, DjangoPermissionDenied(exception.message))
        return render(request, "error.html", {"error": exception}, status=exception.status_code)


@dataclass
class ServiceCall:
    form: forms.BaseForm
    ok: bool = True
    status: int = 200

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is None:
            return False
        if isinstance(exc, DjangoValidationError):
            # Model validators ran inside the service's transaction; nothing was saved.
            by_field: Iterable[tuple[str | None, list[str]]] = (
                exc.message_dict.items() if hasattr(exc, "error_dict") else [(None, exc.messages)]
            )
            for field, errors in by_field:
                self.form.add_error(field if field in self.form.fields else None, errors)
            self.ok, self.status = False, 400
            return True
        if isinstance(exc, DomainError) and not isinstance(exc, PermissionDenied):
            field = FIELD_OF_CODE.get(exc.code)
            if isinstance(exc, NotFound) and field not in self.form.fields:
                return False  # the page's own object is not there: the 404 page
            # A name typed into the form that names nothing is that field's error.
            self.form.add_error(field if field in self.form.fields else None, exc.message)
            self.ok, self.status = False, 400 if isinstance(exc, NotFound) else exc.status_code
            return True
        return False


def service_call(form) -> ServiceCall:
    """``with service_call(form) as call: service(...)``, then ``call.ok`` / ``call.status``."""
    return ServiceCall(form)
