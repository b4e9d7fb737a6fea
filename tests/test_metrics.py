"""GET /metrics: Prometheus text behind a bearer token; request latency by route name; the
domain counters (remember_memory, the per-user lock, extraction per gate, search per mode,
scope-migration applies, background jobs)."""

import pytest
from prometheus_client import REGISTRY

from memory_app.automemory.worker import round_run
from memory_app.memories import services as memory_services
from memory_app.ops.services import job_enqueue, jobs_run_pending
from memory_app.scoped.migration import apply_plan, inspect_plan
from tests.memory_app.automemory.helpers import enable, finished_run

pytestmark = pytest.mark.django_db

TOKEN = "metrics-token-0123456789"


def sample(name: str, **labels) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture
def scrape(client, settings):
    settings.METRICS_TOKEN = TOKEN

    def get() -> str:
        response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        assert response.status_code == 200
        assert response["Content-Type"].startswith("text/plain; version=")
        return response.content.decode()

    return get


def test_metrics_need_the_bearer_token(client, settings):
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics").status_code == 404  # no token configured: no metrics
    settings.METRICS_TOKEN = TOKEN
    refused = client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong-token-0123456789")
    assert refused.status_code == 401 and refused["WWW-Authenticate"].startswith("Bearer")
    assert refused.json()["error"]["code"] == "not_authenticated"
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Token {TOKEN}").status_code == 401
    assert client.post("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 405


def test_request_latency_is_labelled_by_route_name_not_path(api, alice, scrape):
    client = api(alice)
    memory = client.post("/api/users/me/memories", {"kind": "fact", "content": "Likes tea"}, format="json").json()
    before = sample("memsvc_http_request_duration_seconds_count", route="my-memory-detail", method="GET")
    for _ in range(3):
        assert client.get(f"/api/users/me/memories/{memory['id']}").status_code == 200
    after = sample("memsvc_http_request_duration_seconds_count", route="my-memory-detail", method="GET")
    assert after - before == 3
    ok = sample("memsvc_http_requests_total", route="my-memory-detail", method="GET", status="200")
    assert ok >= 3
    text = scrape()
    assert 'memsvc_http_request_duration_seconds_bucket{le="0.005",method="GET",route="my-memory-detail"}' in text
    assert memory["id"] not in text


def test_unmatched_paths_share_one_label(client, scrape):
    before = sample("memsvc_http_requests_total", route="unmatched", method="GET", status="404")
    client.get("/wp-login.php")
    client.get("/api/secret/123")
    assert sample("memsvc_http_requests_total", route="unmatched", method="GET", status="404") - before == 2
    assert "wp-login" not in scrape()


def test_remember_memory_outcomes_and_lock_waits(make_run, run_api, alice, is_postgres):
    handle = make_run(alice)
    client = run_api(handle.token)
    url = f"/api/runs/{handle.run.pk}/tools/remember_memory"
    counts = {r: sample("memsvc_remember_memory_total", result=r) for r in ("appended", "unchanged", "conflict")}
    waits = sample("memsvc_user_lock_wait_seconds_count")
    batches, batched = sample("memsvc_notes_write_batch_size_count"), sample("memsvc_notes_write_batch_size_sum")
    assert client.post(url, {"content": "Prefers tea"}, format="json").json()["result"] == "appended"
    assert client.post(url, {"content": "Prefers tea"}, format="json").json()["result"] == "unchanged"
    assert client.post(url, {"content": "x", "replaces": "absent"}, format="json").status_code == 409
    for result, before in counts.items():
        assert sample("memsvc_remember_memory_total", result=result) - before == 1, result
    # PostgreSQL takes an advisory lock per call; SQLite's lock is BEGIN IMMEDIATE itself.
    assert sample("memsvc_user_lock_wait_seconds_count") - waits == (3 if is_postgres else 0)
    # One caller at a time: three group commits of one call each.
    assert sample("memsvc_notes_write_batch_size_count") - batches == 3
    assert sample("memsvc_notes_write_batch_size_sum") - batched == 3


def test_extraction_outcomes_are_counted_per_gate(alice, project):
    enable(alice, min_length_chars=1000)
    finished_run(user=alice, project=project)  # stops at the length gate
    enable(alice, min_length_chars=1000, min_duration_seconds=0)
    before = sample("memsvc_automemory_runs_total", outcome="skipped", gate="length")
    round_run(worker_id="w")
    assert sample("memsvc_automemory_runs_total", outcome="skipped", gate="length") - before == 1
    enable(alice, min_length_chars=200)
    finished_run(user=alice, project=project)
    extracted = sample("memsvc_automemory_runs_total", outcome="extracted", gate="none")
    round_run(worker_id="w")
    assert sample("memsvc_automemory_runs_total", outcome="extracted", gate="none") - extracted == 1


def test_search_latency_is_observed_per_mode(api, svc):
    client = api(svc)
    session = "milky:private:10001"
    client.post("/api/memory/items", {"content": "Prefers aisle seats", "kind": "preference", "session_id": session})
    before = {m: sample("memsvc_search_duration_seconds_count", mode=m) for m in ("lexical", "dense", "hybrid")}
    for mode in ("fts", "vector", "hybrid"):
        body = {"query": "aisle", "session_id": session, "mode": mode}
        assert client.post("/api/memory/search", body, format="json").status_code == 200
    for mode, count in before.items():
        assert sample("memsvc_search_duration_seconds_count", mode=mode) - count >= 1, mode


@pytest.mark.django_db(transaction=True)  # the SQLite backup before an apply needs no open transaction
def test_scope_migration_applies_are_counted(admin, tmp_path):
    memory_services.memory_create(
        actor=admin,
        tier="global",
        kind="preference",
        content="I like window seats",
        evidence={"session_id": "milky:private:10001"},
    )
    before = sample("memsvc_scope_migration_entries_total", result="applied")
    entries = inspect_plan()["entries"]
    apply_plan(entries=entries, actor=admin, apply_all_safe=True, dry_run=True, backup_dir=tmp_path)
    assert sample("memsvc_scope_migration_entries_total", result="applied") == before  # dry runs do not count
    apply_plan(entries=entries, actor=admin, apply_all_safe=True, backup_dir=tmp_path)
    assert sample("memsvc_scope_migration_entries_total", result="applied") - before == 1


def test_background_jobs_are_counted_by_kind_and_status(alice):
    before = sample("memsvc_background_jobs_total", kind="auto_memory_round", status="done")
    job_enqueue(kind="auto_memory_round", user=alice)
    jobs_run_pending(worker_id="w")
    assert sample("memsvc_background_jobs_total", kind="auto_memory_round", status="done") - before == 1
