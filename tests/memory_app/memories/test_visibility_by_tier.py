"""The read rule asked for one tier is the whole rule narrowed to that tier, for every kind of
reader (the lists and the identity block ask for one tier; search and the services for all)."""

import pytest
from django.contrib.auth.models import AnonymousUser

from identity_app.permissions import token_reach_attach
from identity_app.services import token_issue, user_grant_service
from memory_app.memories.models import Memory, Tier
from memory_app.memories.selectors import memories_visible, memory_visibility_q
from tests.factories import (
    ChatBindingFactory,
    ChatMemoryFactory,
    GlobalMemoryFactory,
    MembershipFactory,
    ProjectFactory,
    ProjectMemoryFactory,
    UserFactory,
    UserMemoryFactory,
)

pytestmark = pytest.mark.django_db


def test_each_tier_alone_is_the_whole_rule_narrowed_to_it(alice, bob, svc, admin, project):
    outsider_project = ProjectFactory()
    carol = UserFactory(username="carol")
    MembershipFactory(project=outsider_project, user=carol)
    for owner in (alice, bob, svc, carol):
        UserMemoryFactory(owner=owner)
    ProjectMemoryFactory(project=project)
    ProjectMemoryFactory(project=outsider_project)
    ChatBindingFactory(chat_key="milky:private:1", user=alice)
    ChatMemoryFactory(scope_id="milky:private:1")
    ChatMemoryFactory(scope_id="milky:private:2")
    GlobalMemoryFactory()
    limited_svc = UserFactory(username="svc-limited")
    user_grant_service(user=limited_svc)
    token, _ = token_issue(user=limited_svc, only_users=["alice"], only_projects=[project.pk])
    token_reach_attach(limited_svc, token)

    readers = {
        "alice": alice,
        "bob": bob,
        "carol": carol,
        "svc": svc,
        "svc with a limited token": limited_svc,
        "admin": admin,
        "anonymous": AnonymousUser(),
    }
    for name, reader in readers.items():
        whole = set(Memory.objects.filter(memory_visibility_q(user=reader)).values_list("pk", flat=True))
        by_tier = set()
        for tier in Tier.values:
            expected = set(
                Memory.objects.filter(memory_visibility_q(user=reader), scope_type=tier).values_list("pk", flat=True)
            )
            alone = set(Memory.objects.filter(memory_visibility_q(user=reader, tier=tier)).values_list("pk", flat=True))
            assert alone == expected, (name, tier)
            assert set(memories_visible(user=reader, tier=tier).values_list("pk", flat=True)) == expected, (name, tier)
            by_tier |= alone
        assert by_tier == whole, name
    mine = set(memories_visible(user=alice, tier=Tier.USER).values_list("owner__username", flat=True))
    assert mine == {"alice"}
    assert not memories_visible(user=AnonymousUser(), tier=Tier.GLOBAL).exists()


def test_an_unknown_tier_is_an_error_not_everything(alice):
    with pytest.raises(ValueError):
        memory_visibility_q(user=alice, tier="everything")
