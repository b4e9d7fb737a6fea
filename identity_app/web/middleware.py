"""The language and time zone a web page is rendered in.

Language: the profile's choice, else the language switch's cookie, else the browser's
``Accept-Language`` (Django's ``LocaleMiddleware``), else ``LANGUAGE_CODE``. Time zone: the
profile's. The API keeps English and UTC whoever asks: its messages and timestamps are a contract
for programs, not a page for a person.
"""

import zoneinfo
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.middleware.locale import LocaleMiddleware
from django.utils import timezone, translation

from config.api.routes import is_api_request
from identity_app.models import Profile


def _profile_of(request: HttpRequest) -> Mapping[str, Any] | None:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return None
    return Profile.objects.filter(user=user).values("language", "timezone").first()


def _zone(name: str | None) -> zoneinfo.ZoneInfo | None:
    try:
        return zoneinfo.ZoneInfo(name) if name else None
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return None


class UserLocaleMiddleware(LocaleMiddleware):
    """After ``AuthenticationMiddleware`` (it reads the signed-in user's profile)."""

    def process_request(self, request: HttpRequest) -> None:
        timezone.deactivate()
        if is_api_request(request):
            translation.activate(settings.LANGUAGE_CODE)
            request.LANGUAGE_CODE = translation.get_language()
            return
        profile = _profile_of(request)
        language = (profile or {}).get("language")
        if language and translation.check_for_language(language):
            translation.activate(language)
            request.LANGUAGE_CODE = translation.get_language()
        else:
            super().process_request(request)
        zone = _zone((profile or {}).get("timezone"))
        if zone is not None:
            timezone.activate(zone)

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if is_api_request(request):
            return response
        return super().process_response(request, response)
