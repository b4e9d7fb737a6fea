"""The readable form of an export (``home_export``): one Markdown document, the same data."""

import re

SECTION_LIMIT = 100_000  # characters of one notes file shown; the JSON holds it whole


def _item(lines: list[str], item: dict) -> None:
    status = "" if item["status"] == "active" else f" ({item['status']})"
    lines.append(f"- **{item['kind']}**{status}: {_one_line(item['content'])}")
    lines.append(f"  - {item['provenance']['sentence']} — {item['created_at'][:16].replace('T', ' ')}")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def export_markdown(data: dict) -> str:
    lines = [
        f"# Memory export of {data['user']['username']}",
        "",
        f"Exported {data['exported_at'][:19].replace('T', ' ')} UTC (format {data['format']}, version "
        f"{data['version']}). The JSON export holds the same data and is the one to import.",
        "",
        "## Switches",
        "",
        f"- Memory (the notes file): {'on' if data['settings']['enable_memory'] else 'off'}",
        f"- Use my memories in new runs: {'on' if data['settings']['auto_memory']['use'] else 'off'}",
        f"- Generate memories from my finished runs: {'on' if data['settings']['auto_memory']['generate'] else 'off'}",
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
