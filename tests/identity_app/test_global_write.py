"""The one global-write rule (``identity_app.permissions.may_write_global``): staff holding
``identity_app.write_global_memories``, or a service principal with an unlimited token; an
operator's decision (an explicit global scope, the approval of a global candidate) is staff's
alone. Every path that writes a global item asks it, and refuses with the one message."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser, Permission

from config.errors import PermissionDenied
from identity_app.permissions import GLOBAL_WRITE_REFUSED, global_write_require, may_write_global, token_reach_attach
from identity_app.services import token_issue, user_grant_service
from memory_app.memories import services
from memory_app.memories.models import Memory
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _user(username: str, *perms: str, **fields):
    user = UserFactory(username=username, **fields)
    for perm in perms:
        app_label, codename = perm.split(".")
        user.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    return get_user_model().objects.get(pk=user.pk)  # no cached permissions


@pytest.fixture
def people(alice, svc, admin):
    limited = UserFactory(username="svc-limited")
    user_grant_service(user=limited)
    token, _ = token_issue(user=limited, only_users=["alice"])
    token_reach_attach(limited, token)
    return {
        "plain user": alice,
        "anonymous": AnonymousUser(),
        "staff without the permission": _user("staff", is_staff=True),
        "the permission without staff": _user("lead", "identity_app.write_global_memories"),
        "inactive staff with the permission": _user(
            "gone", "identity_app.write_global_memories", is_staff=True, is_active=False
        ),
        "staff with the permission": _user("ops", "identity_app.write_global_memories", is_staff=True),
        "superuser": admin,
        "service principal": svc,
        "service principal with a limited token": limited,
    }


# (may write global, may decide it as an operator)
EXPECTED = {
    "plain user": (False, False),
    "anonymous": (False, False),
    "staff without the permission": (False, False),
    "the permission without staff": (False, False),
    "inactive staff with the permission": (False, False),
    "staff with the permission": (True, True),
    "superuser": (True, True),
    "service principal": (True, False),
    "service principal with a limited token": (False, False),
}


def test_who_may_write_global_items(people):
    found = {name: (may_write_global(who), may_write_global(who, operator=True)) for name, who in people.items()}
    assert found == EXPECTED


def test_a_refusal_is_403_with_the_one_message(people):
    for name, who in people.items():
        for operator in (False, True):
            if EXPECTED[name][operator]:
                global_write_require(who, operator=operator)
                continue
            with pytest.raises(PermissionDenied) as refused:
                global_write_require(who, operator=operator)
            assert refused.value.message == GLOBAL_WRITE_REFUSED


def test_the_memory_service_writes_global_items_for_those_the_rule_allows(people):
    for name, who in people.items():
        if name == "anonymous":
            continue
        content = f"Deploys are on Tuesdays ({name})"
        if EXPECTED[name][0]:
            assert services.memory_create(actor=who, tier="global", kind="procedure", content=content).pk
            continue
        with pytest.raises(PermissionDenied) as refused:
            services.memory_create(actor=who, tier="global", kind="procedure", content=content)
        assert refused.value.message == GLOBAL_WRITE_REFUSED
    writers = {m.created_by.username for m in Memory.objects.filter(scope_type="global")}
    assert writers == {"ops", "admin", "svc"}


def test_correcting_a_global_item_takes_the_rule_too(people):
    item = services.memory_create(actor=people["superuser"], tier="global", kind="procedure", content="Use blue")
    for name in ("plain user", "staff without the permission", "service principal with a limited token"):
        with pytest.raises(PermissionDenied) as refused:
            services.memory_supersede(actor=people[name], memory_id=item.pk, content="Use red")
        assert refused.value.message == GLOBAL_WRITE_REFUSED
    newer = services.memory_supersede(actor=people["service principal"], memory_id=item.pk, content="Use red")
    assert newer.content == "Use red"


def test_an_explicit_global_scope_is_an_operators_decision(api, people):
    def post(who, content):
        body = {"content": content, "kind": "procedure", "scope_type": "global"}
        return api(who).post("/api/memory/items", body, format="json")

    for name in ("service principal", "staff without the permission", "plain user"):
        refused = post(people[name], f"Restart nightly ({name})")
        assert refused.status_code == 403, (name, refused.content)
        assert refused.json()["error"]["message"] == GLOBAL_WRITE_REFUSED
    allowed = post(people["staff with the permission"], "Restart nightly")
    assert allowed.status_code == 201, allowed.content
    assert list(Memory.objects.values_list("scope_type", "content")) == [("global", "Restart nightly")]
