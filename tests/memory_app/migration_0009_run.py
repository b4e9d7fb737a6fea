"""Run by ``tests/memory_app/test_migration_0009.py`` in a process of its own, on an empty
database (``SQLITE_PATH`` or ``DATABASE_URL``), as ``manage.py migrate`` runs on a database that
predates the retrieval engine: migrates it to 0008, writes rows of that schema, migrates on to
the latest and prints, as the last line of JSON, what the engine indexed and the ids to expect."""

import json

import django
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = ("memory_app", "0008_rename_active_successor_constraint")
ENGINE = ("memory_app", "0009_search_engine")


def _migrate(target):
    executor = MigrationExecutor(connection)
    executor.migrate([target])
    executor.loader.build_graph()
    return executor.loader.project_state([target]).apps


def main() -> None:
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
    _migrate(ENGINE)
    # The engine writes through the running code's models, whose table has columns added after
    # 0009 (0023: recipe): 0009 leaves the rows to the migration that adds them. To the last
    # migration: one that adds a column to the engine's tables must index them.
    [latest] = MigrationExecutor(connection).loader.graph.leaf_nodes("memory_app")
    apps = _migrate(latest)
    indexed = sorted(
        [doc.source, doc.ref, doc.scope.key]
        for doc in apps.get_model("memory_app", "SearchDocument").objects.select_related("scope")
    )
    print(json.dumps({"indexed": indexed, "user": user.pk, "said": said.pk}))


if __name__ == "__main__":
    django.setup()
    main()
