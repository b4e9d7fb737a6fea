"""schemathesis hooks of `make fuzz` (scripts/fuzz.sh sets SCHEMATHESIS_HOOKS to this module).

``future-date-time``: the format the schema gives ``expires_at`` (memory_app/memories/api.py),
an ISO 8601 date-time with a time zone that lies in the future. Schema-valid data for it is a
date-time after the fuzz run, so the generator draws them from 2100 on.
"""

from datetime import UTC, datetime

import schemathesis
from hypothesis import strategies as st

schemathesis.openapi.format(
    "future-date-time",
    st.datetimes(min_value=datetime(2100, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)).map(
        lambda moment: moment.isoformat()
    ),
)
