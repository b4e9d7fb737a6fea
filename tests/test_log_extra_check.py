"""The guard against log calls that cannot build their record: scripts/check_log_extra.py over
the code, and tests/logcheck.py over every record the suite writes."""

import contextlib
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from tests import logcheck

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import check_log_extra  # noqa: E402


@pytest.mark.parametrize(
    "source",
    [
        'logger.info("x", extra={"created": 1})',
        'log.warning("x", extra=dict(name="n"))',
        'def f():\n    extra = {"actor": 1, "module": "m"}\n    logger.error("x", extra=extra)',
        'def f():\n    fields = {}\n    fields["lineno"] = 3\n    logger.log(10, "x", extra=fields)',
        'logger.debug("x", extra={"message": "m"})',
    ],
)
def test_a_reserved_extra_key_is_refused(source):
    problems = check_log_extra.check_source(source)
    assert len(problems) == 1 and "LogRecord" in problems[0]


@pytest.mark.parametrize(
    "source",
    [
        'logger.info("x", extra={"memories_created": 1, "actor": 2})',
        'def f():\n    extra = {"actor": 1}\n    logger.error("x", extra=extra)',
        'def f():\n    name = {"created": 1}\n\ndef g():\n    logger.info("x", extra={"name_of": 1})',
        "other.update(created=1)",
    ],
)
def test_ordinary_extra_keys_pass(source):
    assert check_log_extra.check_source(source) == []


def test_the_project_passes_the_check():
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check_log_extra.py")],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout


def test_the_suite_logs_every_level_through_the_json_formatter():
    root = logging.getLogger()
    assert root.level == logging.DEBUG
    checked = [h for h in root.handlers if isinstance(h, logcheck.FormattingHandler)]
    assert checked and type(checked[0].formatter).__name__ == "JsonFormatter"


def test_a_record_that_cannot_be_built_is_collected_even_when_the_caller_swallows_it():
    logger = logging.getLogger("tests.logcheck")
    reserved = {"created": 1}
    with contextlib.suppress(KeyError):
        logger.debug("x", extra=dict(reserved))
    problems = logcheck.take()
    assert len(problems) == 1 and "created" in problems[0]


def test_a_record_that_cannot_be_formatted_is_collected():
    with contextlib.suppress(TypeError):  # pytest's own capture handler may raise too
        logging.getLogger("tests.logcheck").debug("%s %s", "only one argument")  # noqa: PLE1206
    problems = logcheck.take()
    assert len(problems) == 1 and "cannot be formatted" in problems[0]
