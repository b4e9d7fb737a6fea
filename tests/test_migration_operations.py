"""``config.migration_operations.AlterFieldsOfOneModel``: the same state as its ``AlterField``
operations one by one, their database work (none, for memory_app 0022's labels), one reload."""

import pytest
from django.db import connection, migrations, models
from django.db.migrations.loader import MigrationLoader

from config.migration_operations import AlterFieldsOfOneModel

RELABELLED = ("memory_app", "0022_verbose_names")


def one_by_one(operations):
    for operation in operations:
        if isinstance(operation, AlterFieldsOfOneModel):
            yield from operation.operations
        else:
            yield operation


def described(state):
    """Every model of ``state``: its options and fields as written, and, rendered, each relation's
    target and whether it is the class of that model in this rendering (Django leaves some from
    before a reload: the same ones either way)."""
    apps = state.apps
    models_ = {}
    for key, model_state in sorted(state.models.items()):
        model = apps.get_model(*key)
        relations = sorted(  # a list: hidden reverse relations share the name "+"
            (
                field.name,
                field.related_model._meta.label,
                field.related_model is apps.get_model(field.related_model._meta.label),
            )
            for field in model._meta.get_fields(include_hidden=True)
            if field.is_relation and field.related_model is not None
        )
        models_[key] = (
            sorted(model_state.options.items(), key=str),
            {name: field.deconstruct()[1:] for name, field in model_state.fields.items()},
            relations,
            {f.name: str(f.verbose_name) for f in model._meta.fields},
        )
    return models_


@pytest.fixture(scope="module")
def relabelling():
    loader = MigrationLoader(None, ignore_no_migrations=True)
    return loader.project_state(RELABELLED, at_end=False), loader.graph.nodes[RELABELLED]


def test_the_state_is_that_of_the_alter_fields_one_by_one(relabelling):
    """With the models rendered, as in ``migrate`` once a ``RunPython`` has rendered them: there
    the reloads happen (unrendered, a state only holds the fields)."""
    before, migration = relabelling
    assert any(isinstance(op, AlterFieldsOfOneModel) for op in migration.operations)
    together, alone = before.clone(), before.clone()
    together.apps  # noqa: B018
    alone.apps  # noqa: B018
    for operation in migration.operations:
        operation.state_forwards("memory_app", together)
    for operation in one_by_one(migration.operations):
        operation.state_forwards("memory_app", alone)
    assert described(together) == described(alone) != described(before)  # the labels did change


def collected(operation, before, after):
    """The SQL of ``operation`` forwards then backwards (SQLite's schema editor needs its foreign
    key checks off, which it cannot turn off inside a test's transaction: hence transaction=True)."""
    with connection.schema_editor(collect_sql=True, atomic=False) as editor:
        operation.database_forwards("memory_app", editor, before, after)
        operation.database_backwards("memory_app", editor, after, before)
    return editor.collected_sql


@pytest.mark.django_db(transaction=True)
def test_the_database_work_is_each_alter_fields_and_none_for_labels(relabelling):
    before, migration = relabelling
    after = before.clone()
    for operation in migration.operations:
        operation.state_forwards("memory_app", after)
    batches = [op for op in migration.operations if isinstance(op, AlterFieldsOfOneModel)]
    assert all(collected(batch, before, after) == [] for batch in batches)
    # A changed column: as AlterField changes it, forwards and backwards.
    longer = migrations.AlterField("memory", "kind", models.CharField(max_length=77))
    batch = AlterFieldsOfOneModel("memory", [longer])
    after, expected_after = before.clone(), before.clone()
    batch.state_forwards("memory_app", after)
    longer.state_forwards("memory_app", expected_after)
    sql = collected(batch, before, after)
    assert sql and sql == collected(longer, before, expected_after), sql


def test_it_takes_alter_fields_of_its_model_only():
    field = models.CharField(max_length=10)
    with pytest.raises(ValueError):
        AlterFieldsOfOneModel("memory", [])
    with pytest.raises(ValueError):
        AlterFieldsOfOneModel("memory", [migrations.AlterField("conversation", "title", field)])
    with pytest.raises(ValueError):
        AlterFieldsOfOneModel("memory", [migrations.AddField("memory", "extra", field)])
    batch = AlterFieldsOfOneModel("Memory", [migrations.AlterField("memory", "kind", field)])
    name, args, kwargs = batch.deconstruct()
    assert name == "AlterFieldsOfOneModel" and AlterFieldsOfOneModel(*args, **kwargs).operations == batch.operations
