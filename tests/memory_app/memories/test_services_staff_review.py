"""The admin's staff review path of the memory services (``staff_review=True``)."""

import pytest
from django.contrib.auth.models import Permission

from config.errors import NotFound, PermissionDenied
from memory_app.memories import services
from memory_app.memories.models import Memory, Status
from tests.factories import (
    ChatMemoryFactory,
    GlobalMemoryFactory,
    ProjectMemoryFactory,
    UserFactory,
    UserMemoryFactory,
)

pytestmark = pytest.mark.django_db


def snapshot():
    return sorted(Memory.objects.values_list("id", "status", "content", "superseded_by_id"))


@pytest.mark.parametrize("who", ["mallory", "plain_staff", "svc"])
def test_staff_review_is_refused_without_staff_and_change_permission(who, alice, mallory, svc):
    actor = {"mallory": mallory, "svc": svc, "plain_staff": UserFactory(username="plain", is_staff=True)}[who]
    memory = UserMemoryFactory(owner=alice)
    before = snapshot()
    with pytest.raises(PermissionDenied):
        services.memory_supersede(actor=actor, memory_id=memory.pk, content="taken over", staff_review=True)
    with pytest.raises(PermissionDenied):
        services.memory_forget(actor=actor, memory_id=memory.pk, staff_review=True)
    assert snapshot() == before


def test_staff_with_change_permission_reviews_every_tier(alice, project):
    reviewer = UserFactory(username="reviewer", is_staff=True)
    reviewer.user_permissions.add(Permission.objects.get(codename="change_memory"))
    rows = [
        UserMemoryFactory(owner=alice),
        ProjectMemoryFactory(project=project),
        ChatMemoryFactory(scope_id="milky:private:1", kind="task", content="chat row"),
        GlobalMemoryFactory(kind="procedure", content="global row"),
    ]
    for old in rows:
        new = services.memory_supersede(actor=reviewer, memory_id=old.pk, content="reviewed", staff_review=True)
        old.refresh_from_db()
        assert (old.status, old.superseded_by_id) == (Status.SUPERSEDED, new.pk)
        assert (new.scope_type, new.scope_id, new.owner_id, new.project_id) == (
            old.scope_type,
            old.scope_id,
            old.owner_id,
            old.project_id,
        )
        assert services.memory_forget(actor=reviewer, memory_id=new.pk, staff_review=True) == [new.pk, old.pk]
    assert not Memory.objects.exists()


def test_without_staff_review_the_tier_rule_still_applies_to_staff(admin, alice):
    memory = UserMemoryFactory(owner=alice)
    before = snapshot()
    with pytest.raises(NotFound):
        services.memory_supersede(actor=admin, memory_id=memory.pk, content="no")
    assert snapshot() == before
