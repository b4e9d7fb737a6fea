"""Request ids (X-Request-ID, JSON error bodies, log lines of the request) and the log formats."""

import io
import json
import logging
import sys

import pytest

from config.logs import JsonFormatter, PlainFormatter, RequestIdFilter

pytestmark = pytest.mark.django_db


@pytest.fixture
def log_lines(settings):
    """Every log line written while the test runs, as the JSON console handler writes them."""
    settings.ACCESS_LOG = True
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RequestIdFilter())
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    root.removeHandler(handler)
    root.setLevel(level)


def test_a_sane_request_id_is_kept_and_returned(api, alice):
    response = api(alice).get("/api/users/me/profile", HTTP_X_REQUEST_ID="edge-7f3a.9:1")
    assert response.status_code == 200 and response["X-Request-ID"] == "edge-7f3a.9:1"


@pytest.mark.parametrize("offered", [None, "", "a" * 129, "two words", "new\nline", "<script>", "ünï"])
def test_a_missing_or_insane_request_id_is_replaced(client, offered):
    headers = {} if offered is None else {"HTTP_X_REQUEST_ID": offered}
    returned = client.get("/healthz", **headers)["X-Request-ID"]
    assert returned != offered and len(returned) == 32 and int(returned, 16) >= 0


def test_every_response_carries_an_id_and_each_request_its_own(client):
    first, second = client.get("/healthz")["X-Request-ID"], client.get("/nowhere/")["X-Request-ID"]
    assert first and second and first != second


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("get", "/api/users/me/memories/mem_nope", None, 404),
        ("post", "/api/users/me/memories", {"kind": "bogus", "content": "x"}, 400),
        ("get", "/api/no/such/route", None, 404),
    ],
)
def test_json_error_bodies_carry_the_request_id(api, alice, method, path, body, status):
    response = getattr(api(alice), method)(path, body, format="json", HTTP_X_REQUEST_ID="req-errors-1")
    assert response.status_code == status
    assert response.json()["error"]["request_id"] == "req-errors-1" == response["X-Request-ID"]


def test_unauthenticated_error_carries_the_request_id(api):
    response = api().get("/api/users/me/profile", HTTP_X_REQUEST_ID="req-anon")
    assert response.status_code == 401 and response.json()["error"]["request_id"] == "req-anon"


def test_log_lines_of_a_request_carry_its_id(api, make_run, run_api, alice, log_lines):
    handle = make_run(alice)
    tool = f"/api/runs/{handle.run.pk}/tools/remember_memory"
    response = run_api(handle.token).post(
        tool, {"content": "Prefers tea"}, format="json", HTTP_X_REQUEST_ID="req-remember"
    )
    assert response.status_code == 200, response.content
    mine = [line for line in log_lines() if line.get("request_id") == "req-remember"]
    assert any(line["logger"] == "memory_app.runs.tools" for line in mine)
    [access] = [line for line in mine if line["logger"] == "config.access"]
    assert (access["route"], access["method"], access["status"]) == ("run-tool", "POST", 200)
    assert isinstance(access["duration_ms"], float)


def test_json_lines_keep_every_extra_field():
    record = logging.LogRecord("memory_app.automemory.worker", logging.WARNING, __file__, 1, "run %s", ("r1",), None)
    record.run_id, record.error_class, record.values = "run_01", "TimeoutError", {"idle": 3}
    RequestIdFilter().filter(record)
    line = JsonFormatter().format(record)
    assert "\n" not in line
    parsed = json.loads(line)
    assert parsed["message"] == "run r1" and parsed["level"] == "WARNING"
    assert (parsed["run_id"], parsed["error_class"], parsed["values"]) == ("run_01", "TimeoutError", {"idle": 3})
    assert parsed["request_id"] == "-" and parsed["time"].endswith("+00:00")


def test_json_lines_carry_the_traceback_in_one_line():
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    parsed = json.loads(JsonFormatter().format(record))
    assert "ValueError: boom" in parsed["exc_info"]


def test_plain_lines_append_the_extra_fields():
    record = logging.LogRecord("memory_app.automemory.worker", logging.WARNING, __file__, 1, "failed", (), None)
    record.run_id, record.error_class = "run_01", "TimeoutError"
    RequestIdFilter().filter(record)
    line = PlainFormatter().format(record)
    assert line.endswith('WARNING memory_app.automemory.worker failed error_class="TimeoutError" run_id="run_01"')
