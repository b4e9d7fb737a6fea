"""The readable form of an export (``home_export``): one Markdown document, the same data, in
the reader's language (the web page's; the API answers in English) and with the pages' words
("agent tasks", not "runs"; kinds, statuses and roles by their labels)."""

import json
import re

from django.utils.translation import gettext as _

from identity_app.models import Role
from memory_app.memories.models import Kind, Status

SECTION_LIMIT = 100_000  # characters of one notes file shown; the JSON holds it whole


def _label(choices, value) -> str:
    try:
        return str(choices(value).label)
    except ValueError:
        return str(value)


def _item(lines: list[str], item: dict) -> None:
    marks = []
    if item["status"] != Status.ACTIVE:
        marks.append(_label(Status, item["status"]))
    elif item.get("expired"):
        # Kept until it is purged, but no longer true: agents have stopped seeing it.
        marks.append(_("expired %(when)s") % {"when": item["expires_at"][:16].replace("T", " ")})
    if item.get("paused"):
        marks.append(_("paused"))
    status = f" ({', '.join(marks)})" if marks else ""
    lines.append(f"- **{_label(Kind, item['kind'])}**{status}: {_one_line(item['content'])}")
    lines.append(f"  - {item['provenance']['sentence']} — {item['created_at'][:16].replace('T', ' ')} UTC")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _on(value) -> str:
    return _("on") if value else _("off")


def _profile(user: dict) -> list[str]:
    preferences = user.get("preferences") or {}
    lines = [
        "## " + _("Profile"),
        "",
        "- " + _("Display name: %(value)s") % {"value": _one_line(user.get("display_name") or "") or _("(none)")},
        "- " + _("Time zone: %(value)s") % {"value": user.get("timezone") or "UTC"},
        "- " + _("Language: %(value)s") % {"value": user.get("language") or _("(the browser’s)")},
    ]
    if preferences:
        shown = json.dumps(preferences, ensure_ascii=False, sort_keys=True)
        lines.append("- " + _("Preferences: %(value)s") % {"value": f"`{shown}`"})
    return [*lines, ""]


def _auto_memory_lines():
    """(key, label, unit) of each auto-memory setting, as the settings page names them."""
    return (
        ("use", _("Use my memories in new agent tasks"), None),
        ("generate", _("Generate memories from my finished agent tasks"), None),
        ("redact_contact_info", _("Also redact emails and phone numbers"), None),
        ("extract_model", _("Extraction model (stored)"), ""),
        ("consolidation_model", _("Consolidation model (stored)"), ""),
        ("min_idle_minutes", _("Wait after the conversation's last message"), _("%(n)s minutes")),
        ("min_duration_seconds", _("Shortest agent task considered"), _("%(n)s seconds")),
        ("min_length_chars", _("Shortest conversation considered"), _("%(n)s characters")),
        ("min_quota_remaining_pct", _("Quota that must remain"), "%(n)s%%"),
    )


def _auto_memory(auto: dict) -> list[str]:
    lines = []
    for key, label, unit in _auto_memory_lines():
        if key not in auto:  # a version 1 export holds only the two switches
            continue
        value = auto[key]
        if unit is None:
            shown = _on(value)
        elif unit == "":
            shown = _one_line(str(value)) or _("(default)")
        else:
            shown = unit % {"n": value}
        lines.append(f"- {label}: {shown}")
    return lines


def export_markdown(data: dict) -> str:
    exported = data["exported_at"][:19].replace("T", " ")
    lines = [
        "# " + _("Memory export of %(user)s") % {"user": data["user"]["username"]},
        "",
        _(
            "Exported %(when)s UTC (format %(format)s, version %(version)s). The JSON export holds the same data "
            "and is the one to import."
        )
        % {"when": exported, "format": data["format"], "version": data["version"]},
        "",
        *_profile(data["user"]),
        "## " + _("Switches"),
        "",
        f"- {_('Memory (the notes file)')}: {_on(data['settings']['enable_memory'])}",
        *_auto_memory(data["settings"]["auto_memory"]),
        "",
        "## " + _("About me"),
        "",
    ]
    for item in data["memories"]["user"]:
        _item(lines, item)
    for project in data["memories"]["projects"]:
        title = _("Project %(name)s (your role: %(role)s)") % {
            "name": project["name"],
            "role": _label(Role, project["role"]),
        }
        lines += ["", f"## {title}", ""]
        for item in project["memories"]:
            _item(lines, item)
    for chat in data["memories"]["chats"]:
        lines += ["", "## " + _("Chat %(chat)s") % {"chat": chat["chat_key"]}, ""]
        for item in chat["memories"]:
            _item(lines, item)
    for chat in data["memories"].get("shared", []):
        lines += ["", "## " + _("Shared with everyone from the chat %(chat)s") % {"chat": chat["chat_key"]}, ""]
        for item in chat["memories"]:
            _item(lines, item)
    for name, content in data["notes_files"].items():
        if not isinstance(content, str):
            continue
        longest = max((len(run) for run in re.findall(r"`+", content)), default=0)
        fence = "`" * max(3, longest + 1)  # longer than any backtick run inside, so it cannot close early
        lines += ["", f"## {name}", "", f"{fence}markdown", content[:SECTION_LIMIT].rstrip("\n"), fence]
    if data.get("truncated"):
        lines += [
            "",
            "_"
            + _("The export was cut at its size limit; the oldest memories of the largest sources are left out.")
            + "_",
        ]
    return "\n".join(lines) + "\n"
