"""UTF-8 byte budgets: the one cutting helper lives in ``config.budgets`` (the low-trust frame
builder, ``config.lowtrust``, cuts with it too); this module keeps the names its callers import."""

from config.budgets import TRUNCATION_MARKER, truncate_json_text, truncate_utf8, utf8_len
from config.validation import json_size

__all__ = ["TRUNCATION_MARKER", "json_size", "truncate_json_text", "truncate_utf8", "utf8_len"]
