"""Background jobs: the on-demand extraction round and dreaming answer 202 with a status URL;
a worker claims each job once, a job whose worker died is taken over, and a failure says
nothing of its cause but its code."""

import time
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from identity_app.services import token_issue, token_revoke
from memory_app.ops import services as jobs
from memory_app.ops.models import BackgroundJob, JobStatus, WorkerHeartbeat
from memory_app.runs.models import AgentRun
from tests.factories import ChatBindingFactory, ConversationFactory, MessageFactory
from tests.memory_app.automemory.helpers import auto_memories, enable, finished_run

pytestmark = pytest.mark.django_db

RUN_URL = "/api/users/me/auto-memory/run"
CHAT = "milky:private:10001"


@jobs.job_handler("test_boom")
def _boom(job):
    raise RuntimeError("the conversation said: my password is hunter2")


def test_on_demand_round_answers_202_and_runs_in_the_background(api, alice, project):
    enable(alice)
    run = finished_run(user=alice, project=project)
    client = api(alice)
    response = client.post(RUN_URL)
    assert response.status_code == 202, response.content
    job = response.json()
    assert job["status"] == "queued" and job["result"] is None and response["Location"] == job["status_url"]
    assert job["status_url"] == f"/api/jobs/{job['id']}"
    run.refresh_from_db()
    assert run.auto_memory_processed_at is None  # nothing happened inside the request
    assert client.get(job["status_url"]).json()["status"] == "queued"

    assert jobs.jobs_run_pending(worker_id="w1") == 1
    done = client.get(job["status_url"]).json()
    assert (done["status"], done["error"]) == ("done", None)
    [processed] = done["result"]["processed"]
    assert (processed["run_id"], processed["outcome"]) == (run.pk, "extracted")
    assert auto_memories(project).count() == 2
    assert done["started_at"] and done["finished_at"]


def test_asking_again_while_queued_returns_the_same_job(api, alice):
    client = api(alice)
    first = client.post(RUN_URL).json()
    assert client.post(RUN_URL).json()["id"] == first["id"]
    jobs.jobs_claim(worker_id="w1", limit=10)  # now running: a new request queues a new job
    assert client.post(RUN_URL).json()["id"] != first["id"]
    assert BackgroundJob.objects.filter(user=alice).count() == 2


def test_another_users_job_is_not_found(api, alice, bob):
    url = api(alice).post(RUN_URL).json()["status_url"]
    assert api(bob).get(url).status_code == 404
    assert api().get(url).status_code == 401
    assert api(alice).get("/api/jobs/job_nope").status_code == 404


def test_a_claimed_job_is_not_claimed_again(alice):
    job = jobs.job_enqueue(kind="test_boom", user=alice)
    assert [j.pk for j in jobs.jobs_claim(worker_id="a", limit=5)] == [job.pk]
    assert jobs.jobs_claim(worker_id="b", limit=5) == []
    assert jobs.job_claim_one(job_id=job.pk, worker_id="b") is None


def test_a_job_whose_worker_died_is_taken_over_and_the_late_worker_cannot_finish_it(api, alice, project):
    enable(alice)
    finished_run(user=alice, project=project)
    job = jobs.job_enqueue(kind="auto_memory_round", user=alice)
    [mine] = jobs.jobs_claim(worker_id="dead", limit=5)
    BackgroundJob.objects.filter(pk=job.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert jobs.jobs_run_pending(worker_id="alive") == 1
    job.refresh_from_db()
    assert (job.status, job.worker_id, job.attempts) == (JobStatus.DONE, "alive", 2)
    # The first worker wakes up and tries to finish: its write is refused, the result kept.
    assert jobs.job_run(job=mine, worker_id="dead") == JobStatus.DONE
    job.refresh_from_db()
    assert job.worker_id == "alive" and job.result["processed"][0]["outcome"] == "extracted"


def test_a_job_interrupted_too_often_is_given_up(alice):
    job = jobs.job_enqueue(kind="auto_memory_round", user=alice)
    BackgroundJob.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, attempts=jobs.MAX_JOB_ATTEMPTS, lease_expires_at=timezone.now()
    )
    jobs.jobs_run_pending(worker_id="w")
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.error["code"] == "worker_stopped"


