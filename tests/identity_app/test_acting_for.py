"""Whose own memories a key may reach (``may_act_for_user``, ``acting_for_users_q``,
``user_get_subject``): the user's own key; a service principal's for the users its token may act
for, never through a project limit; nobody else's. The rule and its filter form must agree."""

import pytest
from django.contrib.auth import get_user_model
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from config.errors import NotFound
from identity_app.authentication import ApiTokenAuthentication
from identity_app.permissions import acting_for_users_q, may_act_for_user
from identity_app.selectors import user_get_subject
from identity_app.services import token_issue, user_grant_service
from tests.factories import ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db


def authenticated(user, **limits):
    """The user as a request would carry it: with its token's reach attached."""
    _, key = token_issue(user=user, **limits)
    request = type("Request", (), {"META": {"HTTP_AUTHORIZATION": f"Token {key}"}})()
    found, _ = ApiTokenAuthentication().authenticate(request)
    return found


def reachable(actor) -> set[int]:
    return set(get_user_model().objects.filter(acting_for_users_q(actor, user_field="pk")).values_list("pk", flat=True))


def test_a_user_reaches_only_itself(alice, bob):
    actor = authenticated(alice)
    assert may_act_for_user(actor, alice.pk) and not may_act_for_user(actor, bob.pk)
    assert user_get_subject(actor=actor, username="alice") == alice
    with pytest.raises(NotFound) as refused:
        user_get_subject(actor=actor, username="bob")
    assert refused.value.code == "unknown_user"


def test_an_unlimited_service_reaches_every_active_user(svc, alice, bob):
    actor = authenticated(svc)
    assert {alice.pk, bob.pk, svc.pk} <= reachable(actor)
    inactive = UserFactory(username="gone", is_active=False)
    with pytest.raises(NotFound):
        user_get_subject(actor=actor, username="gone")
    assert may_act_for_user(actor, inactive.pk)  # the rule is about reach; the selector refuses inactive users


def test_a_service_limited_to_users_reaches_them_only(svc, alice, bob):
    actor = authenticated(svc, only_users=["bob"])
    assert reachable(actor) == {bob.pk}
    assert may_act_for_user(actor, bob.pk) and not may_act_for_user(actor, alice.pk)
    with pytest.raises(NotFound):
        user_get_subject(actor=actor, username="alice")


def test_a_service_limited_to_projects_reaches_no_users_own_memories(svc, alice):
    actor = authenticated(svc, only_projects=[ProjectFactory().pk])
    assert not may_act_for_user(actor, alice.pk)
    assert reachable(actor) <= {svc.pk}


def test_nobody_unauthenticated(alice):
    from django.contrib.auth.models import AnonymousUser

    assert not may_act_for_user(AnonymousUser(), alice.pk)
    assert not get_user_model().objects.filter(acting_for_users_q(AnonymousUser(), user_field="pk")).exists()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    service=st.booleans(),
    users=st.one_of(st.none(), st.sets(st.sampled_from(["u1", "u2", "u3"]), min_size=1)),
    projects=st.booleans(),
)
def test_the_rule_and_its_filter_agree(db, service, users, projects):
    people = {name: get_user_model().objects.get_or_create(username=name)[0] for name in ("u1", "u2", "u3")}
    actor = UserFactory()  # a new one each example: its grant and limits are this example's only
    people["u0"] = actor
    if service:
        user_grant_service(user=actor)
    limits = {}
    if service and users is not None:
        limits["only_users"] = sorted(users)
    if service and projects:
        limits["only_projects"] = [ProjectFactory().pk]
    actor = authenticated(actor, **limits)
    expected = {user.pk for user in people.values() if may_act_for_user(actor, user.pk)}
    assert reachable(actor) & {u.pk for u in people.values()} == expected
