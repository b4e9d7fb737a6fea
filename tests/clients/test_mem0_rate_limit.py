"""mem0's own client meets this service's rate limits as its ``RateLimitError`` (the client's
live server, whose search limit is a few calls a second: tests/clients/conftest.py)."""

import pytest
from mem0 import MemoryClient
from mem0.exceptions import RateLimitError

from tests.clients.conftest import SEARCH_RATE


def test_rate_limits_raise_mem0s_rate_limit_error(live):
    client = MemoryClient(api_key=live.keys["throttled"], host=live.base)
    with pytest.raises(RateLimitError) as limited:
        for _ in range(SEARCH_RATE * 4):
            client.search("anything")
    assert limited.value.debug_info.get("retry_after", 0) >= 1
