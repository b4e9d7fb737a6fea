"""What an empty list says: how to start when there is nothing yet, "no match" only for a search
or filter, and who can read a user's memories, accurately (operators with the review permission
can, in the admin)."""

import pytest
from django.test import Client
from django.urls import reverse

from identity_app.models import Role
from tests.factories import MembershipFactory, ProjectFactory, UserMemoryFactory

pytestmark = pytest.mark.django_db


def _page(user, url, **query) -> str:
    client = Client()
    client.force_login(user)
    return client.get(url, query).content.decode()


def _mine() -> str:
    return reverse("web:memory_home_items") + "?source=user"


def test_a_new_users_empty_list_says_how_to_start(alice):
    html = _page(alice, _mine())
    assert "Nothing is remembered about you yet" in html and "No memories match." not in html


def test_a_search_without_results_says_no_match(alice):
    UserMemoryFactory(owner=alice, content="Prefers tea")
    html = _page(alice, reverse("web:memory_home_items"), source="user", q="zebra")
    assert "No memories match." in html and "Nothing is remembered about you yet" not in html
    assert "No memories match." in _page(alice, reverse("web:memory_home_items"), source="user", kind="decision")


def test_an_empty_project_says_how_to_start_to_those_who_may_write(alice, bob):
    project = ProjectFactory(name="Apollo")
    MembershipFactory(project=project, user=alice, role=Role.OWNER)
    MembershipFactory(project=project, user=bob, role=Role.VIEWER)
    url = reverse("web:memory_home_items") + f"?source=project:{project.pk}"
    assert "Write the first one above" in _page(alice, url)
    viewer = _page(bob, url)
    assert "This project has no memories yet." in viewer and "Write the first one above" not in viewer


def test_the_privacy_sentence_names_who_else_can_read(alice):
    html = _page(alice, _mine())
    assert "Only you can see these memories" not in html
    assert "No other user can see them" in html and "can read them in the admin" in html
