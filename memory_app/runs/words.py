"""What a run reports about itself, in the reader's words: its usage figures (``usage``, as the
runtime sent them with ``finish``) and durations. Known figures get a label; any other key is
kept, as sent, for the "Technical details" of the pages."""

from dataclasses import dataclass, field
from numbers import Real

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy


def duration_words(seconds) -> str:
    """``95`` → "1 min 35 s"; hours and days for longer spans; "—" for no number."""
    if not isinstance(seconds, Real) or isinstance(seconds, bool) or seconds < 0:
        return "—"
    whole = int(float(seconds) + 0.5)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return _("%(d)s d %(h)s h") % {"d": days, "h": hours}
    if hours:
        return _("%(h)s h %(m)s min") % {"h": hours, "m": minutes}
    if minutes:
        return _("%(m)s min %(s)s s") % {"m": minutes, "s": secs}
    return _("%(s)s s") % {"s": secs}


def _percent(value) -> str:
    if not isinstance(value, Real) or isinstance(value, bool):
        return "—"
    return _("%(n)s%%") % {"n": f"{value:g}"}


# usage key → (label, how its value reads)
USAGE_WORDS = {
    "duration_s": (gettext_lazy("Took"), duration_words),
    "quota_remaining_pct": (gettext_lazy("Quota left when it finished"), _percent),
}


@dataclass
class UsageWords:
    known: list[tuple[str, str]] = field(default_factory=list)  # (label, value in words)
    other: list[tuple[str, str]] = field(default_factory=list)  # (key as sent, value as sent)


def usage_words(usage) -> UsageWords:
    words = UsageWords()
    if not isinstance(usage, dict):
        return words
    for key, value in sorted(usage.items(), key=lambda item: str(item[0])):
        if key in USAGE_WORDS:
            label, read = USAGE_WORDS[key]
            words.known.append((str(label), read(value)))
        else:
            words.other.append((str(key)[:100], str(value)[:300]))
    return words
