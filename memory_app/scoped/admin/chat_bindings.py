"""Admin of chat bindings (which chat belongs to which person)."""

from django.contrib import admin
from django.http import HttpRequest

from config.admin import ServiceModelAdmin
from config.http import signed_in_user
from identity_app.chat_bindings import chat_binding_create, chat_binding_delete
from identity_app.models import ChatBinding


@admin.register(ChatBinding)
class ChatBindingAdmin(ServiceModelAdmin):
    """Bindings are created and deleted through ``chat_bindings`` (who may bind, which chats)."""

    fields = ["chat_key", "user"]
    list_display = ["chat_key", "user", "created_at"]
    list_select_related = ["user"]
    search_fields = ["chat_key", "user__username"]
    raw_id_fields = ["user"]

    def has_change_permission(self, request: HttpRequest, obj=None):
        # A binding is created or deleted, never edited; the list needs the permission itself.
        return obj is None and super().has_change_permission(request)

    def save_model(self, request: HttpRequest, obj, form, change):
        binding = chat_binding_create(actor=signed_in_user(request), chat_key=obj.chat_key, username=obj.user.username)
        obj.pk, obj.chat_key, obj.created_at = binding.pk, binding.chat_key, binding.created_at

    def delete_model(self, request: HttpRequest, obj):
        chat_binding_delete(actor=signed_in_user(request), binding_id=obj.pk)
