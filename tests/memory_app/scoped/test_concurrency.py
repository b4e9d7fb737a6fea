import threading

import pytest
from django.db import connection

from memory_app.memories.models import Memory
from memory_app.scoped.services import scoped_item_create

A = "milky:private:10001"


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_concurrent_identical_items_are_written_once_per_scope(svc):
    barrier = threading.Barrier(6)
    results, errors = [], []

    def worker(session):
        try:
            barrier.wait()
            memory, created = scoped_item_create(
                actor=svc, session_id=session, kind="preference", content="I like figs"
            )
            results.append((memory.scope_id, memory.pk, created))
        except Exception as exc:
            errors.append(exc)
        finally:
            connection.close()

    sessions = [A, f"{A}:cron:1", f"{A}:cron:2", "milky:private:2", "milky:private:2", "milky:private:2:x:y"]
    threads = [threading.Thread(target=worker, args=(s,)) for s in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    assert sorted(Memory.objects.values_list("scope_id", flat=True)) == [A, "milky:private:2"]
    assert sum(1 for _, _, created in results if created) == 2
    assert len({pk for scope, pk, _ in results if scope == A}) == 1
