"""Identity-memory injection into a run's first round (SPEC §5 item 4). Implemented by the
auto-memory part; the context assembler calls ``identity_injection_for_run`` and treats any
exception it raises as fail-open (context without the block, a warning, a log line)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Injection:
    prompt: str  # a copy of the run's prompt with the identity block prepended
    goal: str | None  # likewise for the goal, when the run has one
    block: str  # the identity block itself (marked as data, not instructions)


def identity_injection_for_run(*, run, round_number: int) -> Injection | None:
    """Return the injection for ``run`` at ``round_number`` (1 = first round), or None."""
    return None
