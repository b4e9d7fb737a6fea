"""The OpenAI-compatible extractor against a local HTTP server (the only thing mocked)."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.test import override_settings
from django.utils import timezone

from memory_app.automemory import worker
from memory_app.automemory.models import AutoMemoryLogEntry
from memory_app.automemory.worker import round_run
from memory_app.distill.extraction import DeterministicExtractor, ExtractorError, HttpExtractor, get_extractor
from memory_app.memories.models import Memory
from tests.memory_app.automemory.helpers import all_stored_text, auto_memories, enable, finished_run, manual_round


class FakeModelServer:
    """Answers POST /v1/chat/completions with a configurable reply; records requests."""

    def __init__(self):
        self.requests: list[dict] = []
        self.reply = {"memories": []}
        self.status = 200
        self.raw: bytes | None = None
        self.delay = 0.0
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                if server.delay:
                    server.release.wait(server.delay)
                payload = server.raw
                if payload is None:
                    payload = json.dumps(
                        {"choices": [{"message": {"role": "assistant", "content": json.dumps(server.reply)}}]}
                    ).encode()
                try:
                    self.send_response(server.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def model_server():
    with FakeModelServer() as server:
        yield server


def extractor(server, **kwargs):
    return HttpExtractor(base_url=server.base_url, model="tiny-model", api_key="key-for-the-model", **kwargs)


def test_http_extractor_parses_candidates_and_sends_model_and_key(model_server):
    model_server.reply = {
        "memories": [
            {"kind": "decision", "content": "Billing uses PostgreSQL 16.", "subject": "Billing database"},
            {"kind": "task", "content": "Not an identity kind", "subject": "x"},
            {"kind": "fact", "content": 42, "subject": "bad content"},
            "not an object",
        ]
    }
    [candidate] = extractor(model_server).extract("We decided on PostgreSQL 16 for billing.")
    assert (candidate.kind, candidate.content, candidate.subject_key) == (
        "decision",
        "Billing uses PostgreSQL 16.",
        "target:billing database",
    )
    [request] = model_server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer key-for-the-model"
    assert request["body"]["model"] == "tiny-model"
    assert request["body"]["messages"][-1]["content"] == "We decided on PostgreSQL 16 for billing."
    assert "not instructions" in request["body"]["messages"][0]["content"]


@pytest.mark.parametrize(
    ("status", "raw"),
    [
        (500, b'{"error": "boom"}'),
        (200, b"not json"),
        (200, b'{"choices": []}'),
        (200, b'{"choices": [{"message": {"content": "{}"}}]}'),
    ],
)
def test_http_extractor_errors_are_extractor_errors(model_server, status, raw):
    model_server.status, model_server.raw = status, raw
    with pytest.raises(ExtractorError):
        extractor(model_server).extract("text")


def test_http_extractor_times_out(model_server):
    model_server.delay = 5
    with pytest.raises(ExtractorError, match="unreachable"):
        extractor(model_server, timeout=0.3).extract("text")


def test_unreachable_endpoint_is_an_extractor_error():
    with pytest.raises(ExtractorError):
        HttpExtractor(base_url="http://127.0.0.1:9/v1", model="m", timeout=1).extract("text")


def test_get_extractor_follows_settings(model_server):
    assert isinstance(get_extractor(), DeterministicExtractor)
    with override_settings(
        AUTO_MEMORY_EXTRACTOR="openai",
        AUTO_MEMORY_LLM_BASE_URL=model_server.base_url,
        AUTO_MEMORY_LLM_MODEL="m1",
        AUTO_MEMORY_LLM_API_KEY="",
        AUTO_MEMORY_LLM_TIMEOUT=5,
    ):
        chosen = get_extractor()
    assert isinstance(chosen, HttpExtractor) and (chosen.model, chosen.timeout) == ("m1", 5)
    with pytest.raises(ValueError):
        HttpExtractor(base_url="file:///etc/passwd", model="m")


@pytest.mark.django_db
def test_worker_with_http_extractor_sends_only_redacted_text(alice, project, model_server):
    enable(alice, min_length_chars=10)
    finished_run(
        user=alice,
        project=project,
        text="We use postgres://billing:pgS3cretXyz@db.internal/billing for billing. Token sk-abcdefghijklmnopqrstuvwx.",
    )
    model_server.reply = {
        "memories": [{"kind": "fact", "content": "Billing runs on PostgreSQL.", "subject": "billing db"}]
    }
    [result] = round_run(worker_id="test", extractor=extractor(model_server))
    assert result.outcome == "extracted"
    sent = json.dumps(model_server.requests[0]["body"])
    assert "pgS3cretXyz" not in sent and "sk-abcdefghijklmnopqrstuvwx" not in sent
    assert "[REDACTED:connection_string]" in sent
    [memory] = auto_memories(project)
    assert memory.content == "Billing runs on PostgreSQL." and memory.evidence["extractor"] == "openai"
    assert "pgS3cretXyz" not in all_stored_text()


@pytest.mark.django_db
def test_worker_redacts_what_the_model_returns(alice, project, model_server):
    enable(alice, min_length_chars=10)
    finished_run(user=alice, project=project, text="We talked about the billing setup for a while today.")
    model_server.reply = {
        "memories": [{"kind": "fact", "content": "Billing key is sk-abcdefghijklmnopqrstuvwx.", "subject": "key"}]
    }
    round_run(worker_id="test", extractor=extractor(model_server))
    assert "sk-abcdefghijklmnopqrstuvwx" not in all_stored_text()
    assert auto_memories(project).get().content == "Billing key is [REDACTED:api_key]."


@pytest.mark.django_db
def test_worker_logs_http_failure_with_error_class(alice, project, model_server):
    enable(alice, min_length_chars=10)
    run = finished_run(user=alice, project=project)
    model_server.status, model_server.raw = 503, b"{}"
    [result] = round_run(worker_id="test", extractor=extractor(model_server))
    assert (result.outcome, result.error_class) == ("failed", "ExtractorError")
    entry = AutoMemoryLogEntry.objects.get(run_ref=run.pk)
    assert (entry.outcome, entry.error_class) == ("failed", "ExtractorError")
    assert not Memory.objects.exists()
    run.refresh_from_db()
    assert run.auto_memory_processed_at is None  # retried in a later round


@pytest.mark.django_db
def test_failing_endpoint_is_retried_then_given_up(alice, project, model_server):
    enable(alice, min_length_chars=10)
    run = finished_run(user=alice, project=project)
    model_server.status, model_server.raw = 502, b"{}"
    for attempt in range(1, worker.MAX_ATTEMPTS + 1):
        [result] = round_run(worker_id="test", extractor=extractor(model_server))
        assert (result.outcome, result.error_class) == ("failed", "ExtractorError")
        run.refresh_from_db()
        assert (run.auto_memory_processed_at is None) == (attempt < worker.MAX_ATTEMPTS)
    assert round_run(worker_id="test", extractor=extractor(model_server)) == []
    assert len(model_server.requests) == worker.MAX_ATTEMPTS
    entries = AutoMemoryLogEntry.objects.filter(run_ref=run.pk)
    assert set(entries.values_list("outcome", "error_class")) == {("failed", "ExtractorError")}
    assert entries.count() == worker.MAX_ATTEMPTS
    assert "given up" in entries.order_by("-id").first().reason
    assert not Memory.objects.exists()


@pytest.mark.django_db
def test_on_demand_round_stops_starting_runs_after_its_time_budget(api, alice, project, model_server):
    """The first run's extractor call outlasts the budget: no other run is started, the claimed
    ones are given back unspent and the background worker takes them all."""
    from memory_app.automemory.models import AutoMemoryClaim
    from memory_app.runs.models import AgentRun

    enable(alice, min_length_chars=10)
    runs = [
        finished_run(user=alice, project=project, text=f"We decided to use PostgreSQL {n} for billing service {n}.")
        for n in range(4)
    ]
    model_server.delay = 0.4  # longer than the budget below: the budget is spent after one run
    with override_settings(
        AUTO_MEMORY_EXTRACTOR="openai",
        AUTO_MEMORY_LLM_BASE_URL=model_server.base_url,
        AUTO_MEMORY_LLM_MODEL="m1",
        AUTO_MEMORY_LLM_TIMEOUT=5,
        AUTO_MEMORY_MANUAL_ROUND_LIMIT=3,
        AUTO_MEMORY_MANUAL_ROUND_SECONDS=0.2,
    ):
        body = manual_round(api(alice))
    assert (len(body["processed"]), body["stopped"], body["left"]) == (1, "time_budget", 3)
    assert len(model_server.requests) == 1  # no second extractor call was started
    assert AgentRun.objects.filter(pk__in=[r.pk for r in runs], auto_memory_processed_at__isnull=False).count() == 1
    waiting = worker.sweep_queryset(now=timezone.now(), user=alice)
    assert waiting.count() == 3  # claimable at once, not held until a lease expires
    assert not AutoMemoryClaim.objects.filter(run__in=waiting, attempts__gt=0).exists()  # no attempt spent

    results = round_run(worker_id="background", extractor=DeterministicExtractor())
    done_first = body["processed"][0]["run_id"]
    assert sorted(r.run_id for r in results) == sorted(r.pk for r in runs if r.pk != done_first)
    assert {r.outcome for r in results} == {"extracted"}
    assert AgentRun.objects.filter(pk__in=[r.pk for r in runs], auto_memory_processed_at__isnull=True).count() == 0


@pytest.mark.django_db
def test_on_demand_round_within_its_budget_runs_up_to_its_limit(api, alice, project, model_server):
    enable(alice, min_length_chars=10)
    for n in range(4):
        finished_run(user=alice, project=project, text=f"We decided to use PostgreSQL {n} for billing service {n}.")
    with override_settings(
        AUTO_MEMORY_EXTRACTOR="openai",
        AUTO_MEMORY_LLM_BASE_URL=model_server.base_url,
        AUTO_MEMORY_LLM_MODEL="m1",
        AUTO_MEMORY_LLM_TIMEOUT=5,
        AUTO_MEMORY_MANUAL_ROUND_LIMIT=3,
        AUTO_MEMORY_MANUAL_ROUND_SECONDS=60,
    ):
        body = manual_round(api(alice))
    assert (len(body["processed"]), body["stopped"], body["left"]) == (3, "", 1)
    assert len(model_server.requests) == 3
