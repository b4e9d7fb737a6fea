"""``PlannedListSerializer``: a list gives, item for item, what the serializer itself gives for
each item (DRF's own ``to_representation``), for the product's list outputs and for the field
shapes the plan reads differently."""

import datetime
import random
from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework import serializers

from config.api.output import PlannedListSerializer
from memory_app.automemory.models import AutoMemorySettings
from memory_app.memories import selectors as memory_selectors
from memory_app.memories.api import MemoryOutput
from memory_app.runs import selectors as run_selectors
from memory_app.runs.api import RUN_LIST_TEXT_BYTES, RunListOutput
from memory_app.runs.models import RunStatus
from memory_app.threads import selectors as thread_selectors
from memory_app.threads.api import ConversationOutput
from tests.factories import AgentRunFactory, ConversationFactory, ProjectFactory, UserMemoryFactory

User = get_user_model()
ZONES = ["UTC", "Asia/Shanghai", "America/St_Johns"]  # +00:00 becomes Z; a half-hour offset


def _same_as_drf(serializer_class, items):
    listed = serializer_class(items, many=True).data
    assert isinstance(serializer_class(many=True), PlannedListSerializer)
    one_by_one = [serializer_class().to_representation(item) for item in items]  # DRF's list, item by item
    assert [dict(row) for row in listed] == [dict(row) for row in one_by_one]
    assert [list(row) for row in listed] == [list(row) for row in one_by_one]  # same key order
    return listed


@pytest.mark.django_db
@pytest.mark.parametrize("zone", ZONES)
def test_memories_conversations_and_runs_list_as_their_serializer_outputs_them(alice, zone):
    rng = random.Random(7)
    project = ProjectFactory()
    older = UserMemoryFactory(owner=alice, metadata={"k": [1, "ü"]}, evidence={})
    newer = UserMemoryFactory(owner=alice, content="replaced 中文", source_thread_id="t-1")
    older.superseded_by = newer
    older.status = "superseded"
    older.save()
    for _ in range(5):
        UserMemoryFactory(owner=alice, metadata={"n": rng.random()})
    ConversationFactory(owner=alice, project=project, title="with project", session_key="milky:private:1")
    ConversationFactory(owner=alice, title="", no_memory=True)
    AgentRunFactory(user=alice, prompt="p" * (RUN_LIST_TEXT_BYTES + 10), goal=None)
    AgentRunFactory(
        user=alice,
        prompt="短" * 50,
        goal="g",
        status=RunStatus.RUNNING,
        lease_expires_at=timezone.now() + datetime.timedelta(minutes=5),
        started_at=timezone.now().replace(microsecond=0),
        usage={"tokens": 3},
    )
    AgentRunFactory(user=alice, status=RunStatus.RUNNING, lease_expires_at=timezone.now() - datetime.timedelta(1))

    with timezone.override(zone):
        memories = _same_as_drf(MemoryOutput, list(memory_selectors.user_memories(user=alice)))
        conversations = _same_as_drf(ConversationOutput, list(thread_selectors.conversations_visible(user=alice)))
        runs = _same_as_drf(
            RunListOutput, list(run_selectors.runs_list(user=alice, text_chars=RUN_LIST_TEXT_BYTES + 1))
        )
    assert {m["superseded_by"] for m in memories} == {None, newer.pk}
    assert {c["project_id"] for c in conversations} == {None, project.pk}
    assert {r["lease_state"] for r in runs} == {"held", "expired", "released"}
    assert any(r["prompt_truncated"] for r in runs) and any(r["goal"] is None for r in runs)
    if zone == "UTC":
        assert all(m["created_at"].endswith("Z") for m in memories)
    else:
        assert not any(m["created_at"].endswith("Z") for m in memories)


