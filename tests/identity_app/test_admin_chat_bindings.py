"""The chat-binding admin creates and deletes bindings through ``identity_app.chat_bindings``:
the same rules as the API (private chats only, one binding per chat, who may bind)."""

import pytest
from django.urls import reverse

from identity_app.models import ChatBinding
from tests.factories import ChatBindingFactory

pytestmark = pytest.mark.django_db

PRIVATE = "milky:private:10001"


def test_admin_binds_a_private_chat(client, admin, alice):
    client.force_login(admin)
    client.post(reverse("admin:identity_app_chatbinding_add"), {"chat_key": PRIVATE, "user": alice.pk})
    assert ChatBinding.objects.get(chat_key=PRIVATE).user == alice


@pytest.mark.parametrize("chat_key", ["milky:group:20002", "milky:10001", "not a key"])
def test_admin_cannot_bind_a_group_legacy_or_malformed_key(client, admin, alice, chat_key):
    client.force_login(admin)
    response = client.post(
        reverse("admin:identity_app_chatbinding_add"), {"chat_key": chat_key, "user": alice.pk}, follow=True
    )
    assert response.status_code == 200
    assert not ChatBinding.objects.exists()


def test_admin_cannot_bind_a_chat_twice(client, admin, alice, bob):
    ChatBindingFactory(chat_key=PRIVATE, user=alice)
    client.force_login(admin)
    client.post(reverse("admin:identity_app_chatbinding_add"), {"chat_key": PRIVATE, "user": bob.pk}, follow=True)
    assert list(ChatBinding.objects.values_list("user__username", flat=True)) == ["alice"]


def test_staff_without_the_binding_permission_cannot_bind(client, alice):
    from django.contrib.auth.models import Permission

    from config.errors import PermissionDenied
    from identity_app.chat_bindings import chat_binding_create
    from tests.factories import UserFactory

    staff = UserFactory(username="reviewer", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_chatbinding"))
    client.force_login(staff)
    # The admin refuses the page; the service refuses the call on its own as well.
    response = client.post(reverse("admin:identity_app_chatbinding_add"), {"chat_key": PRIVATE, "user": alice.pk})
    assert response.status_code == 403
    with pytest.raises(PermissionDenied):
        chat_binding_create(actor=staff, chat_key=PRIVATE, username="alice")
    assert not ChatBinding.objects.exists()


def test_staff_with_only_some_identity_permission_cannot_list_bindings(client, alice):
    from django.contrib.auth.models import Permission

    from tests.factories import UserFactory

    ChatBinding.objects.create(chat_key=PRIVATE, user=alice)
    staff = UserFactory(username="profiles", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_profile"))
    client.force_login(staff)
    assert client.get(reverse("admin:identity_app_chatbinding_changelist")).status_code == 403


def test_admin_delete_goes_through_the_service(client, admin, alice):
    binding = ChatBindingFactory(chat_key=PRIVATE, user=alice)
    client.force_login(admin)
    client.post(reverse("admin:identity_app_chatbinding_delete", args=[binding.pk]), {"post": "yes"})
    assert not ChatBinding.objects.exists()


def test_staff_without_any_permission_cannot_list_or_open_bindings(client, alice):
    from tests.factories import UserFactory

    binding = ChatBindingFactory(chat_key=PRIVATE, user=alice)
    client.force_login(UserFactory(username="bare-staff", is_staff=True))
    assert client.get(reverse("admin:identity_app_chatbinding_changelist")).status_code == 403
    assert client.get(reverse("admin:identity_app_chatbinding_change", args=[binding.pk])).status_code == 403
    assert b"milky:private" not in client.get(reverse("admin:index")).content


def test_staff_with_the_view_permission_reads_bindings_but_cannot_change_them(client, alice, bob):
    from django.contrib.auth.models import Permission

    from tests.factories import UserFactory

    binding = ChatBindingFactory(chat_key=PRIVATE, user=alice)
    staff = UserFactory(username="viewer-staff", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_chatbinding"))
    client.force_login(staff)
    listing = client.get(reverse("admin:identity_app_chatbinding_changelist"))
    assert listing.status_code == 200 and PRIVATE.encode() in listing.content
    detail = client.get(reverse("admin:identity_app_chatbinding_change", args=[binding.pk]))
    assert detail.status_code == 200 and b'name="_save"' not in detail.content  # read-only
    client.post(
        reverse("admin:identity_app_chatbinding_change", args=[binding.pk]), {"chat_key": PRIVATE, "user": bob.pk}
    )
    assert (
        client.post(reverse("admin:identity_app_chatbinding_delete", args=[binding.pk]), {"post": "yes"}).status_code
        == 403
    )
    assert client.get(reverse("admin:identity_app_chatbinding_add")).status_code == 403
    assert list(ChatBinding.objects.values_list("chat_key", "user__username")) == [(PRIVATE, "alice")]
