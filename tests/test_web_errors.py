"""The one web error path: domain errors a page view does not handle become pages."""

import pytest
from django import forms
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ValidationError
from django.test import RequestFactory

from config.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from config.web import DomainErrorMiddleware, service_call


def _middleware():
    return DomainErrorMiddleware(lambda request: None)


def _request(path="/memories/"):
    request = RequestFactory().get(path)
    request.user = AnonymousUser()
    return request


def test_not_found_is_the_404_page():
    response = _middleware().process_exception(_request(), NotFound("Memory not found."))
    assert response.status_code == 404


def test_permission_denied_is_the_403_page():
    response = _middleware().process_exception(_request(), PermissionDenied("No."))
    assert response.status_code == 403


def test_other_domain_errors_are_the_error_page_with_their_status():
    response = _middleware().process_exception(_request(), Conflict("Already superseded."))
    assert response.status_code == 409
    assert "Already superseded." in response.content.decode()


def test_api_paths_and_other_exceptions_are_left_alone():
    assert _middleware().process_exception(_request("/api/users/me/memories"), NotFound()) is None
    assert _middleware().process_exception(_request(), ValueError("bug")) is None


class _Form(forms.Form):
    content = forms.CharField()


def test_service_call_puts_input_errors_on_the_form():
    form = _Form({"content": "x"})
    assert form.is_valid()
    with service_call(form) as call:
        raise InvalidInput("content is empty.", code="invalid_content")
    assert (call.ok, call.status) == (False, 400)
    assert form.errors["content"] == ["content is empty."]


def test_service_call_puts_model_validation_errors_on_the_form():
    form = _Form({"content": "x"})
    assert form.is_valid()
    with service_call(form) as call:
        raise ValidationError({"content": ["Too odd."], "elsewhere": ["Whole form."]})
    assert (call.ok, call.status) == (False, 400)
    assert form.errors["content"] == ["Too odd."] and form.non_field_errors() == ["Whole form."]


@pytest.mark.parametrize("error", [NotFound(), PermissionDenied("No.")])
def test_service_call_lets_hidden_and_forbidden_through_to_the_middleware(error):
    form = _Form({"content": "x"})
    assert form.is_valid()
    with pytest.raises(type(error)), service_call(form):
        raise error
    assert not form.errors


def test_service_call_puts_a_validation_error_without_fields_on_the_form():
    form = _Form({"content": "x"})
    assert form.is_valid()
    with service_call(form) as call:
        raise ValidationError("Something about the whole form.")
    assert (call.ok, call.status) == (False, 400)
    assert form.non_field_errors() == ["Something about the whole form."]
