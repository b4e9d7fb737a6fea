"""Auto-memory pages: the memory switches panel, auto-memory settings, the log, a run's flags.
Thin: forms → the same services."""

from collections.abc import Sequence

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods

from config.errors import InvalidInput
from config.http import AuthenticatedHttpRequest
from config.web import service_call
from memory_app.automemory import selectors, services, switches, words
from memory_app.automemory.errors import ErrorCode
from memory_app.automemory.models import AUTO_MEMORY_LIMITS, MODEL_NAME_MAX, AutoMemoryOutcome
from memory_app.runs.selectors import run_get
from memory_app.threads import selectors as thread_selectors

LOG_PAGE_SIZE = 50
SWITCH_LABELS = [
    ("enable_memory", _("Memory (the notes file)")),
    ("use", _("Use my memories in new agent tasks")),
    ("generate", _("Generate memories from my finished agent tasks")),
]


class AutoMemorySettingsForm(forms.Form):
    """The thresholds and models; the two switches are on the one switches panel only."""

    extract_model = forms.CharField(required=False, max_length=MODEL_NAME_MAX, label=_("Extraction model (stored)"))
    consolidation_model = forms.CharField(
        required=False, max_length=MODEL_NAME_MAX, label=_("Consolidation model (stored)")
    )
    min_idle_minutes = forms.IntegerField(min_value=0, max_value=AUTO_MEMORY_LIMITS["min_idle_minutes"])
    min_duration_seconds = forms.IntegerField(min_value=0, max_value=AUTO_MEMORY_LIMITS["min_duration_seconds"])
    min_length_chars = forms.IntegerField(min_value=0, max_value=AUTO_MEMORY_LIMITS["min_length_chars"])
    min_quota_remaining_pct = forms.IntegerField(min_value=0, max_value=AUTO_MEMORY_LIMITS["min_quota_remaining_pct"])
    redact_contact_info = forms.BooleanField(required=False, label=_("Also redact emails and phone numbers"))


@login_required
@require_http_methods(["GET", "POST"])
def auto_memory_settings(request: AuthenticatedHttpRequest):
    current = selectors.auto_memory_settings_get(user=request.user)
    initial = {
        name: getattr(current, name) for name in services.SETTINGS_FIELDS if name in AutoMemorySettingsForm.base_fields
    }
    form = AutoMemorySettingsForm(request.POST or None, initial=initial)
    status = 200
    if request.method == "POST":
        if not form.is_valid():
            status = 400
        else:
            with service_call(form) as call:
                services.auto_memory_settings_update(user=request.user, changes=form.cleaned_data)
            if call.ok:
                messages.success(request, _("Auto-memory settings saved."))
                return redirect("web:auto_memory_settings")
            status = call.status
    return render(
        request, "automemory/settings.html", {"form": form, "settings_url": reverse("web:settings")}, status=status
    )


@login_required
@require_http_methods(["GET"])
def auto_memory_log(request: AuthenticatedHttpRequest):
    outcome = request.GET.get("outcome") or None
    if outcome not in (None, *AutoMemoryOutcome.values):
        outcome = None
    run_id = request.GET.get("run", "")[:40] or None  # the entries of one run (links from a memory's provenance)
    entries = selectors.auto_memory_log_for(user=request.user, outcome=outcome, run_id=run_id)
    page = Paginator(entries, LOG_PAGE_SIZE).get_page(request.GET.get("page"))
    page.object_list = list(page.object_list)
    for entry in page.object_list:
        entry.gate_words = words.gate_words(entry.gate)
        entry.reason_words = words.reason_words(entry.reason)
        entry.detail_sentences, entry.detail_other = words.detail_words(entry.gate, entry.details)
    return render(
        request,
        "automemory/log.html",
        {"page": page, "outcome": outcome or "", "outcomes": AutoMemoryOutcome.choices, "run_id": run_id or ""},
    )


_FLAG_CHOICES = [("inherit", _("Inherit my setting")), ("on", _("On for this task")), ("off", _("Off for this task"))]
_FLAG_VALUES = {"inherit": None, "on": True, "off": False}


class RunFlagsForm(forms.Form):
    generate = forms.ChoiceField(choices=_FLAG_CHOICES)
    use = forms.ChoiceField(choices=_FLAG_CHOICES)


def _choice(value: bool | None) -> str:
    return "inherit" if value is None else ("on" if value else "off")


@login_required
@require_http_methods(["GET", "POST"])
def run_auto_memory_flags(request: AuthenticatedHttpRequest, run_id):
    run = run_get(user=request.user, run_id=run_id, own_only=True)
    form = RunFlagsForm(
        request.POST or None,
        initial={"generate": _choice(run.auto_memory_generate), "use": _choice(run.auto_memory_use)},
    )
    if request.method == "POST" and form.is_valid():
        services.run_auto_memory_flags_set(
            actor=request.user,
            run_id=run.pk,
            generate=_FLAG_VALUES[form.cleaned_data["generate"]],
            use=_FLAG_VALUES[form.cleaned_data["use"]],
        )
        messages.success(request, _("Auto-memory flags of this task saved."))
        return redirect("web:run_auto_memory_flags", run_id=run.pk)
    return render(
        request,
        "automemory/run_flags.html",
        {"run": run, "form": form, "effective": selectors.effective_flags(run=run)},
    )


@login_required
@require_http_methods(["GET", "POST"])
def settings_page(request: AuthenticatedHttpRequest):
    """The one panel of the three memory switches (docs/auto-memory.md, "Switches"). Each switch
    is a form of its own, sent when it is toggled: ``switch`` names the one it changes. Without
    ``switch`` the form sets all three. A checkbox left out of the form is off, as browsers send
    only checked boxes."""
    if request.method == "POST":
        names: Sequence[str] = switches.SWITCH_FIELDS
        if "switch" in request.POST:
            names = [name for name in switches.SWITCH_FIELDS if name == request.POST["switch"]]
            if not names:
                # gettext, not the lazy _: an error's message is a str, read in the request's language.
                raise InvalidInput(gettext("Unknown switch."), code=ErrorCode.INVALID_SWITCHES)
        changes = {name: request.POST.get(name) == "on" for name in names}
        state = switches.memory_switches_update(user=request.user, changes=changes)
        if len(names) == 1:
            label = dict(SWITCH_LABELS)[names[0]]
            on = getattr(state, names[0])
            messages.success(
                request,
                (_("Saved: “%(switch)s” is on.") if on else _("Saved: “%(switch)s” is off.")) % {"switch": label},
            )
        else:
            messages.success(request, _("Memory switches saved."))
        return redirect("web:settings")
    state = switches.memory_switches_get(user=request.user)
    private_chats = thread_selectors.conversations_visible(user=request.user).filter(no_memory=True).count()
    return render(
        request,
        "automemory/switches.html",
        {"switches": state, "private_chats": private_chats},
    )


urlpatterns = [
    path("settings/", settings_page, name="settings"),
    path("auto-memory/settings/", auto_memory_settings, name="auto_memory_settings"),
    path("auto-memory/log/", auto_memory_log, name="auto_memory_log"),
    path("runs/<slug:run_id>/auto-memory/", run_auto_memory_flags, name="run_auto_memory_flags"),
]
