"""Auto-memory switches: per-user settings, per-run overrides and the effective values.

A run's override (``AgentRun.auto_memory_generate`` / ``auto_memory_use``) beats the user's
setting in both directions; ``None`` inherits it. A user without a settings row has the
defaults, which are off.
"""

from django.db import transaction
from django.utils.translation import gettext

from config.errors import InvalidInput
from config.validation import clean_text
from memory_app.automemory.errors import ErrorCode
from memory_app.automemory.models import AUTO_MEMORY_LIMITS, MODEL_NAME_MAX, AutoMemoryLogEntry, AutoMemorySettings
from memory_app.runs.models import AgentRun
from memory_app.runs.selectors import run_get

_UNSET = object()
BOOL_FIELDS = ("generate", "use", "redact_contact_info")
MODEL_FIELDS = ("extract_model", "consolidation_model")
THRESHOLD_FIELDS = tuple(AUTO_MEMORY_LIMITS)
SETTINGS_FIELDS = BOOL_FIELDS[:2] + MODEL_FIELDS + THRESHOLD_FIELDS + BOOL_FIELDS[2:]


def auto_memory_settings_validate(changes: dict) -> dict:
    """The one rule for settings values (API, web page and admin): known fields, booleans,
    bounded model names, thresholds from 0 to ``AUTO_MEMORY_LIMITS``. Returns them cleaned."""
    unknown = sorted(set(changes) - set(SETTINGS_FIELDS))
    if unknown:
        raise InvalidInput(
            gettext("Unknown settings: %(names)s.") % {"names": ", ".join(unknown)}, code=ErrorCode.INVALID_SETTINGS
        )
    for name, value in changes.items():
        if name in BOOL_FIELDS and not isinstance(value, bool):
            raise InvalidInput(
                gettext("%(name)s must be true or false.") % {"name": name}, code=ErrorCode.INVALID_SETTINGS
            )
        if name in MODEL_FIELDS and (not isinstance(value, str) or len(value) > MODEL_NAME_MAX):
            raise InvalidInput(
                gettext("%(name)s must be a string of at most %(n)s characters.") % {"name": name, "n": MODEL_NAME_MAX},
                code=ErrorCode.INVALID_SETTINGS,
            )
        if name in MODEL_FIELDS:
            clean_text(value, field=name)
        if name in THRESHOLD_FIELDS:
            limit = AUTO_MEMORY_LIMITS[name]
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limit:
                raise InvalidInput(
                    gettext("%(name)s must be an integer from 0 to %(n)s.") % {"name": name, "n": limit},
                    code=ErrorCode.INVALID_SETTINGS,
                )
    return {k: (v.strip() if isinstance(v, str) else v) for k, v in changes.items()}


def auto_memory_settings_update(*, user, changes: dict) -> AutoMemorySettings:
    """Change some of the user's settings (the others keep their value)."""
    changes = auto_memory_settings_validate(changes)
    with transaction.atomic():
        row, _ = AutoMemorySettings.objects.select_for_update().get_or_create(user=user)
        for name, value in changes.items():
            setattr(row, name, value)
        row.full_clean()
        row.save()
    return row


def run_auto_memory_flags_set(*, actor, run_id: str, generate=_UNSET, use=_UNSET) -> AgentRun:
    """Set a run's overrides; ``None`` means inherit the user's setting, omitted = unchanged."""
    for name, value in (("generate", generate), ("use", use)):
        if value is not _UNSET and value is not None and not isinstance(value, bool):
            raise InvalidInput(f"{name} must be true, false or null.", code=ErrorCode.INVALID_FLAGS)
    with transaction.atomic():
        owned = run_get(user=actor, run_id=run_id, own_only=True)
        run = AgentRun.objects.select_for_update().get(pk=owned.pk)
        fields = []
        if generate is not _UNSET:
            run.auto_memory_generate = generate
            fields.append("auto_memory_generate")
        if use is not _UNSET:
            run.auto_memory_use = use
            fields.append("auto_memory_use")
        if fields:
            run.save(update_fields=[*fields, "updated_at"])
    return run


def auto_memory_log_forget(memory_ids: list[str]) -> None:
    """Memories are being forgotten: the log keeps that they were extracted, not their text.
    Registered with ``memory_app.memories.derived`` (apps.py), so every way of forgetting does it."""
    ids = list(memory_ids)
    for start in range(0, len(ids), 500):
        AutoMemoryLogEntry.objects.filter(memory_id__in=ids[start : start + 500]).exclude(content="").update(content="")
