"""The log's gates and reasons in the reader's language.

The worker stores them in English (the API shows them as stored); the web page and the admin
show these words instead: a reason this module does not know is shown as it is."""

import re

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from memory_app.automemory.gates import GATE_ORDER, NO_MEMORY_GATE

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
