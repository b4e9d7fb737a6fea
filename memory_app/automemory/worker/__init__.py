"""Auto-memory extraction (docs/auto-memory.md): sweep, claim, gate, redact, extract, write.

A run of a "don't remember this chat" conversation is stopped before its messages are read
(``no_memory_gate``), logged with that reason and marked processed.

A round sweeps completed top-level runs whose effective ``generate`` is on and that carry no
processed marker. Each run is claimed (``SELECT … FOR UPDATE SKIP LOCKED`` on PostgreSQL, then
a unique claim row with an expiry); the conversation is read, gated, redacted and handed to
the extractor **outside** any transaction (the extractor may call an HTTP endpoint); the
memories, the log entries and the processed marker are then written in one transaction that
re-checks the marker and the claim under a row lock. A worker that dies mid-run leaves no
memory behind and its claim expires, so the run becomes claimable again.

By job: ``claim`` (sweep and claim), ``reading`` (a run's text and gate inputs), ``writing``
(log, marker, memories), ``run`` (one run) and ``rounds`` (a batch, and the on-demand job,
registered when this package is imported).
"""

from memory_app.automemory.worker.claim import CLAIM_SECONDS, SWEEP_BATCH, runs_claim, sweep_queryset
from memory_app.automemory.worker.reading import MAX_TEXT_CHARS, gate_inputs, run_text
from memory_app.automemory.worker.rounds import (
    AUTO_MEMORY_ROUND_JOB,
    RoundReport,
    auto_memory_round_for_user,
    auto_memory_round_job,
    auto_memory_round_request,
    round_run,
)
from memory_app.automemory.worker.run import MAX_ATTEMPTS, run_process
from memory_app.automemory.worker.writing import RunResult

__all__ = [
    "AUTO_MEMORY_ROUND_JOB",
    "CLAIM_SECONDS",
    "MAX_ATTEMPTS",
    "MAX_TEXT_CHARS",
    "SWEEP_BATCH",
    "RoundReport",
    "RunResult",
    "auto_memory_round_for_user",
    "auto_memory_round_job",
    "auto_memory_round_request",
    "gate_inputs",
    "round_run",
    "run_process",
    "run_text",
    "runs_claim",
    "sweep_queryset",
]