class Shapes(serializers.Serializer):
    """Field shapes the plan handles, or hands back to the field."""

    plain = serializers.CharField()
    number = serializers.IntegerField()
    flag = serializers.BooleanField()
    choice = serializers.ChoiceField(choices=[("a", "A"), ("b", "B")])
    when = serializers.DateTimeField()
    when_formatted = serializers.DateTimeField(source="when", format="%Y-%m-%d %H:%M")
    when_in_zone = serializers.DateTimeField(
        source="when", default_timezone=datetime.timezone(datetime.timedelta(hours=5))
    )
    data = serializers.JSONField()
    data_binary = serializers.JSONField(source="data", binary=True)
    dotted = serializers.CharField(source="inner.name", allow_null=True)
    dotted_missing_default = serializers.CharField(source="missing.name", default="fallback")
    optional_missing = serializers.CharField(source="absent", required=False)
    called = serializers.CharField(source="describe")
    whole = serializers.CharField(source="*")
    computed = serializers.SerializerMethodField()

    class Meta:
        list_serializer_class = PlannedListSerializer

    def get_computed(self, item) -> str:
        return f"{item.plain}!"


def _item(i: int, *, inner=True, when=True):
    return SimpleNamespace(
        plain=f"text {i}",
        number=i,
        flag=bool(i % 2),
        choice="ab"[i % 2],
        when=datetime.datetime(2026, 1, 1 + i, 12, 30, tzinfo=datetime.UTC) if when else None,
        data={"i": i, "list": [None, "x"]} if i % 3 else None,
        inner=SimpleNamespace(name=f"inner {i}") if inner else None,
        missing=None,
        describe=lambda i=i: f"called {i}",
    )


def test_field_shapes_list_as_the_serializer_outputs_them():
    items = [_item(i) for i in range(4)] + [_item(5, inner=False), _item(6, when=False)]
    with timezone.override("Europe/Berlin"):
        listed = _same_as_drf(Shapes, items)
    assert listed[0]["called"] == "called 0" and "optional_missing" not in listed[0]
    assert listed[0]["dotted_missing_default"] == "fallback"
    assert listed[4]["dotted"] is None and listed[5]["when"] is None
    assert listed[0]["when_in_zone"].endswith("+05:00")
    assert listed[0]["when"] == "2026-01-01T13:30:00+01:00"


def test_a_missing_required_attribute_fails_as_it_does_for_one_item():
    item = _item(1)
    del item.plain
    with pytest.raises(AttributeError) as one:
        _ = Shapes(item).data
    with pytest.raises(AttributeError) as listed:
        _ = Shapes([item], many=True).data
    assert str(listed.value) == str(one.value)


class UserShapes(serializers.ModelSerializer):
    """Lookups of their own: a reverse one-to-one by its pk, a model field read whole, a
    property that returns a model instance."""

    settings = serializers.PrimaryKeyRelatedField(source="auto_memory_settings", read_only=True)
    name = serializers.ModelField(model_field=User._meta.get_field("username"), read_only=True)
    me = serializers.PrimaryKeyRelatedField(source="itself", read_only=True)
    note = serializers.SerializerMethodField()

    class Meta:
        model = User
        fields = ["id", "settings", "name", "me", "note"]
        list_serializer_class = PlannedListSerializer

    def get_note(self, user) -> str:
        return f"user {user.pk}"


@pytest.mark.django_db
def test_fields_with_a_lookup_of_their_own_list_as_the_serializer_outputs_them(alice, bob, monkeypatch):
    AutoMemorySettings.objects.create(user=bob)
    monkeypatch.setattr(User, "itself", property(lambda user: user), raising=False)
    users = list(User.objects.filter(pk__in=[alice.pk, bob.pk]).order_by("pk"))
    listed = _same_as_drf(UserShapes, users)
    assert [row["settings"] for row in listed] == [None, bob.auto_memory_settings.pk]
    assert [row["name"] for row in listed] == ["alice", "bob"]
    assert [row["me"] for row in listed] == [alice.pk, bob.pk]


class Sparse(serializers.Serializer):
    optional = serializers.CharField(required=False)
    note = serializers.SerializerMethodField()

    class Meta:
        list_serializer_class = PlannedListSerializer

    def get_note(self, item) -> str:
        return f"item {item.optional}"


def test_a_missing_item_lists_as_the_serializer_outputs_it():
    items = [None, SimpleNamespace(optional="x"), SimpleNamespace()]
    listed = _same_as_drf(Sparse, items[:2])
    assert listed == [{"note": None}, {"optional": "x", "note": "item x"}]
    with pytest.raises(AttributeError):
        _ = Sparse(items, many=True).data  # the method reads what is missing, as it would for one item
