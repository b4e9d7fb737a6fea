"""Reads of auto-memory data: a user's settings and log (only their own), and the flags a run
effectively has."""

from dataclasses import dataclass

from django.db.models import QuerySet

from memory_app.automemory.models import AutoMemoryLogEntry, AutoMemorySettings
from memory_app.runs.models import AgentRun


def auto_memory_log_for(*, user, outcome: str | None = None, run_id: str | None = None) -> QuerySet[AutoMemoryLogEntry]:
    qs = AutoMemoryLogEntry.objects.filter(user=user).order_by("-created_at", "-id")
    if outcome:
        qs = qs.filter(outcome=outcome)
    if run_id:
        qs = qs.filter(run_ref=run_id)
    return qs


def auto_memory_log_for_memories(*, user, memory_ids: list[str]) -> QuerySet[AutoMemoryLogEntry]:
    """The user's own log entries that wrote these memories (other users' logs stay theirs)."""
    return auto_memory_log_for(user=user).filter(memory_id__in=list(memory_ids)).select_related("run")


def auto_memory_settings_get(*, user) -> AutoMemorySettings:
    """The user's settings; an unsaved row with the defaults when they never saved any."""
    try:
        return AutoMemorySettings.objects.get(user=user)  # one row per user
    except AutoMemorySettings.DoesNotExist:
        return AutoMemorySettings(user=user)


@dataclass(frozen=True)
class EffectiveFlags:
    generate: bool
    use: bool


def effective_flags(*, run: AgentRun, user_settings: AutoMemorySettings | None = None) -> EffectiveFlags:
    if user_settings is None:
        user_settings = auto_memory_settings_get(user=run.user)
    return EffectiveFlags(
        generate=user_settings.generate if run.auto_memory_generate is None else run.auto_memory_generate,
        use=user_settings.use if run.auto_memory_use is None else run.auto_memory_use,
    )
