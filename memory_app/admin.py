"""Registers the admin of every package (each package keeps its own ``admin.py``)."""

from memory_app.automemory import admin as automemory_admin  # noqa: F401
from memory_app.memories import admin as memories_admin  # noqa: F401
from memory_app.notes import admin as notes_admin  # noqa: F401
from memory_app.ops import admin as ops_admin  # noqa: F401
from memory_app.runs import admin as runs_admin  # noqa: F401
from memory_app.scoped import admin as scoped_admin  # noqa: F401
from memory_app.threads import admin as threads_admin  # noqa: F401
