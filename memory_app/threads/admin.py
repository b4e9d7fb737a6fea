"""Admin of conversations and their messages: read-only, as agent runtimes write them."""

from django.contrib import admin

from config.admin import ReadOnlyAdmin
from memory_app.threads.models import Conversation, Message, ToolCall


@admin.register(Conversation)
class ConversationAdmin(ReadOnlyAdmin):
    list_display = ["id", "title", "owner", "source", "status", "parent", "updated_at"]
    list_filter = ["status", "source"]
    list_select_related = ["owner", "parent"]
    search_fields = ["id", "title", "owner__username", "session_key"]
    raw_id_fields = ["owner", "project", "parent"]


class ToolCallInline(admin.TabularInline):
    model = ToolCall
    fk_name = "message"
    fields = ("name", "status", "input", "output", "error")
    readonly_fields = fields
    extra = 0
    max_num = 0


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ["id", "conversation", "role", "type", "created_at"]
    list_filter = ["role", "type"]
    list_select_related = ["conversation"]
    search_fields = ["conversation__id", "content"]
    raw_id_fields = ["conversation", "run"]
    inlines = [ToolCallInline]
