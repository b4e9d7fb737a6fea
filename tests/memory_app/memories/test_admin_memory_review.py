"""Memory review in the admin: the list reads content first, the page of one memory shows its
correction chain and the actions, and only staff holding the permission may use them."""

import re
from datetime import timedelta

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from memory_app.memories import services
from memory_app.memories.models import Memory, Status
from memory_app.search.models import SearchDocument
from tests.factories import (
    ChatMemoryFactory,
    GlobalMemoryFactory,
    ProjectMemoryFactory,
    UserFactory,
    UserMemoryFactory,
)

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:memory_app_memory_changelist")


def change_url(memory) -> str:
    return reverse("admin:memory_app_memory_change", args=[quote(memory.pk)])


def snapshot():
    return sorted(Memory.objects.values_list("id", "status", "content", "superseded_by_id"))


def staff_with(client, *codenames, username="operator"):
    user = UserFactory(username=username, is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    client.force_login(user)
    return user


@pytest.fixture
def chain(admin, alice):
    """alice's memory corrected twice: v1 → v2 → v3 (v3 active)."""
    v1 = UserMemoryFactory(owner=alice, content="Lives in Oslo")
    v2 = services.memory_supersede(actor=admin, memory_id=v1.pk, content="Lives in Bergen", staff_review=True)
    v3 = services.memory_supersede(actor=admin, memory_id=v2.pk, content="Lives in Tromsø", staff_review=True)
    return [Memory.objects.get(pk=m.pk) for m in (v1, v2, v3)]


def test_the_list_shows_the_content_first_as_the_link(client, admin, alice, project):
    client.force_login(admin)
    memory = UserMemoryFactory(owner=alice, content="Prefers window seats on long flights")
    text = client.get(CHANGELIST).text
    header = re.search(r"<thead>.*?</thead>", text, re.S).group(0)
    columns = re.findall(r'class="[^"]*column-(\w+)', header)
    assert columns[:2] == ["preview", "scope_type"], columns  # after the selection box
    assert (
        columns.index("scope") < columns.index("status_words") < columns.index("origin") < columns.index("created_at")
    )
    # Whose: a user's memory names the user, not their id; the status says paused and expired.
    scope = re.search(rf'<tr>.*?{memory.pk}.*?<td class="field-scope">([^<]+)</td>', text, re.S).group(1)
    assert scope == "alice"
    first_cell = re.search(r'<th class="field-preview"><a href="([^"]+)">([^<]+)</a>', text)
    assert first_cell and first_cell.group(1).endswith(change_url(memory)) and "window seats" in first_cell.group(2)
    assert "css/admin-memory.css" in text
    assert "created_at__gte" in text  # the date filter beside tier, kind, status and origin
    assert "paused__exact" in text
    # The list gets the page's width: no navigation sidebar beside the filter panel.
    assert 'id="nav-sidebar"' not in text and 'id="changelist-filter"' in text


def test_the_list_says_paused_and_expired_in_the_status(client, admin, alice):
    client.force_login(admin)
    paused = UserMemoryFactory(owner=alice, content="Paused one", paused=True)
    expired = UserMemoryFactory(owner=alice, content="Old one", expires_at=timezone.now() - timedelta(days=1))
    text = client.get(CHANGELIST).text
    for memory, words in ((paused, "Active, paused"), (expired, "Active, expired")):
        cell = re.search(rf'{memory.pk}.*?<td class="field-status_words">([^<]+)</td>', text, re.S).group(1)
        assert cell == words


def test_the_list_reads_every_tier_in_a_fixed_number_of_queries(client, admin, project, django_assert_num_queries):
    client.force_login(admin)

    def rows(n):
        for i in range(n):
            UserMemoryFactory(owner=UserFactory(), content=f"user fact {i}")
            ProjectMemoryFactory(project=project, content=f"project decision {i}")
            ChatMemoryFactory(content=f"chat item {i}")
            GlobalMemoryFactory(content=f"global procedure {i}")

    rows(1)
    with CaptureQueriesContext(connection) as few:
        assert client.get(CHANGELIST, {"q": "i"}).status_code == 200
    rows(20)
    with django_assert_num_queries(len(few.captured_queries)):
        response = client.get(CHANGELIST, {"q": "i"})
    assert "Apollo" in response.text  # the scope column names the project (selected with the row)


def test_the_page_of_a_memory_links_every_version_of_its_chain(client, admin, chain):
    client.force_login(admin)
    v1, v2, v3 = chain
    page = client.get(change_url(v2))
    assert page.status_code == 200
    section = page.text[page.text.index('id="correction-chain"') :]
    assert f'href="{change_url(v1)}"' in section and f'href="{change_url(v3)}"' in section
    assert f'href="{change_url(v2)}"' not in section  # this one is named, not linked
    assert section.index("Lives in Oslo") < section.index("Lives in Bergen") < section.index("Lives in Tromsø")
    # A superseded version can be forgotten but not corrected; the active one offers both.
    assert 'value="forget_memories"' in page.text and 'value="supersede_memories"' not in page.text
    active = client.get(change_url(v3)).text
    assert 'value="forget_memories"' in active and 'value="supersede_memories"' in active


def test_correct_from_the_page_confirms_then_supersedes_through_the_service(client, admin, alice):
    client.force_login(admin)
    memory = UserMemoryFactory(owner=alice, content="Drinks coffee")
    form = client.post(CHANGELIST, {"action": "supersede_memories", ACTION_CHECKBOX_NAME: [memory.pk]})
    assert form.status_code == 200 and f'name="content_{memory.pk}"' in form.text
    assert snapshot() == [(memory.pk, "active", "Drinks coffee", None)]
    client.post(
        CHANGELIST,
        {
            "action": "supersede_memories",
            ACTION_CHECKBOX_NAME: [memory.pk],
            "apply": "1",
            f"content_{memory.pk}": "Drinks tea",
        },
    )
    new = Memory.objects.get(status=Status.ACTIVE)
    assert (new.content, new.owner, new.created_by) == ("Drinks tea", alice, admin)
    assert Memory.objects.get(pk=memory.pk).superseded_by_id == new.pk
    assert set(SearchDocument.objects.filter(source="memory").values_list("ref", flat=True)) == {new.pk}


def test_forget_from_the_page_confirms_then_deletes_the_chain_and_its_search_entries(client, admin, chain, alice):
    client.force_login(admin)
    _v1, _v2, v3 = chain
    other = UserMemoryFactory(owner=alice, content="Has a cat")
    confirm = client.post(CHANGELIST, {"action": "forget_memories", ACTION_CHECKBOX_NAME: [v3.pk]})
    assert confirm.status_code == 200 and "Lives in Tromsø" in confirm.text and "Yes, forget" in confirm.text
    assert Memory.objects.count() == 4
    response = client.post(
        CHANGELIST, {"action": "forget_memories", ACTION_CHECKBOX_NAME: [v3.pk], "apply": "1"}, follow=True
    )
    assert "Forgot 3 memories." in response.text
    assert list(Memory.objects.values_list("pk", flat=True)) == [other.pk]
    assert set(SearchDocument.objects.filter(source="memory").values_list("ref", flat=True)) == {other.pk}


def test_staff_who_may_only_read_see_no_actions_and_change_nothing(client, alice, chain):
    staff_with(client, "view_memory")
    v3 = chain[-1]
    page = client.get(change_url(v3))
    assert page.status_code == 200 and "Lives in Tromsø" in page.text and 'id="correction-chain"' in page.text
    assert 'value="forget_memories"' not in page.text and 'value="supersede_memories"' not in page.text
    before = snapshot()
    # The actions are not offered to them: a forged submission is refused and changes nothing.
    for action in ("forget_memories", "supersede_memories"):
        response = client.post(
            CHANGELIST,
            {"action": action, ACTION_CHECKBOX_NAME: [v3.pk], "apply": "1", f"content_{v3.pk}": "Lives in Paris"},
        )
        assert "Yes, forget" not in response.text and f'name="content_{v3.pk}"' not in response.text
    assert snapshot() == before
    assert SearchDocument.objects.filter(source="memory", ref=v3.pk).exists()


def test_staff_without_the_permission_cannot_read_a_memory(client, alice):
    staff_with(client, "view_project", username="helpdesk")
    memory = UserMemoryFactory(owner=alice, content="Private thing")
    before = snapshot()
    assert client.get(CHANGELIST).status_code == 403
    assert client.get(change_url(memory)).status_code == 403
    response = client.post(CHANGELIST, {"action": "forget_memories", ACTION_CHECKBOX_NAME: [memory.pk], "apply": "1"})
    assert response.status_code == 403
    assert snapshot() == before


def test_the_privacy_sentence_names_who_else_reads_and_that_is_who_the_admin_lets_in(client, alice):
    client.force_login(alice)
    UserMemoryFactory(owner=alice, content="Private thing")
    page = client.get(reverse("web:memory_home_items"), {"source": "user"}, HTTP_ACCEPT_LANGUAGE="en").text
    assert "No other user can see them; the site's operators who are allowed to review memories" in page
    for codename, status in (("view_memory", 200), ("change_memory", 200), ("view_memorycandidate", 403)):
        staff_with(client, codename, username=f"op_{codename}")
        assert client.get(CHANGELIST).status_code == status, codename


def test_the_review_page_speaks_chinese_too(client, admin, chain):
    client.force_login(admin)
    page = client.get(change_url(chain[1]), HTTP_ACCEPT_LANGUAGE="zh-CN").text
    assert "更正链（最早的在前）" in page and "遗忘…" in page and "本条记忆" in page
