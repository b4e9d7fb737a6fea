"""Personas: alice (owner of a project), bob (shares it, as member), mallory (no access),
svc (service principal), admin (staff). ``api(user)`` returns a client with that user's token."""

import pytest
from django.db import connection
from rest_framework.test import APIClient

from identity_app.models import Role
from identity_app.services import token_issue, user_grant_service
from tests.factories import MembershipFactory, ProjectFactory, UserFactory


def pytest_collection_modifyitems(config, items):
    """PostgreSQL-only tests are deselected (not skipped) when the suite runs on SQLite."""
    import os

    if os.environ.get("DATABASE_URL"):
        return
    keep, drop = [], []
    for item in items:
        (drop if item.get_closest_marker("postgres_only") else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture
def is_postgres():
    return connection.vendor == "postgresql"


@pytest.fixture
def alice(db):
    return UserFactory(username="alice")


@pytest.fixture
def bob(db):
    return UserFactory(username="bob")


@pytest.fixture
def mallory(db):
    return UserFactory(username="mallory")


@pytest.fixture
def svc(db):
    user = UserFactory(username="svc")
    user_grant_service(user=user)
    return user


@pytest.fixture
def admin(db):
    return UserFactory(username="admin", is_staff=True, is_superuser=True)


@pytest.fixture
def project(alice, bob):
    project = ProjectFactory(name="Apollo")
    MembershipFactory(project=project, user=alice, role=Role.OWNER)
    MembershipFactory(project=project, user=bob, role=Role.MEMBER)
    return project


class TokenClient(APIClient):
    def __init__(self, user, key):
        super().__init__()
        self.user = user
        self.key = key
        self.credentials(HTTP_AUTHORIZATION=f"Token {key}")


@pytest.fixture
def api(db):
    def make(user=None):
        if user is None:
            return APIClient()
        _, key = token_issue(user=user)
        return TokenClient(user, key)

    return make
