"""Every model of the app, so Django registers them under the one ``memory_app`` label.

Each domain package defines its own models (``memories/models.py``, ``threads/models.py`` …);
code imports them from there, never from this module.
"""

from memory_app.automemory.models import *  # noqa: F403
from memory_app.memories.models import *  # noqa: F403
from memory_app.notes.models import *  # noqa: F403
from memory_app.ops.models import *  # noqa: F403
from memory_app.reads.models import *  # noqa: F403
from memory_app.runs.models import *  # noqa: F403
from memory_app.scoped.models import *  # noqa: F403
from memory_app.search.models import *  # noqa: F403
from memory_app.threads.models import *  # noqa: F403
