"""What apply did or would do to a scope-migration plan, in words: results, reasons, and the
dry-run report."""

import re

from django.urls import reverse
from django.utils.translation import gettext_lazy

from memory_app.scoped.models import (
    MigrationDecision,
    ScopeMigrationPlan,
)

MAX_REPORT_ROWS = 500


# Why apply left an entry out, in words (the other reasons are already sentences from apply).
SKIP_REASONS = {
    "rejected": gettext_lazy("it was rejected on review"),
    "keep": gettext_lazy("inspect decided it stays global (keep)"),
    "not approved": gettext_lazy("it is not approved yet (still pending)"),
}
# What apply did with an entry (``migration.apply_plan`` stores these codes), in words.
RESULT_WORDS = {
    "would_apply": gettext_lazy("would move"),
    "applied": gettext_lazy("moved"),
    "skipped": gettext_lazy("skipped"),
    "stale": gettext_lazy("stale"),
    "already_applied": gettext_lazy("already moved"),
    "invalid": gettext_lazy("refused"),
}
# Apply's sentences (stored and printed by the command in English), in the reader's language.
DETAIL_WORDS = {
    "nothing to apply, no backup": gettext_lazy("nothing to apply, no backup"),
    "item no longer exists": gettext_lazy("the item no longer exists"),
    "item changed since inspect": gettext_lazy("the item changed since inspect"),
    "a manual_review entry needs a target chosen from its candidate chats": gettext_lazy(
        "a manual_review entry needs a target chosen from its candidate chats"
    ),
}
_DETAIL_PATTERNS = (
    (re.compile(r"global → chat (?P<chat>.+)"), gettext_lazy("global → chat %(chat)s")),
    (re.compile(r"already in chat (?P<chat>.+)"), gettext_lazy("already in chat %(chat)s")),
    (re.compile(r"invalid target chat (?P<chat>.*)"), gettext_lazy("invalid target chat %(chat)s")),
    (
        re.compile(r"chat (?P<chat>.+) is not what the item's clues name"),
        gettext_lazy("chat %(chat)s is not what the item's clues name"),
    ),
    (
        re.compile(r"the item's clues say (?P<clues>\w+), the plan says (?P<plan>\w+)"),
        gettext_lazy("the item's clues say %(clues)s, the plan says %(plan)s"),
    ),
)


def result_words(result: str) -> str:
    return str(RESULT_WORDS.get(result, result))


def detail_words(detail: str) -> str:
    """A reason or sentence of apply in words; one this module does not know is shown as it is."""
    if detail in SKIP_REASONS:
        return str(SKIP_REASONS[detail])
    if detail in DETAIL_WORDS:
        return str(DETAIL_WORDS[detail])
    for pattern, words in _DETAIL_PATTERNS:
        if match := pattern.fullmatch(detail):
            values = match.groupdict()
            for key in ("clues", "plan"):
                if values.get(key) in MigrationDecision.values:
                    values[key] = MigrationDecision(values[key]).label
            return words % values
    return detail


def counts_words(counts: dict) -> str:
    return ", ".join(f"{result_words(k)}={v}" for k, v in sorted(counts.items()))


def dry_run_report(plan: ScopeMigrationPlan, report: dict) -> dict:
    """What a dry run would move and, for each entry left out, why — with the entry's text and a
    link to it (at most ``MAX_REPORT_ROWS`` rows of each; the counts cover everything)."""
    would: list[dict] = []
    skipped: list[dict] = []
    for row in report["results"]:
        (would if row["result"] == "would_apply" else skipped).append(row)
    shown = would[:MAX_REPORT_ROWS] + skipped[:MAX_REPORT_ROWS]
    entries = {
        e.item_id: e
        for e in plan.entries.filter(item_id__in=[row["item_id"] for row in shown]).only(
            "id", "item_id", "content_preview", "decision"
        )
    }

    def line(row):
        entry = entries.get(row["item_id"])
        return {
            "item_id": row["item_id"],
            "result": result_words(row["result"]),
            "why": detail_words(row["detail"]),
            "preview": entry.content_preview if entry else "",
            "decision": entry.get_decision_display() if entry else "",
            "url": reverse("admin:memory_app_scopemigrationentry_change", args=[entry.pk]) if entry else "",
        }

    return {
        "would_apply": [line(row) for row in would[:MAX_REPORT_ROWS]],
        "skipped": [line(row) for row in skipped[:MAX_REPORT_ROWS]],
        "more_would_apply": max(0, len(would) - MAX_REPORT_ROWS),
        "more_skipped": max(0, len(skipped) - MAX_REPORT_ROWS),
        "note": detail_words(report["note"]),
    }
