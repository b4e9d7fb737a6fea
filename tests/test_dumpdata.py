"""``manage.py dumpdata`` and ``loaddata`` on every database: every model matches its table
(the pgvector ``vec`` column is named by no model, memory_app/search/models.py), so a dump reads
every row of every model, and loading it into an emptied database gives back the same rows.
On PostgreSQL with pgvector the ``vec`` copies are refilled from the loaded vectors
(tests/memory_app/search/test_pgvector.py)."""

import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from memory_app.home.search import home_search
from memory_app.memories import services
from memory_app.memories.models import Memory
from memory_app.reads.models import ItemKind, MemoryRead, ReadPath
from memory_app.search.models import SearchDocument
from memory_app.threads import services as thread_services
from tests.factories import ChatBindingFactory

# Rows keep their ids (scope keys such as "user:7" name them); content types and permissions,
# which the emptied database makes again, are named by their natural keys.
ROUND_TRIP = ("--natural-foreign", "--exclude", "contenttypes", "--exclude", "auth.permission")


def dump(*args) -> str:
    """The dump, its times written alike: Django's JSON writes a time to the millisecond, so one
    whose microseconds are below 1,000 is dumped as "…:52.000Z" and, loaded, dumped again as
    "…:52Z", the same instant."""
    out = io.StringIO()
    call_command("dumpdata", *args, "--indent", "1", stdout=out)
    return WHOLE_SECOND.sub(r"\1\2", out.getvalue())


WHOLE_SECOND = re.compile(r'(T\d\d:\d\d:\d\d)\.000(Z|[+-]\d\d:\d\d)(?=")')


def some_of_everything(alice, svc, project) -> Memory:
    mine = services.memory_create(actor=alice, tier="user", kind="fact", content="Our cat is called Mochi")
    services.memory_supersede(actor=alice, memory_id=mine.pk, content="Our cat is called Mochi, a tabby")
    services.memory_create(actor=alice, tier="project", project_id=project.pk, kind="decision", content="Use Redis 7")
    ChatBindingFactory(chat_key="milky:private:10001", user=alice)
    services.memory_create(actor=svc, tier="chat", scope_id="milky:private:10001", kind="fact", content="Likes tea")
    conversation = thread_services.conversation_create(actor=svc, username="alice", title="Trip")
    thread_services.message_create(actor=svc, conversation_id=conversation.pk, role="user", content="Lisbon in May")
    newest = Memory.objects.get(status="active", scope_type="user")
    MemoryRead.objects.create(item_kind=ItemKind.MEMORY, item_ref=newest.pk, path=ReadPath.API_SEARCH, user=alice)
    return newest


@pytest.mark.django_db(transaction=True)
def test_dumpdata_reads_every_model(alice, svc, project):
    some_of_everything(alice, svc, project)
    everything = dump()
    assert '"model": "memory_app.searchdocument"' in everything
    assert '"model": "memory_app.memory"' in everything
    assert "Our cat is called Mochi, a tabby" in everything


@pytest.mark.django_db(transaction=True)
def test_dumpdata_then_loaddata_into_an_emptied_database_gives_back_the_same_rows(alice, svc, project, tmp_path):
    memory = some_of_everything(alice, svc, project)
    # A time whose microseconds are below 1,000 (dumped as "….000Z", loaded as a whole second).
    Memory.objects.filter(pk=memory.pk).update(created_at=memory.created_at.replace(microsecond=500))
    before = dump(*ROUND_TRIP)
    assert ".000Z" not in before
    documents = SearchDocument.objects.count()
    assert documents >= 4
    call_command("flush", "--noinput", verbosity=0)
    assert not Memory.objects.exists() and not SearchDocument.objects.exists()
    path = tmp_path / "dump.json"
    path.write_text(before, encoding="utf-8")
    call_command("loaddata", str(path), verbosity=0)
    assert dump(*ROUND_TRIP) == before
    assert SearchDocument.objects.count() == documents
    # The loaded rows serve: the memory is found again by its words.
    owner = get_user_model().objects.get(username="alice")
    assert [hit.memory.pk for hit in home_search(user=owner, query="cat Mochi").hits][:1] == [memory.pk]
