import json
import zoneinfo
from functools import lru_cache

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from config.web import service_call
from identity_app.selectors import profile_get
from identity_app.services import profile_update
from identity_app.web.forms import ProfileForm


@lru_cache(maxsize=1)
def _timezone_names() -> list[str]:
    return sorted(zoneinfo.available_timezones())


@login_required
@require_http_methods(["GET", "POST"])
def profile(request):
    profile = profile_get(user=request.user)
    status = 200
    if request.method == "POST":
        form = ProfileForm(request.POST)
        if form.is_valid():
            with service_call(form) as call:
                profile_update(user=request.user, **form.cleaned_data)
            if call.ok:
                messages.success(request, "Profile saved.")
                return redirect("web:profile")
            status = call.status
        else:
            status = 400
    else:
        form = ProfileForm(
            initial={
                "display_name": profile.display_name,
                "timezone": profile.timezone,
                "preferences": json.dumps(profile.preferences, indent=2, ensure_ascii=False, sort_keys=True),
            }
        )
    return render(
        request,
        "identity_app/profile.html",
        {"form": form, "profile": profile, "timezones": _timezone_names()},
        status=status,
    )
