"""Migration 0009 indexes the memories and history messages of a database that predates the
retrieval engine, with the rows of its own schema (the code it runs is frozen in it)."""

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = ("memory_app", "0008_rename_active_successor_constraint")
ENGINE = ("memory_app", "0009_search_engine")


def _migrate(target):
    executor = MigrationExecutor(connection)
    executor.migrate([target])
    executor.loader.build_graph()
    return executor.loader.project_state([target]).apps


@pytest.mark.django_db(transaction=True)
def test_0009_indexes_the_rows_written_before_the_engine():
    apps = _migrate(BEFORE)
    user = apps.get_model("auth", "User").objects.create(username="before-0009")
    Memory = apps.get_model("memory_app", "Memory")
    mine = {"owner": user, "scope_type": "user", "scope_id": str(user.pk), "kind": "fact"}
    Memory.objects.create(id="mem_active", content="Our cat is called Mochi", **mine)
    Memory.objects.create(id="mem_archived", content="An old fact", status="archived", **mine)
    Conversation = apps.get_model("memory_app", "Conversation")
    main = Conversation.objects.create(id="thr_main", owner=user)
    helper = Conversation.objects.create(id="thr_helper", owner=user, source="subagent")
    Message = apps.get_model("memory_app", "Message")
    said = Message.objects.create(conversation=main, role="user", content="Which cat is ours?")
    Message.objects.create(conversation=main, role="tool", content="tool output")
    Message.objects.create(conversation=main, role="assistant", content="   ")
    Message.objects.create(conversation=helper, role="user", content="a helper task")
    try:
        _migrate(ENGINE)
        # The engine writes through the running code's models, whose table has columns added
        # after 0009 (0023: recipe): 0009 leaves the rows to the migration that adds them. To
        # the last migration: one that adds a column to the engine's tables must index them.
        [latest] = MigrationExecutor(connection).loader.graph.leaf_nodes("memory_app")
        apps = _migrate(latest)
        indexed = {
            (doc.source, doc.ref, doc.scope.key)
            for doc in apps.get_model("memory_app", "SearchDocument").objects.select_related("scope")
        }
        assert indexed == {("memory", "mem_active", f"user:{user.pk}"), ("message", str(said.pk), f"history:{user.pk}")}
    finally:
        call_command("migrate", verbosity=0)  # back to the latest
