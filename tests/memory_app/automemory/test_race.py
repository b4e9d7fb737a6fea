"""Two workers with their own connections race over the same runs: each run is processed once."""

import threading
from collections import Counter

import pytest
from django.db import connection

from identity_app.models import Role
from memory_app.automemory.models import AutoMemoryClaim, AutoMemoryLogEntry
from memory_app.automemory.worker import round_run
from memory_app.memories.models import Memory
from memory_app.runs.models import AgentRun
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.memory_app.automemory.helpers import enable, finished_run

RUNS = 40


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_two_workers_process_each_run_exactly_once():
    user = UserFactory(username="racer")
    project = ProjectFactory()
    MembershipFactory(project=project, user=user, role=Role.OWNER)
    enable(user, min_length_chars=10)
    runs = [
        finished_run(user=user, project=project, text=f"We decided to use engine-{i} for service-{i}.")
        for i in range(RUNS)
    ]
    barrier = threading.Barrier(2)
    outcomes: dict[str, list] = {"a": [], "b": []}
    errors = []

    def work(name):
        try:
            barrier.wait()
            while True:
                results = round_run(worker_id=name, limit=3)
                if not results:
                    break
                outcomes[name] += [(r.run_id, r.outcome) for r in results]
        except Exception as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(name,)) for name in outcomes]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    extracted = Counter(run_id for name in outcomes for run_id, outcome in outcomes[name] if outcome == "extracted")
    assert extracted == Counter({run.pk: 1 for run in runs})
    assert outcomes["a"] and outcomes["b"], "both workers should have taken part"
    assert Memory.objects.filter(project=project).count() == RUNS
    assert Counter(AutoMemoryLogEntry.objects.values_list("run_ref", flat=True)) == Counter({r.pk: 1 for r in runs})
    assert not AgentRun.objects.filter(auto_memory_processed_at__isnull=True).exists()
    assert not AutoMemoryClaim.objects.exists()


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_run_locked_by_another_worker_is_skipped_not_waited_for():
    from django.db import transaction

    user = UserFactory(username="locker")
    project = ProjectFactory()
    MembershipFactory(project=project, user=user, role=Role.OWNER)
    enable(user, min_length_chars=10)
    locked = finished_run(user=user, project=project, text="We use Redis for caching.")
    free = finished_run(user=user, project=project, text="We use Kafka for events.")
    holding, done = threading.Event(), threading.Event()

    def hold_lock():
        try:
            with transaction.atomic():
                AgentRun.objects.select_for_update().get(pk=locked.pk)
                holding.set()
                done.wait(10)  # if the round waited for this lock, it would only see the run after this
        finally:
            connection.close()

    thread = threading.Thread(target=hold_lock)
    thread.start()
    assert holding.wait(10)
    try:
        results = round_run(worker_id="other", limit=10)
    finally:
        done.set()
        thread.join(20)
    assert [(r.run_id, r.outcome) for r in results] == [(free.pk, "extracted")]
    locked.refresh_from_db()
    assert locked.auto_memory_processed_at is None
    assert [(r.run_id, r.outcome) for r in round_run(worker_id="other", limit=10)] == [(locked.pk, "extracted")]
