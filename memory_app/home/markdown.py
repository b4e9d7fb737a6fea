"""The readable form of an export (``home_export``): one Markdown document, the same data."""

import json
import re

SECTION_LIMIT = 100_000  # characters of one notes file shown; the JSON holds it whole


def _item(lines: list[str], item: dict) -> None:
    if item.get("expired") and item["status"] == "active":
        status = f" (expired {item['expires_at'][:16].replace('T', ' ')})"
    else:
        status = "" if item["status"] == "active" else f" ({item['status']})"
    lines.append(f"- **{item['kind']}**{status}: {_one_line(item['content'])}")
    lines.append(f"  - {item['provenance']['sentence']} — {item['created_at'][:16].replace('T', ' ')}")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _on(value) -> str:
    return "on" if value else "off"


def _profile(user: dict) -> list[str]:
    preferences = user.get("preferences") or {}
    lines = [
        "## Profile",
        "",
        f"- Display name: {_one_line(user.get('display_name') or '') or '(none)'}",
        f"- Time zone: {user.get('timezone') or 'UTC'}",
        f"- Language: {user.get('language') or '(the browser’s)'}",
    ]
    if preferences:
        lines.append(f"- Preferences: `{json.dumps(preferences, ensure_ascii=False, sort_keys=True)}`")
    return [*lines, ""]


# (key, label, unit) of each auto-memory setting, as the settings page names them.
AUTO_MEMORY_LINES = (
    ("use", "Use my memories in new runs", None),
    ("generate", "Generate memories from my finished runs", None),
    ("redact_contact_info", "Also redact emails and phone numbers", None),
    ("extract_model", "Extraction model (stored)", ""),
    ("consolidation_model", "Consolidation model (stored)", ""),
    ("min_idle_minutes", "Wait after the conversation's last message", "minutes"),
    ("min_duration_seconds", "Shortest run considered", "seconds"),
    ("min_length_chars", "Shortest conversation considered", "characters"),
    ("min_quota_remaining_pct", "Quota that must remain", "%"),
)


def _auto_memory(auto: dict) -> list[str]:
    lines = []
    for key, label, unit in AUTO_MEMORY_LINES:
        if key not in auto:  # a version 1 export holds only the two switches
            continue
        value = auto[key]
        if unit is None:
            shown = _on(value)
        elif unit == "":
            shown = _one_line(str(value)) or "(default)"
        else:
            shown = f"{value}{unit}" if unit == "%" else f"{value} {unit}"
        lines.append(f"- {label}: {shown}")
    return lines


def export_markdown(data: dict) -> str:
    lines = [
        f"# Memory export of {data['user']['username']}",
        "",
        f"Exported {data['exported_at'][:19].replace('T', ' ')} UTC (format {data['format']}, version "
        f"{data['version']}). The JSON export holds the same data and is the one to import.",
        "",
        *_profile(data["user"]),
        "## Switches",
        "",
        f"- Memory (the notes file): {_on(data['settings']['enable_memory'])}",
        *_auto_memory(data["settings"]["auto_memory"]),
        "",
        "## My memories",
        "",
    ]
    for item in data["memories"]["user"]:
        _item(lines, item)
    for project in data["memories"]["projects"]:
        lines += ["", f"## Project {project['name']} (your role: {project['role']})", ""]
        for item in project["memories"]:
            _item(lines, item)
    for chat in data["memories"]["chats"]:
        lines += ["", f"## Chat {chat['chat_key']}", ""]
        for item in chat["memories"]:
            _item(lines, item)
    for chat in data["memories"].get("shared", []):
        lines += ["", f"## Shared with everyone from chat {chat['chat_key']}", ""]
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
            "_The export was cut at its size limit; the oldest memories of the largest sources are left out._",
        ]
    return "\n".join(lines) + "\n"
