"""The service's low-trust framing, read back (docs/runs.md, "Low-trust blocks").

Stored text that reaches an agent — the notes file, identity and chat memories, history search
and read results, MCP outputs — comes with every line marked as data: each line starts with
``DATA_MARK``. Give the marked text to the model as it is; ``data_text`` is for showing it to a
person or comparing it with what was stored.
"""

DATA_MARK = "│ "  # U+2502 and a space


def data_text(value: str) -> str:
    """``value`` with the data mark taken off the start of each of its lines."""
    return "\n".join(line[len(DATA_MARK) :] if line.startswith(DATA_MARK) else line for line in value.split("\n"))
