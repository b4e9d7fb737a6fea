"""The one switch model (docs/auto-memory.md, "Switches"): the three per-user memory switches
read and changed together, for the settings panel and ``/api/users/me/memory-switches``.

- ``enable_memory`` (``UserSettings``, default on): the main agent gets the notes file
  (``MEMORY.md``) and the three memory tools.
- ``use`` (auto-memory, default off): the latest identity memories are added to the first round
  of each new top-level chat run.
- ``generate`` (auto-memory, default off): finished top-level runs in a project are read and
  explicit statements become project memories.

Sub-agents, coordinators, checkpoints and runs with a parent get none of it whatever the
switches say, and neither does a run in a "don't remember this chat" conversation
(``run_gets_memory``). Each switch keeps its own service (the notes-file switch is changed
under the same per-user lock as ``remember_memory``); this module validates all changes
before any of them is written, so a malformed request changes nothing.
"""

from dataclasses import asdict, dataclass

from config.errors import InvalidInput
from memory_app.automemory import services as automemory_services
from memory_app.automemory.errors import ErrorCode
from memory_app.automemory.selectors import auto_memory_settings_get
from memory_app.notes import services as notes_services
from memory_app.notes.selectors import user_settings_get

SWITCH_FIELDS = ("enable_memory", "use", "generate")


@dataclass(frozen=True)
class MemorySwitches:
    enable_memory: bool
    use: bool
    generate: bool

    def as_dict(self) -> dict:
        return asdict(self)


def memory_switches_get(*, user) -> MemorySwitches:
    auto = auto_memory_settings_get(user=user)
    return MemorySwitches(
        enable_memory=user_settings_get(user=user).enable_memory, use=auto.use, generate=auto.generate
    )


def memory_switches_validate(changes) -> dict:
    """Known switch names with true/false values only; anything else is refused whole."""
    if not isinstance(changes, dict):
        raise InvalidInput("Send an object with enable_memory, use and/or generate.", code=ErrorCode.INVALID_SWITCHES)
    unknown = sorted(str(name) for name in set(changes) - set(SWITCH_FIELDS))
    if unknown:
        raise InvalidInput(f"Unknown switches: {', '.join(unknown)}.", code=ErrorCode.INVALID_SWITCHES)
    for name, value in changes.items():
        if not isinstance(value, bool):
            raise InvalidInput(f"{name} must be true or false.", code=ErrorCode.INVALID_SWITCHES)
    return dict(changes)


def memory_switches_update(*, user, changes) -> MemorySwitches:
    """Change some of the three switches (the others keep their value); all are validated
    before the first one is written."""
    changes = memory_switches_validate(changes)
    if "enable_memory" in changes:
        notes_services.user_settings_update(user=user, enable_memory=changes["enable_memory"])
    auto = {name: changes[name] for name in ("use", "generate") if name in changes}
    if auto:
        automemory_services.auto_memory_settings_update(user=user, changes=auto)
    return memory_switches_get(user=user)
