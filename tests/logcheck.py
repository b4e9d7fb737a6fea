"""Every log record the suite writes is built and formatted, at DEBUG, by the production JSON
formatter (tests/settings.py); a record that cannot be built (an ``extra`` key that
``LogRecord`` reserves) or formatted is collected here and fails the test that wrote it
(``tests/conftest.py``), even when the code under test catches the exception.

The formatted lines go nowhere: the output of the suite stays quiet."""

import io
import json
import logging
import traceback

PROBLEMS: list[str] = []


class NullStream(io.TextIOBase):
    def write(self, text):
        return len(text)


class FormattingHandler(logging.StreamHandler):
    """Formats every record with its formatter and checks the line is one JSON object."""

    def __init__(self):
        super().__init__(NullStream())

    def emit(self, record):
        try:
            line = self.format(record)
            if not isinstance(json.loads(line), dict):
                raise ValueError("the line is not a JSON object")
        except Exception as exc:  # collected, and the test fails on it
            PROBLEMS.append(f"{record.name}: {record.msg!r}: cannot be formatted: {exc!r}")


_make_record = logging.Logger.makeRecord


def _checked_make_record(self, *args, **kwargs):
    try:
        return _make_record(self, *args, **kwargs)
    except Exception as exc:
        where = "".join(traceback.format_stack(limit=6)[:-1])
        PROBLEMS.append(f"{self.name}: a log record cannot be built: {exc!r}\n{where}")
        raise


def install() -> None:
    """Records built by any logger are checked (idempotent)."""
    logging.Logger.makeRecord = _checked_make_record


def take() -> list[str]:
    found = list(PROBLEMS)
    PROBLEMS.clear()
    return found
