"""Two real connections supersede the same row at the same time: exactly one wins."""

import threading

import pytest
from django.db import connection

from config.errors import Conflict
from memory_app.memories.models import Memory, Status
from memory_app.memories.services import memory_supersede
from tests.factories import UserFactory, UserMemoryFactory

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("attempt", range(3))
def test_concurrent_supersede_of_one_row_has_exactly_one_winner(attempt):
    alice = UserFactory(username="alice")
    memory = UserMemoryFactory(owner=alice, content="v1")
    barrier = threading.Barrier(2)
    results: dict[int, object] = {}

    def supersede(n):
        try:
            barrier.wait(timeout=10)
            results[n] = memory_supersede(actor=alice, memory_id=memory.pk, content=f"v2 from {n}")
        except Conflict as exc:
            results[n] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=supersede, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)

    winners = [r for r in results.values() if isinstance(r, Memory)]
    losers = [r for r in results.values() if isinstance(r, Conflict)]
    assert len(winners) == 1 and len(losers) == 1, results
    memory.refresh_from_db()
    assert memory.status == Status.SUPERSEDED and memory.superseded_by_id == winners[0].pk
    assert Memory.objects.count() == 2
    assert list(Memory.objects.filter(status=Status.ACTIVE).values_list("pk", flat=True)) == [winners[0].pk]