def test_a_failed_job_reports_a_code_and_nothing_of_its_cause(api, alice, caplog):
    job = jobs.job_enqueue(kind="test_boom", user=alice)
    jobs.jobs_run_pending(worker_id="w")
    body = api(alice).get(f"/api/jobs/{job.pk}").json()
    assert (body["status"], body["error"]["code"], body["result"]) == ("failed", "job_failed", None)
    assert "hunter2" not in str(body) and "hunter2" not in caplog.text
    assert [r.error_class for r in caplog.records if r.getMessage() == "background job failed"] == ["RuntimeError"]


def test_dreaming_answers_202_and_the_job_reports_its_decisions(api, svc, alice):
    ChatBindingFactory(chat_key=CHAT, user=alice)
    conversation = ConversationFactory(owner=alice, session_key=CHAT)
    MessageFactory(conversation=conversation, role="user", content="I prefer aisle seats on long flights.")
    client = api(svc)
    response = client.post("/api/memory/dream", {"session_id": CHAT}, format="json")
    assert response.status_code == 202, response.content
    jobs.jobs_run_pending(worker_id="w")
    done = client.get(response.json()["status_url"]).json()
    assert done["status"] == "done", done
    assert done["result"]["session_id"] == CHAT and done["result"]["counts"]["created"] == 1
    assert "aisle" not in str(done)  # decisions and ids, never the text


def test_dreaming_is_refused_before_queueing(api, alice, svc):
    assert api(alice).post("/api/memory/dream", {"session_id": CHAT}, format="json").status_code == 403
    bad = api(svc).post("/api/memory/dream", {"session_id": "not a key"}, format="json")
    assert bad.status_code == 400
    assert not BackgroundJob.objects.exists()


def test_a_limited_tokens_job_acts_within_its_reach_and_not_after_revocation(api, svc, alice, bob):
    ChatBindingFactory(chat_key=CHAT, user=alice)
    token, key = token_issue(user=svc, only_users=["alice"])
    client = api()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    # Outside its reach: refused at once, nothing queued.
    ChatBindingFactory(chat_key="milky:private:20002", user=bob)
    outside = client.post("/api/memory/dream", {"session_id": "milky:private:20002"}, format="json")
    assert outside.status_code == 404
    response = client.post("/api/memory/dream", {"session_id": CHAT}, format="json")
    assert response.status_code == 202
    job = BackgroundJob.objects.get()
    assert job.limited_token_id == token.pk
    token_revoke(actor=svc, token_id=token.pk)
    jobs.jobs_run_pending(worker_id="w")
    job.refresh_from_db()
    assert (job.status, job.error["code"]) == (JobStatus.FAILED, "token_not_active")


def test_memory_worker_runs_queued_jobs_and_beats(alice, project):
    enable(alice)
    run = finished_run(user=alice, project=project)
    AgentRun.objects.filter(pk=run.pk).update(auto_memory_generate=False)  # the sweep skips it
    job = jobs.job_enqueue(kind="test_boom", user=alice)
    call_command("memory_worker", "--once", "--worker-id", "w-once")
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert WorkerHeartbeat.objects.filter(pk="w-once").exists()


@pytest.mark.django_db(transaction=True)
def test_without_a_worker_the_process_runs_its_job_after_the_commit(api, alice, settings):
    settings.JOBS_IN_PROCESS = True
    client = api(alice)
    url = client.post(RUN_URL).json()["status_url"]
    deadline = time.monotonic() + 30
    while client.get(url).json()["status"] != "done":
        assert time.monotonic() < deadline, client.get(url).json()
        time.sleep(0.05)
