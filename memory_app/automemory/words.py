"""The log's gates and reasons in the reader's language.

The worker stores them in English (the API shows them as stored); the web page and the admin
show these words instead: a reason this module does not know is shown as it is."""

import re

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from memory_app.automemory.gates import GATE_ORDER, NO_MEMORY_GATE
from memory_app.runs.words import duration_words

GATE_WORDS = {
    NO_MEMORY_GATE: gettext_lazy("“don't remember this chat”"),
    "idle": gettext_lazy("time since the chat ended"),
    "duration": gettext_lazy("how long the task took"),
    "length": gettext_lazy("length of the conversation"),
    "external_context": gettext_lazy("text from elsewhere"),
    "quota": gettext_lazy("remaining quota"),
}
assert set(GATE_ORDER) <= set(GATE_WORDS)

REASON_WORDS = {
    "the conversation is in “don't remember this chat” mode": gettext_lazy(
        "the conversation is in “don't remember this chat” mode"
    ),
    "run finished too recently": gettext_lazy("the task finished too recently"),
    "run too short": gettext_lazy("the task was too short"),
    "conversation too short": gettext_lazy("the conversation was too short"),
    "run received external context": gettext_lazy("the task received text from another task or person"),
    "remaining quota too low": gettext_lazy("too little quota was left"),
    "nothing to extract": gettext_lazy("nothing worth remembering"),
    "generate is off": gettext_lazy("generating memories is off"),
    "the run's thread belongs to another user": gettext_lazy("the conversation belongs to another person"),
    "worker stopped while processing; given up": gettext_lazy("stopped while working; given up"),
    "run has no project; auto-memory writes project memories only": gettext_lazy(
        "the task belongs to no project; auto-memory writes project memories only"
    ),
    "the run's user may not write memories of this project": gettext_lazy("you may not write memories of this project"),
}

_PATTERNS = (
    (re.compile(r"already expired \((?P<when>.*)\)"), lambda m: _("already expired (%(when)s)") % m.groupdict()),
    (re.compile(r"expires: (?P<when>.*)"), lambda m: _("expires: %(when)s") % m.groupdict()),
    (re.compile(r"failed (?P<n>\d+) times; given up"), lambda m: _("failed %(n)s times; given up") % m.groupdict()),
    (
        re.compile(r"failed \(attempt (?P<n>\d+) of (?P<of>\d+)\); will retry"),
        lambda m: _("failed (attempt %(n)s of %(of)s); will retry") % m.groupdict(),
    ),
)


def gate_words(gate: str) -> str:
    return str(GATE_WORDS.get(gate, gate))


def reason_words(reason: str) -> str:
    if reason in REASON_WORDS:
        return str(REASON_WORDS[reason])
    for pattern, words in _PATTERNS:
        match = pattern.fullmatch(reason)
        if match:
            return words(match)
    return reason


def _n(value) -> str:
    return "—" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


# The figures a gate compared (``details`` of a log entry), as one sentence per gate.
_DETAIL_SENTENCES = {
    "idle": (
        ("idle_seconds", "min_idle_seconds"),
        lambda v: (
            _("It had finished %(was)s before; the setting asks for %(needed)s.")
            % {"was": duration_words(v["idle_seconds"]), "needed": duration_words(v["min_idle_seconds"])}
        ),
    ),
    "duration": (
        ("duration_seconds", "min_duration_seconds"),
        lambda v: (
            _("It took %(took)s; the setting asks for at least %(needed)s.")
            % {"took": duration_words(v["duration_seconds"]), "needed": duration_words(v["min_duration_seconds"])}
        ),
    ),
    "length": (
        ("length_chars", "min_length_chars"),
        lambda v: (
            _("The conversation held %(n)s characters; the setting asks for at least %(needed)s.")
            % {"n": _n(v["length_chars"]), "needed": _n(v["min_length_chars"])}
        ),
    ),
    "external_context": (
        ("inter_run_messages", "coordinator_subtasks"),
        lambda v: (
            _("It received %(messages)s messages from other tasks and %(subtasks)s sub-tasks from a coordinator.")
            % {"messages": _n(v["inter_run_messages"]), "subtasks": _n(v["coordinator_subtasks"])}
        ),
    ),
    "quota": (
        ("quota_remaining_pct", "min_quota_remaining_pct"),
        lambda v: (
            _("%(left)s%% of the quota was left; the setting asks for at least %(needed)s%%.")
            % {"left": _n(v["quota_remaining_pct"]), "needed": _n(v["min_quota_remaining_pct"])}
        ),
    ),
    NO_MEMORY_GATE: (
        ("conversation_no_memory",),
        lambda v: (
            _("The conversation was in “don't remember this chat” mode.")
            if v["conversation_no_memory"]
            else _("The conversation was remembered as usual.")
        ),
    ),
}


def detail_words(gate: str, details) -> tuple[list[str], list[tuple[str, str]]]:
    """What a gate compared, as sentences of the reader's language, and any other figure the
    entry holds as (key, value) for the technical details."""
    if not isinstance(details, dict):
        return [], []
    sentences, used = [], set()
    known = _DETAIL_SENTENCES.get(gate)
    if known is not None and all(key in details for key in known[0]):
        try:
            sentences.append(known[1](details))
            used = set(known[0])
        except (TypeError, ValueError):
            used = set()  # figures of an unexpected type: shown as they are below
    other = [
        (str(k)[:100], str(v)[:300]) for k, v in sorted(details.items(), key=lambda kv: str(kv[0])) if k not in used
    ]
    return sentences, other
