from memory_app.models.memory import (  # noqa: F401
    GLOBAL_SCOPE_ID,
    KIND_VALUES,
    IDENTITY_KINDS,
    Kind,
    Memory,
    Origin,
    ProjectSummary,
    Status,
    Tier,
    new_memory_id,
)
from memory_app.models.runs import *  # noqa: E402,F401,F403
from memory_app.models.automemory import *  # noqa: E402,F401,F403
from memory_app.models.scoped import *  # noqa: E402,F401,F403
