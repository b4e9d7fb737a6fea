"""How domain errors (config.errors) surface in the server-rendered pages.

Hidden things are 404 and forbidden things 403, exactly as in the API; input errors and
conflicts are shown next to the form by the view that called the service.
"""

from functools import wraps

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from django.shortcuts import render

from config.errors import DomainError, NotFound, PermissionDenied


def web_errors(view):
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except NotFound as exc:
            raise Http404(exc.message) from None
        except PermissionDenied as exc:
            raise DjangoPermissionDenied(exc.message) from None
        except DomainError as exc:  # any other domain error a view did not place on a form
            return render(request, "memory_app/error.html", {"error": exc}, status=exc.status_code)

    return wrapper


def form_error_status(exc: DomainError) -> int:
    """Status of a page re-rendered with a service error on its form (400, 409, ...)."""
    return exc.status_code
