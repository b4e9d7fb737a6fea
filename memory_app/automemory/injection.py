"""Identity-memory injection into a run's first round (docs/auto-memory.md, Injection). Implemented by the
auto-memory part; the context assembler calls ``identity_injection_for_run`` and treats any
exception it raises as fail-open (context without the block, a warning, a log line)."""

import logging
from dataclasses import dataclass

from config.errors import NotFound, PermissionDenied
from memory_app.automemory.selectors import effective_flags
from memory_app.memories.identity_context import render_identity_text
from memory_app.memories.selectors import latest_active_project_memories, latest_active_user_memories
from memory_app.memories.timing import user_zone
from memory_app.runs.models import RunKind, run_gets_memory, run_reaches_user

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Injection:
    prompt: str  # a copy of the run's prompt with the identity block prepended
    goal: str | None  # likewise for the goal, when the run has one
    block: str  # the identity block itself (marked as data, not instructions)
    memory_ids: tuple[str, ...] = ()  # the memories the block shows (recorded as read)


def _injects(run, round_number: int) -> bool:
    # Only a new top-level run, on its first round: a resume continues a context that already
    # has the block; sub-agents, coordinators, checkpoints and any run with a parent never get
    # the user's memories; nor does a run in a "don't remember this chat" conversation.
    return round_number == 1 and run_gets_memory(run) and run.kind == RunKind.CHAT and effective_flags(run=run).use


def identity_injection_for_run(*, run, round_number: int) -> Injection | None:
    """Return the injection for ``run`` at ``round_number`` (1 = first round), or None.

    The stored prompt and goal are never changed: the returned strings are copies.
    """
    if not _injects(run, round_number):
        return None
    # A run held through a token limited to projects gets its project's memories only.
    user_memories = latest_active_user_memories(user=run.user) if run_reaches_user(run) else []
    project_memories = []
    if run.project_id:
        try:
            project_memories = latest_active_project_memories(user=run.user, project_id=run.project_id)
        except (NotFound, PermissionDenied):
            project_memories = []  # the user lost access to the project: nothing of it is shown
    if not user_memories and not project_memories:
        return None
    block = render_identity_text(
        profile=None, user_memories=user_memories, project_memories=project_memories, zone=user_zone(run.user)
    )
    prompt = f"{block}\n\n{run.prompt or ''}"
    goal = f"{block}\n\n{run.goal}" if run.goal else run.goal
    memory_ids = tuple(m.pk for m in [*user_memories, *project_memories])
    return Injection(prompt=prompt, goal=goal, block=block, memory_ids=memory_ids)
